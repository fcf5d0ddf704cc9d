// node notes/web/test_page.js PAGE BROWSER GRPO SHOT [--figure] [--firefox FIREFOX]: make web's page
// in headless Chromium, driven over the DevTools protocol (a small WebSocket client below: node 18
// and 20 have none built in). It opens PAGE from file://, then
//   - starts and stops tree's default grid, then runs a small Table 1 grid (./grpo tree) from the
//     page's fields and checks its output and tree_steps.csv against the same WebAssembly (the
//     page's own) run under node, bit for bit, and the curves drawn while it ran against the CSV;
//   - types a change into the worked example (a reward, then a new completion) and checks check's
//     table and loss on the page against native ./grpo check (GRPO, the binary) to float rounding;
//   - checks that the B(G) picture (check --html, in an iframe) drew and that its switch works,
//     that nothing was fetched (every request file:, blob:, data: or about:) and that nothing was
//     logged as an error; then writes a screenshot to SHOT (--figure: after the preset's grid).
// With --firefox, the same small grid in headless Firefox too (WebDriver BiDi), against node's.
// Prints one PASS or FAIL line per check; exit status 1 when one fails.
'use strict';
const fs = require('fs'), path = require('path'), os = require('os'), http = require('http');
const crypto = require('crypto'), {spawn, execFileSync} = require('child_process');
const [pagePath, browser, grpoBin, shot] = process.argv.slice(2);
const figure = process.argv.includes('--figure');
const firefox = process.argv.includes('--firefox') ? process.argv[process.argv.indexOf('--firefox') + 1]
                                                   : null;
let pass = 0, fail = 0;
const ok = (what) => { console.log('PASS  ' + what); pass++; };
const bad = (what) => { console.log('FAIL  ' + what); fail++; };
const check = (cond, what, why) => (cond ? ok(what) : bad(what + (why ? ': ' + why : '')));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- a WebSocket client, just enough for the DevTools protocol (RFC 6455: text frames, masked)
function frameHead(n) {   // FIN + text, the masked bit, and the payload length n
  if (n < 126) return Buffer.from([0x81, 0x80 | n]);
  if (n < 65536) return Buffer.from([0x81, 0xfe, n >> 8, n & 255]);
  const h = Buffer.alloc(10);
  h[0] = 0x81; h[1] = 0xff;
  h.writeBigUInt64BE(BigInt(n), 2);
  return h;
}
function websocket(url) {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = http.request({host: u.hostname, port: u.port, path: u.pathname, headers: {
      Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13',
      'Sec-WebSocket-Key': crypto.randomBytes(16).toString('base64')}});
    req.on('error', reject);
    req.on('upgrade', (res, sock) => {
      let buf = Buffer.alloc(0), parts = [];
      const ws = {onmessage: null, close() { sock.destroy(); }, send(text) {
        const data = Buffer.from(text), mask = crypto.randomBytes(4);
        for (let i = 0; i < data.length; i++) data[i] ^= mask[i & 3];
        sock.write(Buffer.concat([frameHead(data.length), mask, data]));
      }};
      sock.on('data', (d) => {
        buf = Buffer.concat([buf, d]);
        for (;;) {   // whole frames only; the server's are not masked
          if (buf.length < 2) return;
          let n = buf[1] & 127, at = 2;
          if (n === 126) { if (buf.length < 4) return; n = buf.readUInt16BE(2); at = 4; }
          else if (n === 127) { if (buf.length < 10) return; n = Number(buf.readBigUInt64BE(2)); at = 10; }
          if (buf.length < at + n) return;
          const fin = buf[0] & 0x80, op = buf[0] & 15;
          if (op === 1 || op === 0) parts.push(buf.subarray(at, at + n));
          buf = buf.subarray(at + n);
          if ((op === 1 || op === 0) && fin) {
            const text = Buffer.concat(parts).toString();
            parts = [];
            if (ws.onmessage) ws.onmessage(text);
          }
        }
      });
      resolve(ws);
    });
    req.end();
  });
}

// ---- the DevTools protocol over it: send(method, params, session) resolves to the result
function devtools(ws) {
  let id = 0;
  const waiting = new Map(), handlers = [];
  ws.onmessage = (text) => {
    const m = JSON.parse(text);
    if (m.id && waiting.has(m.id)) {
      const w = waiting.get(m.id);
      waiting.delete(m.id);
      if (m.error) w.reject(new Error(w.method + ': ' + m.error.message)); else w.resolve(m.result);
    } else if (m.method) handlers.forEach((h) => h(m));
  };
  return {
    send(method, params, sessionId) {
      return new Promise((resolve, reject) => {
        waiting.set(++id, {resolve, reject, method});
        ws.send(JSON.stringify({id, method, params: params || {}, sessionId}));
      });
    },
    on(h) { handlers.push(h); }
  };
}

// ---- the page's own WebAssembly under node: its scripts, as the browser reads them
const html = fs.readFileSync(pagePath, 'utf8');
const script = (id) => {
  const m = new RegExp('<script type="text/plain" id="' + id + '">([\\s\\S]*?)</script>').exec(html);
  if (!m) throw new Error(pagePath + ': no script ' + id);
  return m[1];
};
const load = new Function('require', '__dirname', '__filename', 'module', 'exports',
                          script('grpo-glue') + '\n' + script('grpo-run') + '\nreturn [GRPO, grpoRun];');
const [GRPO, grpoRun] = load(require, __dirname, __filename, {}, {});
const wasmModule = new WebAssembly.Module(Buffer.from(script('grpo-wasm').trim(), 'base64'));
const nodeRun = (args, read) => grpoRun(GRPO, wasmModule, args, {}, read || []);

// inFirefox: the small grid (args) in headless Firefox over WebDriver BiDi; resolves to the page's
// grpoPage.tree as JSON and its errors, or throws
async function inFirefox(args) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'grpo-web-firefox.'));
  const fx = spawn(firefox, ['--headless', '--no-remote', '--profile', dir, '--remote-debugging-port=0'],
                   {stdio: ['ignore', 'pipe', 'pipe']});
  try {
    let log = '';
    const url = await new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('firefox did not start: ' + log.slice(-300))), 60000);
      const seen = (d) => {
        log += d;
        const m = /WebDriver BiDi listening on (ws:\S+)/.exec(log);
        if (m) { clearTimeout(t); resolve(m[1].replace(/\/?$/, '/session')); }
      };
      fx.stdout.on('data', seen);
      fx.stderr.on('data', seen);
    });
    const ws = await websocket(url), waiting = new Map();
    let id = 0;
    ws.onmessage = (text) => {
      const m = JSON.parse(text);
      if (m.id && waiting.has(m.id)) { waiting.get(m.id)(m); waiting.delete(m.id); }
    };
    const send = (method, params) => new Promise((r) => {
      waiting.set(++id, r);
      ws.send(JSON.stringify({id, method, params}));
    });
    await send('session.new', {capabilities: {}});
    const context = (await send('browsingContext.getTree', {})).result.contexts[0].context;
    const page = 'file://' + path.resolve(pagePath);
    await send('browsingContext.navigate', {context, url: page, wait: 'complete'});
    const evaluate = async (expression) => {   // the value of a JSON-valued expression
      const r = await send('script.evaluate', {expression: 'JSON.stringify(' + expression + ')',
                                               awaitPromise: true, target: {context}});
      if (r.type !== 'success' || r.result.type !== 'success')
        throw new Error(expression + ': ' + JSON.stringify(r));
      return r.result.result.type === 'string' ? JSON.parse(r.result.result.value) : undefined;
    };
    const until = async (expr) => {
      for (const t0 = Date.now(); Date.now() - t0 < 600000; await sleep(200))
        if (await evaluate(expr)) return;
      throw new Error(expr + ': not within 600 s');
    };
    await until('!!(window.grpoPage && grpoPage.ready)');
    const fields = {'t-lr': args[2], 't-k': args[4], 't-seeds': args[6], 't-steps': args[8]};
    await evaluate(`(function (f) { for (var k in f) document.getElementById(k).value = f[k];
                      document.getElementById('t-run').click(); })(${JSON.stringify(fields)})`);
    await until('!!(grpoPage.tree && grpoPage.tree.done)');
    const tree = await evaluate('grpoPage.tree'), errors = await evaluate('grpoPage.errors');
    ws.close();
    return {tree, errors};
  } finally {
    fx.kill();
    await sleep(500);
    try {
      fs.rmSync(dir, {recursive: true, force: true});
    } catch (e) { /* left in the temporary directory */ }
  }
}

let chrome = null, tmp = null;
async function main() {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'grpo-web.'));
  // every request that is not the file itself would go to this proxy, which is not there
  chrome = spawn(browser, ['--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars',
    '--no-first-run', '--user-data-dir=' + path.join(tmp, 'profile'), '--remote-debugging-port=0',
    '--proxy-server=127.0.0.1:9', 'about:blank'], {stdio: ['ignore', 'ignore', 'pipe']});
  const url = await new Promise((resolve, reject) => {
    let err = '';
    const t = setTimeout(() => reject(new Error('chromium did not start: ' + err.slice(-500))), 30000);
    chrome.stderr.on('data', (d) => {
      err += d;
      const m = /DevTools listening on (ws:\S+)/.exec(err);
      if (m) { clearTimeout(t); resolve(m[1]); }
    });
  });
  const ws = await websocket(url), cdp = devtools(ws);
  const requests = [], problems = [];
  cdp.on((m) => {
    const p = m.params;
    if (m.method === 'Network.requestWillBeSent') requests.push(p.request.url);
    if (m.method === 'Runtime.exceptionThrown') problems.push('exception: ' + p.exceptionDetails.text);
    if (m.method === 'Runtime.consoleAPICalled' && /error|warn/.test(p.type))
      problems.push('console.' + p.type + ': ' + p.args.map((a) => a.value || a.description).join(' '));
    if (m.method === 'Log.entryAdded' && p.entry.level === 'error') problems.push('log: ' + p.entry.text);
    if (m.method === 'Target.attachedToTarget') {   // the page's workers (and frames): their requests too
      for (const x of ['Network.enable', 'Runtime.enable', 'Log.enable', 'Runtime.runIfWaitingForDebugger'])
        cdp.send(x, {}, p.sessionId).catch(() => {});
    }
  });
  const {targetInfos} = await cdp.send('Target.getTargets');
  const target = targetInfos.filter((t) => t.type === 'page')[0];
  const {sessionId: s} = await cdp.send('Target.attachToTarget', {targetId: target.targetId, flatten: true});
  for (const x of ['Page.enable', 'Runtime.enable', 'Network.enable', 'Log.enable']) await cdp.send(x, {}, s);
  await cdp.send('Target.setAutoAttach', {autoAttach: true, waitForDebuggerOnStart: false, flatten: true}, s);
  const viewport = (height) => cdp.send('Emulation.setDeviceMetricsOverride',
                                        {width: 1280, height, deviceScaleFactor: 1, mobile: false}, s);
  await viewport(1500);
  const evaluate = async (expression) => {
    const r = await cdp.send('Runtime.evaluate', {expression, returnByValue: true, awaitPromise: true}, s);
    if (r.exceptionDetails) throw new Error('evaluate ' + expression + ': ' + r.exceptionDetails.text);
    return r.result.value;
  };
  const until = async (expr, seconds, what) => {
    for (const t0 = Date.now(); Date.now() - t0 < seconds * 1000; await sleep(100))
      if (await evaluate(expr)) return;
    throw new Error(what + ': not within ' + seconds + ' s');
  };
  // type: focus the element (its text selected) and type text into it, as a reader would
  const type = async (selector, text) => {
    const e = `document.querySelector(${JSON.stringify(selector)})`;
    await evaluate(`${e}.focus(); ${e}.select()`);
    await cdp.send('Input.insertText', {text}, s);
  };
  const click = (id) => evaluate(`document.getElementById('${id}').click()`);

  const t0 = Date.now();
  await cdp.send('Page.navigate', {url: 'file://' + path.resolve(pagePath)}, s);
  await until('window.grpoPage && grpoPage.ready', 300, 'the page');
  ok(`the page loaded from file:// and ran its first commands (tree --help, tree, check) in ` +
     `${Date.now() - t0} ms`);

  // 1. the default grid started and stopped (its worker is replaced), then a small grid typed in
  await click('t-run');
  await until('grpoPage.tree.progress.length > 0', 300, 'the default grid\'s first run');
  await click('t-stop');
  await until('grpoPage.tree.done', 60, 'Stop');
  const stopped = await evaluate(`grpoPage.tree.rc === null &&
                                   document.getElementById('t-status').textContent`);
  check(stopped === 'stopped', 'the default grid (' + (await evaluate('grpoPage.tree.args.join(" ")')) +
        ') ran, drew its first run and stopped on Stop', stopped);
  for (const [sel, v] of Object.entries({'#t-lr': '3e-4', '#t-k': '8', '#t-seeds': '1', '#t-steps': '30'}))
    await type(sel, v);
  await click('t-run');
  await until('grpoPage.tree && grpoPage.tree.done', 600, 'the tree grid');
  const tree = await evaluate('grpoPage.tree');
  const args = ['tree', '--lr', '3e-4', '--group-size', '8', '--seeds', '1', '--steps', '30',
                '--run-dir', '/runs/tree'];
  check(JSON.stringify(tree.args) === JSON.stringify(args), 'the page ran ' + tree.args.join(' '));
  const ref = await nodeRun(args, ['/runs/tree/tree_steps.csv']);
  const csv = ref.files['/runs/tree/tree_steps.csv'] || '';
  const noTime = (out) => out.split('\n').filter((l) => !/^# \d+ runs x \d+ steps in /.test(l)).join('\n');
  check(tree.rc === 0 && csv && tree.csv === csv,
        `tree_steps.csv in the browser = under node, bit for bit (${csv.length} bytes)`);
  check(tree.rc === 0 && noTime(tree.out) === noTime(ref.out) && /Table 1/.test(ref.out),
        'tree\'s printed Table 1 in the browser = under node (all but its time line)');
  const rows = csv.split('\n').slice(1).filter(Boolean).map((l) => l.split(','));
  let same = tree.progress.length === 12;
  for (const r of tree.progress) {
    const mine = rows.filter((f) => f[0] === r.objective && +f[1] === r.n && +f[2] === r.rneg &&
                                    +f[3] === r.seed);
    same = same && mine.length === 30 && mine.every((f, t) => Math.abs(+f[6] - r.freq[t]) < 5e-7);
  }
  check(same, `the curves drawn as the ${tree.progress.length} runs ended (web_tree_run) = tree_steps.csv`);
  const drawn = await evaluate(`Array.prototype.map.call(document.querySelectorAll('#t-plot polyline.mean'),
    function (p) { return p.getAttribute('data-objective') + ':' + p.getAttribute('points').split(' ').length;
    }).join(' ')`);
  check(drawn === 'grpo:30 lambda-grpo:30', 'both mean curves drawn from the CSV, 30 steps each', drawn);
  if (firefox) {
    const fx = await inFirefox(args);
    const same = fx.tree.rc === 0 && fx.tree.csv === csv && noTime(fx.tree.out) === noTime(ref.out);
    check(same && !fx.errors.length,
          'Firefox (' + firefox + '): the same grid, tree_steps.csv and Table 1 = under node, bit for bit',
          fx.errors.join('; '));
  }
  const tableRows = await evaluate(`document.querySelectorAll('#tree-table tr').length`);
  check(tableRows === 7, 'Table 1 on the page: 6 cells beside the paper\'s', tableRows + ' rows');

  // 2. the worked example: a reward typed, a completion added and typed
  const field = (row, name) => `#ex-rows input[data-row="${row}"][data-field="${name}"]`;
  await type(field(2, 'reward'), '0.25');
  await click('ex-add');
  await type(field(6, 'tokens'), 'JKLQ');
  await type(field(6, 'reward'), '0.75');
  await until(`grpoPage.check && grpoPage.check.done &&
               /reward=0.75 tokens=10,11,12,17\\n$/.test(grpoPage.check.input)`, 120, 'check after the edits');
  const input = await evaluate('grpoPage.check.input');
  check(/^group=0 reward=0.25 tokens=10,11,12,13$/m.test(input),
        'the typed reward and completion reached check\'s input');
  const cells = await evaluate(`Array.prototype.map.call(document.querySelectorAll('#ex-table tr'),
    function (tr) {
      return Array.prototype.map.call(tr.children, function (c) { return c.textContent; }); })`);
  const loss = await evaluate(`document.getElementById('ex-loss').textContent`);
  const file = path.join(tmp, 'group.txt');
  fs.writeFileSync(file, input);
  const native = (obj) => execFileSync(grpoBin, ['check', '--objective', obj, '--adv-eps', '0', file],
                                       {encoding: 'utf8'}).trim().split('\n').map((l) => l.split('\t'));
  const G = native('grpo'), L = native('lambda-grpo'), col = (name) => G[0].indexOf(name);
  const close = (a, b) => a !== '' && !isNaN(+a) && Math.abs(+a - +b) <= 1e-5 * Math.max(1, Math.abs(+b));
  let agree = cells.length === G.length - 1 && G.length > 30, at = -1;
  // the page's columns: line, group, t, token, |λ|, a_i, the weights, the ∂loss/∂logp (GRPO, λ-GRPO)
  for (let i = 1; agree && i < cells.length; i++) {
    const g = G[i], l = L[i];
    const want = [g[col('line')], g[col('group')], g[col('t')], null, g[col('lambda_size')],
                  g[col('advantage')], g[col('weight')], l[col('weight')], g[col('dloss_dlogp')],
                  l[col('dloss_dlogp')]];
    agree = want.every((w, j) => w === null || close(cells[i][j], w));
    at = i;
  }
  const lossG = G[G.length - 1][1], lossL = L[L.length - 1][1], m = /GRPO (\S+), λ-GRPO (\S+)/.exec(loss);
  check(agree && m && close(m[1], lossG) && close(m[2], lossL),
        `check's table on the page (${cells.length - 1} tokens, both objectives) and its loss = ` +
        'native ./grpo check', `row ${at}; loss '${loss}' against ${lossG}, ${lossL}`);
  const nodes = await evaluate(`document.querySelectorAll('#ex-nodes tr').length - 1`);
  check(nodes === 10, 'the net coefficients of the 10 process steps (check --html\'s numbers)',
        nodes + ' steps');
  const frame = `document.getElementById('ex-frame').contentDocument`;
  await until(`${frame}.body && ${frame}.body.getAttribute('data-status') === 'ok'`, 60, 'the B(G) picture');
  await evaluate(`${frame}.getElementById('bg-grpo').click()`);
  await until(`${frame}.body.getAttribute('data-objective') === 'grpo'`, 30, 'the picture\'s GRPO switch');
  ok('the B(G) picture (check --html in an iframe) drawn, its switch to GRPO works');
  await evaluate(`${frame}.getElementById('bg-lambda-grpo').click()`);

  // 3. a fuller grid for the committed screenshot (--figure): the preset, 2 seeds
  if (figure) {
    const preset = {'#t-lr': '3e-4', '#t-k': '36', '#t-seeds': '2', '#t-steps': '250'};
    for (const [sel, v] of Object.entries(preset)) await type(sel, v);
    await click('t-run');
    await until('grpoPage.tree.done && grpoPage.tree.args[6] === "2"', 600, 'the figure\'s grid');
    await evaluate(`document.querySelector('#tree-table tr:nth-child(6)').click()`);   // n = 2, r_neg = -1
  }
  const errors = await evaluate('grpoPage.errors');
  const away = requests.filter((u) => !/^(file|blob|data|about):/.test(u));
  check(away.length === 0, `nothing fetched from the network (${requests.length} requests, all file:, ` +
        'blob:, data: or about:)', away.slice(0, 3).join(' '));
  check(problems.length === 0 && errors.length === 0, 'no error logged or thrown',
        problems.concat(errors).slice(0, 3).join('; '));
  await viewport(Math.min(await evaluate('document.documentElement.scrollHeight'), figure ? 1150 : 1700));
  const png = await cdp.send('Page.captureScreenshot', {format: 'png'}, s);
  fs.writeFileSync(shot, Buffer.from(png.data, 'base64'));
  const size = (p) => fs.statSync(p).size;
  console.log(`      screenshot ${shot}: ${size(shot)} bytes; page ${size(pagePath)} bytes; ` +
              `${((Date.now() - t0) / 1000).toFixed(1)} s in the browser`);
  ws.close();
}
main().catch((e) => { bad('the page test stopped: ' + e.message); }).then(async () => {
  if (chrome && chrome.exitCode === null) {
    const gone = new Promise((r) => chrome.on('exit', r));
    chrome.kill();
    await Promise.race([gone, sleep(5000)]);
  }
  try {
    if (tmp) fs.rmSync(tmp, {recursive: true, force: true});
  } catch (e) { /* left in the temporary directory */ }
  console.log(`web page: ${pass} passed, ${fail} failed`);
  process.exit(fail ? 1 : 0);
});
