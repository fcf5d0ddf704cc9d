// node notes/web/build.js DIR: writes DIR/grpo.html, the one-file page (make web), from
// notes/web/page.html, its scripts, emscripten's DIR/grpo.js and DIR/grpo.wasm (grpo.c), and the
// worked example's files. Each @NAME@ of page.html is replaced by a file's text; the WebAssembly
// goes in as base64. Nothing on the page is fetched: it opens from file:// offline.
'use strict';
const fs = require('fs'), path = require('path');
const dir = process.argv[2];
if (!dir) { console.error('usage: node notes/web/build.js DIR'); process.exit(2); }
const here = __dirname, root = path.join(here, '..', '..');
const read = (p) => fs.readFileSync(p, 'utf8');
// inside <script>, only "</script" could end the element early; in these files it would sit in a
// string or a regular expression, where "<\/script" means the same
const script = (t) => t.replace(/<\/script/gi, '<\\/script');
const html = (t) => t.replace(/&/g, '&amp;').replace(/</g, '&lt;');
const parts = {
  GLUE: script(read(path.join(dir, 'grpo.js'))),
  RUN: script(read(path.join(here, 'run.js'))),
  WORKER: script(read(path.join(here, 'worker.js'))),
  PAGE: script(read(path.join(here, 'page.js'))),
  WASM: fs.readFileSync(path.join(dir, 'grpo.wasm')).toString('base64'),
  EXAMPLE: html(read(path.join(root, 'notes', 'examples', 'worked_example.txt'))),
  LETTERS: html(read(path.join(root, 'notes', 'examples', 'letters.txt')))
};
let page = read(path.join(here, 'page.html'));
for (const [name, text] of Object.entries(parts)) {
  const pieces = page.split('@' + name + '@');
  if (pieces.length !== 2) throw new Error('page.html: @' + name + '@ must appear once');
  page = pieces.join(text);
}
const out = path.join(dir, 'grpo.html');
fs.writeFileSync(out, page);
console.log('make web: wrote ' + out + ' (' + Buffer.byteLength(page) + ' bytes; file://, offline)');
