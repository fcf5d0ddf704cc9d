// grpoRun: one ./grpo command (args, the words after ./grpo) in a fresh instance of grpo.c's
// WebAssembly module (wasmModule, compiled once; GRPO, emscripten's factory), with files
// ({path: text}) written into its in-memory file system first. Resolves to {rc, out, err, files}:
// the exit status, stdout and stderr as text, and the text of each path in read (null if absent).
// onTreeRun(objective, n, r_neg, seed, freq) receives each finished tree run (grpo.c's
// web_tree_run). The page's Web Worker and its node test (test_page.js) both run commands here.
function grpoRun(GRPO, wasmModule, args, files, read, onTreeRun) {
  var out = [], err = [];
  return GRPO({
    instantiateWasm: function (imports, done) {
      WebAssembly.instantiate(wasmModule, imports).then(function (inst) { done(inst, wasmModule); });
      return {};
    },
    print: function (s) { out.push(s); },
    printErr: function (s) { err.push(s); },
    quit: function (status, e) { throw e; },   // exit() ends the command, never the worker or node
    onTreeRun: onTreeRun
  }).then(function (M) {
    Object.keys(files).forEach(function (path) {
      path.split('/').slice(1, -1).reduce(function (dir, part) {
        dir += '/' + part;
        try { M.FS.mkdir(dir); } catch (e) { /* it exists */ }
        return dir;
      }, '');
      M.FS.writeFile(path, files[path]);
    });
    var rc;
    try {
      rc = M.callMain(args);
    } catch (e) {   // exit(): its status
      if (e && typeof e.status === 'number') rc = e.status; else throw e;
    }
    var got = {};
    read.forEach(function (path) {
      try { got[path] = M.FS.readFile(path, {encoding: 'utf8'}); } catch (e) { got[path] = null; }
    });
    var text = function (lines) { return lines.length ? lines.join('\n') + '\n' : ''; };
    return {rc: rc, out: text(out), err: text(err), files: got};
  });
}
