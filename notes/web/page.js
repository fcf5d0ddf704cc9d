// The page's script (make web inlines it): runs grpo.c's commands in Web Workers and shows their
// output. It computes nothing of GRPO: it parses what tree and check print and draws it.
(function () {
'use strict';
var $ = function (id) { return document.getElementById(id); };
var SVG = 'http://www.w3.org/2000/svg';
// what the page got from grpo.c, for its test (notes/web/test_page.js) and for the curious
var page = window.grpoPage = {ready: false, errors: [], tree: null, progress: [], check: null};
window.addEventListener('error', function (e) { page.errors.push(String(e.message)); });

function el(tag, attrs, parent, text, ns) {
  var e = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
  for (var a in attrs) e.setAttribute(a, attrs[a]);
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}
function row(table, cells, head) {
  var tr = el('tr', {}, table);
  cells.forEach(function (c) { el(head ? 'th' : 'td', {}, tr, c); });
  return tr;
}
function quote(args) {
  return './grpo ' + args.map(function (a) { return /^[\w.,=\/+-]+$/.test(a) ? a : "'" + a + "'"; })
                        .join(' ');
}

// ---- grpo.c's commands, each in a fresh instance of the module inside a Web Worker
var bin = atob($('grpo-wasm').textContent.trim()), wasm = new Uint8Array(bin.length);
for (var i = 0; i < bin.length; i++) wasm[i] = bin.charCodeAt(i);
var workerJs = ['grpo-glue', 'grpo-run', 'grpo-worker'].map(function (id) { return $(id).textContent; });
var workerUrl = URL.createObjectURL(new Blob([workerJs.join('\n')], {type: 'text/javascript'}));
var nextId = 1;
function Runner() { this.start(); }
Runner.prototype.start = function () {
  var self = this;
  this.pending = {};
  this.w = new Worker(workerUrl);
  this.w.postMessage({wasm: wasm});
  this.w.onmessage = function (e) {
    var p = self.pending[e.data.id];
    if (!p) return;
    if (e.data.type === 'tree-run') { if (p.onRun) p.onRun(e.data); return; }
    delete self.pending[e.data.id];
    p.resolve(e.data);
  };
  this.w.onerror = function (e) { page.errors.push('worker: ' + e.message); };
};
// run: resolves to {rc, out, err, files} (rc null: stopped)
Runner.prototype.run = function (args, files, read, onRun) {
  var self = this, id = nextId++;
  return new Promise(function (resolve) {
    self.pending[id] = {resolve: resolve, onRun: onRun};
    self.w.postMessage({id: id, args: args, files: files || {}, read: read || []});
  });
};
Runner.prototype.stop = function () {
  this.w.terminate();
  var p = this.pending;
  this.start();
  Object.keys(p).forEach(function (id) { p[id].resolve({rc: null, out: '', err: 'stopped\n', files: {}}); });
};
var treeRunner = new Runner(), checkRunner = new Runner();

// ---- 1. Table 1: ./grpo tree
var NS = [1, 2], RNEG = [-0.5, -1, -1.5], OBJ = ['grpo', 'lambda-grpo'], NAME = ['GRPO', 'λ-GRPO'];
var COLOUR = ['#b2182b', '#2166ac'], WINDOW = 50;
var cell = {n: 1, r: -1}, defaults = {}, table = null, curves = null, steps = 0, running = false;
var FIELDS = {lr: 't-lr', 'group-size': 't-k', seeds: 't-seeds', steps: 't-steps'};

function choices(id, values, key) {
  values.forEach(function (v) {
    var b = el('button', {}, $(id), String(v).replace('-', '−'));
    b.addEventListener('click', function () { cell[key] = v; drawCell(); });
    b.dataset.v = v;
  });
}
choices('t-n', NS, 'n');
choices('t-r', RNEG, 'r');

// parseTable: the rows of tree's "Table 1" block: {n, r, ours: [[mean, sd] per objective], paper: [..]}
function parseTable(out) {
  var rows = [];
  out.split('\n').forEach(function (line) {
    var m = /^\s+(\d)\s+(-?[\d.]+) \|(.*)\|(.*)$/.exec(line);
    if (!m) return;
    var ours = m[3].trim().split(/\s{3,}/).map(function (s) { return s.split(' ± '); });
    rows.push({n: +m[1], r: +m[2], ours: ours, paper: m[4].trim().split(/\s+/), line: line});
  });
  return rows.length === 6 ? rows : null;
}
function drawTable() {
  var t = $('tree-table');
  t.textContent = '';
  row(t, ['n', 'r_neg', 'GRPO (ours)', 'λ-GRPO (ours)', 'GRPO (paper)', 'λ-GRPO (paper)'], true);
  (table || []).forEach(function (r) {
    var tr = row(t, [r.n, r.r.toFixed(1).replace('-', '−')].concat(r.ours.slice(0, 2).map(function (v) {
      return v.length === 2 ? v[0] + ' ± ' + v[1] : v[0]; }), r.paper));
    if (r.n === cell.n && r.r === cell.r) tr.className = 'sel';
    tr.addEventListener('click', function () { cell.n = r.n; cell.r = r.r; drawCell(); });
  });
}
// parseCsv: tree_steps.csv -> {objective|n|r: [{seed, freq: [per step]}]}
function parseCsv(text) {
  var c = {}, lines = text.split('\n'), head = lines[0].split(',');
  var at = {}; head.forEach(function (h, j) { at[h] = j; });
  lines.slice(1).forEach(function (line) {
    if (!line) return;
    var f = line.split(','), key = f[at.objective] + '|' + f[at.n] + '|' + (+f[at.r_neg]);
    var runs = c[key] || (c[key] = []), seed = +f[at.seed];
    var run = runs.filter(function (x) { return x.seed === seed; })[0];
    if (!run) { run = {seed: seed, freq: []}; runs.push(run); }
    run.freq[+f[at.step] - 1] = +f[at.target_freq];
  });
  return c;
}
function drawCell() {
  ['t-n', 't-r'].forEach(function (id, j) {
    Array.prototype.forEach.call($(id).children, function (b) {
      b.className = +b.dataset.v === (j ? cell.r : cell.n) ? 'on' : ''; });
  });
  drawTable();
  var svg = $('t-plot'), W = +svg.getAttribute('width'), H = +svg.getAttribute('height');
  var L = 40, R = 10, T = 22, B = 30, pw = W - L - R, ph = H - T - B;
  svg.textContent = '';
  var x = function (s) { return L + pw * (steps > 1 ? s / (steps - 1) : 0.5); };
  var y = function (v) { return T + ph * (1 - v); };
  var points = function (f) { return f.map(function (v, s) { return x(s) + ',' + y(v); }).join(' '); };
  var w0 = Math.max(0, steps - WINDOW);
  el('rect', {x: x(w0), y: T, width: Math.max(1, x(steps - 1) - x(w0)), height: ph, fill: '#f0f0f0'}, svg,
     undefined, SVG);
  [0, 0.25, 0.5, 0.75, 1].forEach(function (v) {
    el('line', {x1: L, x2: L + pw, y1: y(v), y2: y(v), stroke: '#ddd'}, svg, undefined, SVG);
    el('text', {x: L - 4, y: y(v) + 4, 'text-anchor': 'end'}, svg, String(v), SVG);
  });
  el('text', {x: L + pw / 2, y: H - 6, 'text-anchor': 'middle'}, svg, 'step', SVG);
  el('text', {x: L, y: 12}, svg, 'target frequency, n = ' + cell.n + ', r_neg = ' + cell.r, SVG);
  if (steps) [1, steps].forEach(function (s) {
    el('text', {x: x(s - 1), y: T + ph + 14, 'text-anchor': 'middle'}, svg, String(s), SVG); });
  var paper = (table || []).filter(function (r) { return r.n === cell.n && r.r === cell.r; })[0];
  OBJ.forEach(function (o, m) {
    var runs = (curves || {})[o + '|' + cell.n + '|' + cell.r] || [];
    if (paper) {   // the paper's value over the metric's window, dashed
      var pv = +paper.paper[m];
      el('line', {x1: x(w0), x2: x(Math.max(0, steps - 1)), y1: y(pv), y2: y(pv), stroke: COLOUR[m],
                  'stroke-dasharray': '5 4'}, svg, undefined, SVG);
    }
    var mean = [];
    runs.forEach(function (run) {
      el('polyline', {points: points(run.freq), fill: 'none', stroke: COLOUR[m], 'stroke-opacity': 0.22}, svg,
         undefined, SVG);
      run.freq.forEach(function (v, s) { mean[s] = (mean[s] || 0) + v / runs.length; });
    });
    if (runs.length)
      el('polyline', {points: points(mean), fill: 'none',
                      stroke: COLOUR[m], 'stroke-width': 2, 'class': 'mean', 'data-objective': o,
                      'data-seeds': runs.length}, svg, undefined, SVG);
    el('text', {x: L + pw - 170 + 90 * m, y: 12, fill: COLOUR[m]}, svg, '— ' + NAME[m] + (runs.length ?
       ' (' + runs.length + ')' : ''), SVG);
  });
}
function setFields(v) {
  Object.keys(FIELDS).forEach(function (k) { if (v[k] !== undefined) $(FIELDS[k]).value = v[k]; });
}
function treeArgs() {
  var a = ['tree'];
  Object.keys(FIELDS).forEach(function (k) { a.push('--' + k, $(FIELDS[k]).value.trim()); });
  return a.concat(['--run-dir', '/runs/tree']);
}
function runTree() {
  if (running) return;
  var args = treeArgs(), t0 = performance.now(), done = 0, S = +$('t-seeds').value, total = 12 * S;
  var tree = page.tree = {args: args, done: false, progress: []};
  running = true;
  $('t-run').disabled = true;
  $('t-stop').disabled = false;
  steps = +$('t-steps').value || 0;
  curves = {};
  $('t-cmd').textContent = quote(args);
  $('t-out').textContent = '';
  var status = function (s) { $('t-status').textContent = s; };
  status('running: 0 of ' + total + ' runs');
  treeRunner.run(args, {}, ['/runs/tree/tree_steps.csv'], function (r) {
    // a finished run (grpo.c's web_tree_run): drawn now; tree_steps.csv replaces it at the end
    tree.progress.push(r);
    var key = r.objective + '|' + r.n + '|' + r.rneg;
    (curves[key] = curves[key] || []).push({seed: r.seed, freq: Array.prototype.slice.call(r.freq)});
    var sec = (performance.now() - t0) / 1000;
    done++;
    status('running: ' + done + ' of ' + total + ' runs, ' + sec.toFixed(1) + ' s, about ' +
           Math.ceil(sec / done * (total - done)) + ' s to go');
    drawCell();
  }).then(function (r) {
    running = false;
    $('t-run').disabled = false;
    $('t-stop').disabled = true;
    tree.rc = r.rc; tree.out = r.out; tree.err = r.err;
    tree.csv = r.files['/runs/tree/tree_steps.csv'];
    $('t-out').textContent = r.out + r.err;
    if (r.rc === 0 && tree.csv) {
      curves = parseCsv(tree.csv);
      table = parseTable(r.out) || table;
      status('done: ' + total + ' runs in ' + ((performance.now() - t0) / 1000).toFixed(1) +
             ' s (curves from tree_steps.csv)');
    } else if (r.rc === null) status('stopped');
    else status('tree failed (exit status ' + r.rc + '): ' + r.err.split('\n')[0]);
    tree.done = true;
    drawCell();
  });
}
$('t-run').addEventListener('click', runTree);
$('t-stop').addEventListener('click', function () { treeRunner.stop(); });
$('t-preset').addEventListener('click', function () { setFields({lr: '3e-4', 'group-size': '36'}); });
$('t-defaults').addEventListener('click', function () { setFields(defaults); });

// tree's defaults from its --help ("  --lr   ... [0.0005]"); the paper's column from a one-step run
var treeReady = treeRunner.run(['tree', '--help']).then(function (r) {
  r.out.split('\n').forEach(function (line) {
    var m = /^\s+--(\S+)\s.*\[([^\]]*)\]$/.exec(line);
    if (m && FIELDS[m[1]]) defaults[m[1]] = m[2];
  });
  setFields(defaults);
  return treeRunner.run(['tree', '--steps', '1', '--seeds', '1', '--run-dir', '/runs/paper']);
}).then(function (r) {
  table = parseTable(r.out);
  if (table) table.forEach(function (t) { t.ours = [['–'], ['–']]; });
  drawCell();
});

// ---- 2. The worked example: ./grpo check
var names = $('grpo-letters').textContent.replace(/\n$/, '').split('\n'), ids = {};
names.forEach(function (s, id) { if (!(s in ids)) ids[s] = id; });
var example = $('ex-text').value, seq = 0, shown = 0;
// parseGroup: check's input lines as editable rows {group, reward, tokens (text), rest}; other lines kept
function parseGroup(text) {
  var rows = [], other = [];
  text.split('\n').forEach(function (line, k) {
    var f = {}, rest = [];
    line.trim().split(/\s+/).forEach(function (w) {
      var m = /^(group|reward|tokens)=(.*)$/.exec(w);
      if (m) f[m[1]] = m[2]; else if (w) rest.push(w);
    });
    if (/^\s*#/.test(line) || f.tokens === undefined) { if (line.trim()) other.push(line); return; }
    var toks = f.tokens.split(',').map(function (t) { return /^\d+$/.test(t) && names[+t] || null; });
    var word = toks.every(function (t) { return t && t.length === 1; }) ? toks.join('') : f.tokens;
    rows.push({group: f.group || '0', reward: f.reward || '', tokens: word, rest: rest.join(' '),
               line: k + 1});
  });
  return {rows: rows, other: other};
}
// tokens typed as letters (each a token's name in letters.txt) or as check's comma-separated ids
function tokenIds(word) {
  if (/^[\d,\s]*$/.test(word)) return word.replace(/\s/g, '');
  return word.split('').map(function (c) { return c in ids ? ids[c] : c; }).join(',');
}
var group = parseGroup(example);
// groupText: the rows as check's input (the other lines first), each row's line number updated
function groupText() {
  return group.other.concat(group.rows.map(function (r, j) {
    r.line = group.other.length + j + 1;
    return 'group=' + r.group + ' reward=' + r.reward + ' tokens=' + tokenIds(r.tokens) +
           (r.rest ? ' ' + r.rest : '');
  })).join('\n') + '\n';
}
function drawEditor() {
  var t = $('ex-rows');
  t.textContent = '';
  row(t, ['line', 'group', 'reward', 'completion (letters)', 'a_i', ''], true);
  group.rows.forEach(function (r, j) {
    var tr = row(t, [String(r.line), '', '', '', '', '']);
    [['group', 'gr'], ['reward', 'rw'], ['tokens', 'tk']].forEach(function (f, c) {
      var inp = el('input', {'class': f[1], value: r[f[0]], 'data-row': j, 'data-field': f[0]},
                   tr.children[c + 1]);
      inp.addEventListener('input', function () {
        r[f[0]] = inp.value;
        $('ex-text').value = groupText();
        group.rows.forEach(function (q, k) { t.children[k + 1].children[0].textContent = q.line; });
        runCheck();
      });
    });
    tr.children[4].className = 'adv';
    var x = el('button', {title: 'remove this completion'}, tr.children[5], '×');
    x.addEventListener('click', function () { group.rows.splice(j, 1); editorChanged(); });
  });
}
function editorChanged() { $('ex-text').value = groupText(); drawEditor(); runCheck(); }
$('ex-add').addEventListener('click', function () {
  group.rows.push({group: group.rows.length ? group.rows[group.rows.length - 1].group : '0', reward: '1',
                   tokens: 'JKLM', rest: ''});
  editorChanged();
});
$('ex-reset').addEventListener('click', function () {
  $('ex-text').value = example;
  group = parseGroup(example);
  drawEditor();
  runCheck();
});
$('ex-text').addEventListener('input', function () {
  group = parseGroup($('ex-text').value);
  drawEditor();
  runCheck();
});

// check's output: its table (tab-separated, a header row, then one row per token, then "loss X")
function parseCheck(out) {
  var lines = out.replace(/\n$/, '').split('\n'), head = lines[0].split('\t'), rows = [], loss = null;
  lines.slice(1).forEach(function (l) {
    var f = l.split('\t');
    if (f[0] === 'loss') loss = f[1]; else if (f.length === head.length) rows.push(f);
  });
  var at = {}; head.forEach(function (h, j) { at[h] = j; });
  return {head: head, at: at, rows: rows, loss: loss};
}
function runCheck() {
  var text = $('ex-text').value, me = ++seq;
  var files = {'/group.txt': text, '/letters.txt': $('grpo-letters').textContent};
  var lam = ['check', '--objective', 'lambda-grpo', '--adv-eps', '0', '--token-names', '/letters.txt',
             '--html', '/bg.html', '/group.txt'];
  var grpo = ['check', '--objective', 'grpo', '--adv-eps', '0', '/group.txt'];
  $('ex-cmd').textContent = quote(grpo) + '   and   ' + quote(lam) + '   (/group.txt: the text above)';
  var both = [checkRunner.run(grpo, files), checkRunner.run(lam, files, ['/bg.html'])];
  return Promise.all(both).then(function (r) {
    if (me < shown) return;
    shown = me;
    page.check = {input: text, grpo: r[0], lambda: r[1], html: r[1].files['/bg.html']};
    showCheck(r[0], r[1], page.check.html);
    page.check.done = true;
  });
}
function showCheck(g, l, html) {
  $('ex-err').textContent = g.rc === 0 ? '' : 'check: exit status ' + g.rc + '\n' + g.err;
  ['ex-loss', 'ex-nodes', 'ex-table'].forEach(function (id) { $(id).textContent = ''; });
  var advCells = document.querySelectorAll('#ex-rows td.adv');
  Array.prototype.forEach.call(advCells, function (td) { td.textContent = ''; });
  if (g.rc !== 0 || l.rc !== 0) return;
  var G = parseCheck(g.out), Lm = parseCheck(l.out), at = G.at;
  $('ex-loss').textContent = 'loss: GRPO ' + G.loss + ', λ-GRPO ' + Lm.loss + '  (every logp 0: ratio 1)';
  var t = $('ex-table');
  row(t, ['line', 'group', 't', 'token', '|λ|', 'a_i', 'weight GRPO', 'weight λ-GRPO', '∂loss/∂logp GRPO',
          '∂loss/∂logp λ-GRPO'], true);
  var adv = {};
  G.rows.forEach(function (f, j) {
    var h = Lm.rows[j] || [];
    adv[f[at.line]] = f[at.advantage];
    row(t, [f[at.line], f[at.group], f[at.t], (names[+f[at.token]] || f[at.token]), f[at.lambda_size],
            f[at.advantage], f[at.weight], h[at.weight], f[at.dloss_dlogp], h[at.dloss_dlogp]]);
  });
  Array.prototype.forEach.call($('ex-rows').querySelectorAll('tr'), function (tr) {
    var td = tr.querySelector('td.adv');
    if (td) td.textContent = adv[tr.children[0].textContent] || '';
  });
  // each process step's numbers, from the page check --html wrote (its JSON block)
  var doc = new DOMParser().parseFromString(html || '', 'text/html'), data = doc.getElementById('bg-data');
  var nodes = $('ex-nodes');
  row(nodes, ['group', 'step', '|λ|', 'R̂(λ)', 'A_λ', 'net GRPO', 'net λ-GRPO'], true);
  if (data) JSON.parse(data.textContent).groups.forEach(function (gr) {
    gr.nodes.forEach(function (n) { row(nodes, [gr.group, n.text, n.size, n.R, n.A, n.net[0], n.net[1]]); });
  });
  var frame = $('ex-frame');
  frame.srcdoc = html || '';
}

var loading = 'loading grpo.c (WebAssembly)…';
if (!$('t-status').textContent) $('t-status').textContent = loading;
Promise.all([treeReady, runCheck()]).then(function () {
  page.ready = true;
  if ($('t-status').textContent === loading) $('t-status').textContent = '';
  document.body.setAttribute('data-status', 'ok');
});
drawEditor();
drawCell();
})();
