// The page's Web Worker: emscripten's glue (GRPO) and run.js come before this in the same blob.
// The first message carries grpo.c's WebAssembly bytes; each later one a command {id, args, files,
// read}, answered with {id, type: 'tree-run', ...} per finished tree run, then {id, type: 'done', ...}.
var compiled = null;
onmessage = function (e) {
  var m = e.data;
  if (m.wasm) { compiled = WebAssembly.compile(m.wasm); return; }
  compiled.then(function (mod) {
    return grpoRun(GRPO, mod, m.args, m.files || {}, m.read || [], function (objective, n, rneg, seed, freq) {
      postMessage({id: m.id, type: 'tree-run', objective: objective, n: n, rneg: rneg, seed: seed,
                   freq: freq});
    });
  }).then(function (r) {
    r.id = m.id;
    r.type = 'done';
    postMessage(r);
  }, function (err) {
    var why = 'error: ' + (err && err.stack || err) + '\n';
    postMessage({id: m.id, type: 'done', rc: -1, out: '', err: why, files: {}});
  });
};
