// Browser test of the explorer page against the real `retrystorm serve`.
//
//   RETRYSTORM_BIN=/work/main/build/retrystorm npm run e2e
//
// Env:
//   RETRYSTORM_BIN    the retrystorm binary (default ../build/retrystorm)
//   RETRYSTORM_SHOTS  screenshot folder (default ../build/screenshots)
//   RETRYSTORM_WEB_DIST  optional: serve this dist/ folder instead of the page
//                     embedded in the binary (API calls are forwarded to it)
//   CHROMIUM          browser (default /usr/bin/chromium)
// Exits non-zero with a list of failures.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const webDir = path.resolve(here, '..');
const BIN = process.env.RETRYSTORM_BIN || path.resolve(webDir, '..', 'build', 'retrystorm');
const SHOTS = path.resolve(webDir, process.env.RETRYSTORM_SHOTS || path.join('..', 'build', 'screenshots'));
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
let WEB_DIST = process.env.RETRYSTORM_WEB_DIST ? path.resolve(process.env.RETRYSTORM_WEB_DIST) : null;
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const REDRAW_LIMIT_MS = 100;
const PHASE_LIMIT_MS = 2000;

const failures = [];
const log = (...a) => console.log(...a);
function check(ok, what, detail = '') {
  if (ok) log(`  ok   ${what}`);
  else { failures.push(`${what}${detail ? `: ${detail}` : ''}`); log(`  FAIL ${what}${detail ? `: ${detail}` : ''}`); }
  return ok;
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** Scrolls a locator into view; a redraw that replaces the element mid-scroll (a busy machine) gets two more tries. */
async function scrollIntoView(locator) {
  for (let i = 0; ; i++) {
    try { await locator.scrollIntoViewIfNeeded({ timeout: 10000 }); return; } catch (e) {
      if (i >= 2 || !/not attached/.test(String(e))) throw e;
      await sleep(250);
    }
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

async function waitForApi(base, child, ms = 30000) {
  const end = Date.now() + ms;
  let last = '';
  while (Date.now() < end) {
    if (child.exitCode !== null) throw new Error(`server exited with status ${child.exitCode} before answering`);
    try {
      const r = await fetch(`${base}/api/presets`);
      if (r.ok) return (await r.json()).presets;
      last = `HTTP ${r.status}`;
    } catch (e) { last = String(e.cause?.code || e.message); }
    await sleep(100);
  }
  throw new Error(`GET ${base}/api/presets did not answer within ${ms} ms (${last})`);
}

/** Serves WEB_DIST and forwards /api to the real server. */
function startDistProxy(apiPort, port) {
  const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml' };
  const srv = http.createServer((req, res) => {
    if (req.url.startsWith('/api/')) {
      // The server answers only its own Host and Origin (docs/http-api.md).
      const headers = { ...req.headers, host: `127.0.0.1:${apiPort}` };
      delete headers.origin;
      const p = http.request({ host: '127.0.0.1', port: apiPort, path: req.url, method: req.method, headers }, (r) => {
        res.writeHead(r.statusCode, r.headers);
        r.pipe(res);
      });
      p.on('error', (e) => { res.writeHead(502); res.end(String(e)); });
      req.pipe(p);
      return;
    }
    let f = path.join(WEB_DIST, decodeURIComponent(req.url.split('?')[0].split('#')[0]));
    if (f.endsWith('/')) f += 'index.html';
    fs.readFile(f, (err, buf) => {
      if (err) { res.writeHead(404); res.end(); return; }
      res.writeHead(200, { 'content-type': types[path.extname(f)] || 'application/octet-stream' });
      res.end(buf);
    });
  });
  return new Promise((r) => srv.listen(port, '127.0.0.1', () => r(srv)));
}

// ---------- page helpers ----------
const H = (page, fn, arg) => page.evaluate(fn, arg);
async function waitReady(page) {
  await page.waitForFunction(() => window.__retrystorm?.ready === true, null, { timeout: 20000 });
}
/** Waits until a run after `runs` has been drawn and nothing is pending. */
async function waitRun(page, runsBefore, timeout = 15000) {
  await page.waitForFunction((n) => {
    const h = window.__retrystorm;
    return h && h.runs > n && document.body.dataset.busy === 'false';
  }, runsBefore, { timeout });
}
async function waitSecondary(page, timeout = 30000) {
  await page.waitForFunction(() => window.__retrystorm.ladderReady && window.__retrystorm.tippingReady, null, { timeout });
}
const runs = (page) => H(page, () => window.__retrystorm.runs);
const controlValues = (page) => H(page, () => Object.fromEntries(
  [...document.querySelectorAll('#controls [data-path]:is(input,select)')]
    .filter((e) => e.type !== 'range')
    .map((e) => [e.dataset.path, e.type === 'checkbox' ? e.checked : e.value])));
const verdictText = (page) => H(page, () => ['verdict-headline', 'verdict-recovery', 'verdict-detail']
  .map((id) => document.getElementById(id).textContent).join(' | '));
const testid = (page, id) => page.locator(`[data-testid="${id}"]`);

async function selectPreset(page, name) {
  const n = await runs(page);
  const cur = await H(page, () => window.__retrystorm.preset);
  if (cur === name) { await testid(page, 'reset').click(); } else await testid(page, 'preset-select').selectOption(name);
  await waitRun(page, n);
  await page.waitForFunction((nm) => window.__retrystorm.preset === nm, name);
}

async function setControl(page, pathKey, value) {
  const n = await runs(page);
  const loc = testid(page, `ctl-${pathKey}`);
  const type = await loc.evaluate((e) => (e.tagName === 'SELECT' ? 'select' : e.type));
  if (type === 'select') await loc.selectOption(String(value));
  else if (type === 'checkbox') await loc.setChecked(Boolean(value));
  else await loc.fill(String(value));
  await waitRun(page, n);
}

/** One control change, timed by the page from the input event to the chart drawn. */
async function timedChange(page, pathKey, value) {
  const renders = await H(page, () => window.__retrystorm.renders);
  await H(page, () => { window.__retrystorm.lastRenderMs = null; });
  await setControl(page, pathKey, value);
  await page.waitForFunction((r) => window.__retrystorm.renders > r && window.__retrystorm.lastRenderMs !== null, renders);
  return H(page, () => [window.__retrystorm.lastRenderMs, window.__retrystorm.lastFetchMs]);
}

/** Median and p90 (nearest rank) of a list of times. */
function stats(xs) {
  const a = [...xs].sort((x, y) => x - y);
  const at = (q) => a[Math.min(a.length - 1, Math.ceil(q * a.length) - 1)];
  return { med: a.length % 2 ? a[(a.length - 1) / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2, p90: at(0.9) };
}
const latencies = [];

/** Light, dark and phone screenshots of the preset on screen (the theme is restored to light). */
async function presetShots(page, name) {
  await H(page, () => document.getElementById('toast')?.classList.remove('on'));
  for (const theme of ['light', 'dark']) {
    if ((await H(page, () => document.documentElement.dataset.theme)) !== theme) await testid(page, 'theme-toggle').click();
    await sleep(80);
    await page.screenshot({ path: path.join(SHOTS, `preset-${name}-${theme}.png`), fullPage: true });
  }
  const vp = page.viewportSize();
  await page.setViewportSize({ width: 390, height: 844 });
  await sleep(150);
  await page.screenshot({ path: path.join(SHOTS, `preset-${name}-phone.png`), fullPage: false });
  await page.setViewportSize(vp);
  await testid(page, 'theme-toggle').click();
  await sleep(80);
}

/** Types text into a number field as a person would (the input event fires). */
async function typeInto(page, key, text) {
  const loc = testid(page, `ctl-${key}`);
  await loc.fill(String(text));
}
const notApplied = (page) => H(page, () => window.__retrystorm.notApplied());

/** Issue 17: the explorer as an explorable explanation (one block per item). */
async function issue17(page, presets, context, base) {
  const has = (n) => presets.some((p) => p.name === n);
  const runsNow = () => runs(page);
  const schemaKeys = await H(page, () => window.__retrystorm.scenario() && true);
  void schemaKeys;

  log('\n# 1. arrow keys step onto valid values');
  await selectPreset(page, 'order-status');
  {
    const loc = testid(page, 'ctl-client.timeout_s');
    await loc.focus();
    const n = await runsNow();
    await page.keyboard.press('ArrowUp');
    await waitRun(page, n);
    const v = await loc.inputValue();
    const sc = await H(page, () => window.__retrystorm.result().scenario.client.timeout_s);
    check(v === '6' && sc === 6, '↑ on Timeout (step 1 s) gives 6 and the chart follows', `field ${v}, chart ${sc}`);
    check(await notApplied(page) === null, 'no "not applied" after ↑');
  }
  {
    // The description follows the scenario: a changed incident is not told in the preset's words.
    await selectPreset(page, 'order-status');
    const before = await testid(page, 'preset-desc').textContent();
    await setControl(page, 'incident.duration_s', 45);
    const after = await testid(page, 'preset-desc').textContent();
    check(after !== before && /= 45/.test(after) && !/20 s/.test(after), 'a changed incident replaces the preset\'s description', after);
    await selectPreset(page, 'order-status');
    check(await testid(page, 'preset-desc').textContent() === before, 'back to the preset, its description again');
  }

  log('\n# 2. invalid inputs are refused before sending, marked, the chart greyed, the link clean');
  for (const [key, text, why] of [['client.retries', '101', /at most 100/], ['demand.rate_per_s', '1e12', /too large/], ['client.retries', '2.5', /whole number/], ['server.capacity_per_s', '0', /above 0/], ['client.timeout_s', '0', /above 0|too small/]]) {
    await selectPreset(page, 'order-status');
    const n = await runsNow();
    const hash0 = await H(page, () => location.hash);
    await typeInto(page, key, text);
    await sleep(250);
    const inv = await testid(page, `ctl-${key}`).getAttribute('aria-invalid');
    const err = await testid(page, `err-${key}`).textContent();
    const stale = await H(page, () => document.getElementById('results').dataset.stale === 'true' && !document.getElementById('stale-note').hidden);
    const hash = await H(page, () => location.hash);
    check(inv === 'true' && why.test(err), `${key} = ${text}: field marked`, `${inv} "${err}"`);
    check(stale, `${key} = ${text}: results greyed as not applied`);
    check((await runsNow()) === n, `${key} = ${text}: nothing sent`);
    check(hash === hash0 && !hash.includes(encodeURIComponent(text)) && !hash.includes(`${key}:`), `${key} = ${text}: kept out of the link`, hash);
  }
  await selectPreset(page, 'order-status');
  check(await notApplied(page) === null, 'reset clears the marks');

  log('\n# 3. an incident outside the run is refused');
  {
    await typeInto(page, 'incident.start_s', '400');
    await sleep(250);
    const err = await testid(page, 'err-incident.start_s').textContent();
    check(/after the run ends/.test(err), 'incident start 400 in a 300 s run: marked in the browser', err);
    const r = await fetch(`${base}/api/run`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ preset: 'order-status', set: { 'incident.start_s': 400 } }) });
    const j = await r.json();
    check(r.status === 400 && /incident\.start_s/.test(j.error ?? ''), 'the server refuses it too', `${r.status} ${j.error}`);
  }

  log('\n# 4. phase-map defaults and reversed ranges');
  await selectPreset(page, 'order-status');
  for (const key of ['client.timeout_s', 'server.queue_limit']) {
    await testid(page, 'phase-x').selectOption(key);
    const from = Number(await testid(page, 'phase-x-from').inputValue());
    const to = Number(await testid(page, 'phase-x-to').inputValue());
    if (key === 'server.queue_limit') check(to <= 1e5, 'queue limit default range is sensible', `${from}–${to}`);
    await H(page, () => { window.__retrystorm.phaseReady = false; });
    await testid(page, 'phase-draw').click();
    await page.waitForFunction(() => window.__retrystorm.phaseReady || /failed|Give/.test(document.getElementById('phase-status').textContent), null, { timeout: 60000 });
    const st = await testid(page, 'phase-status').textContent();
    check(!/failed/.test(st), `phase map over ${key} with its defaults draws`, st);
  }
  {
    await testid(page, 'phase-x').selectOption('incident.duration_s');
    await testid(page, 'phase-x-from').fill('60');
    await testid(page, 'phase-x-to').fill('5');
    await H(page, () => { window.__retrystorm.phaseReady = false; });
    await testid(page, 'phase-draw').click();
    await page.waitForFunction(() => window.__retrystorm.phaseReady || /failed/.test(document.getElementById('phase-status').textContent), null, { timeout: 60000 });
    const st = await testid(page, 'phase-status').textContent();
    check(/swapped/.test(st) && !/failed/.test(st), 'a reversed range is swapped and said so', st);
  }
  {
    // Only keys this engine reads, and no frame of the run (its length, seed).
    const offered = async () => testid(page, 'phase-x').evaluate((s) => [...s.options].map((o) => o.value));
    const fluid = await offered();
    check(!fluid.includes('sessions.poll_s') && !fluid.includes('horizon_s') && !fluid.includes('seed') && fluid.includes('client.timeout_s'),
      'the phase map offers only keys the fluid engine reads', fluid.join(' '));
    await setControl(page, 'engine', 'agent');
    const agent = await offered();
    check(agent.includes('server.slots') && !fluid.includes('server.slots'), 'the agent engine\'s own keys appear with it', agent.filter((k) => !fluid.includes(k)).join(' '));
    await selectPreset(page, 'order-status');
  }

  log('\n# 4b. risk: the metastable region over retries and load');
  {
    await selectPreset(page, 'order-status');
    await H(page, () => { window.__retrystorm.riskReady = false; });
    await testid(page, 'risk-draw').click();
    await page.waitForFunction(() => window.__retrystorm.riskReady || /failed/.test(document.getElementById('risk-status').textContent), null, { timeout: 120000 });
    const st = await testid(page, 'risk-status').textContent();
    check(!/failed/.test(st) && /Poisson/.test(st), 'risk draws on order-status, saying its arrivals were made Poisson', st);
    const cells = await page.locator('[data-testid="risk-table"] tbody td').count();
    check(cells === 5 * 6, 'a cell per retry count (0 to 4) and load (6)', String(cells));
    const marked = await page.locator('[data-testid="risk-table"] tbody td', { hasText: '●' }).count();
    check(marked === 1, 'the scenario as it stands is marked once', String(marked));
    const none = await page.locator('[data-testid="risk-table"] tbody tr').first().locator('td').nth(4).textContent();
    check(/s$/.test(none.trim()), 'without retries it comes back after the incident in seconds', none);
    // Item 4: coloured by the time back instead, without running again.
    const shades = () => page.locator('[data-testid="risk-table"] tbody td').evaluateAll((tds) => tds.map((td) => td.style.background).join('|'));
    const byTip = await shades();
    await testid(page, 'risk-colour').selectOption('leave');
    check((await shades()) !== byTip && (await testid(page, 'risk-status').textContent()) === st, 'risk: colouring by the time back redraws the cells without a new run');
    // Another knob down the rows: the timeout.
    const knobs = await testid(page, 'risk-knob').locator('option').evaluateAll((os) => os.map((o) => o.value));
    check(knobs.join(',') === 'client.retries,client.timeout_s', 'risk: the knobs this scenario reads (no budget ratio without a budget)', knobs.join(','));
    await testid(page, 'risk-knob').selectOption('client.timeout_s');
    await H(page, () => { window.__retrystorm.riskReady = false; });
    await testid(page, 'risk-draw').click();
    await page.waitForFunction(() => window.__retrystorm.riskReady || /failed/.test(document.getElementById('risk-status').textContent), null, { timeout: 120000 });
    const head = await page.locator('[data-testid="risk-table"] thead th').first().textContent();
    const rows = await page.locator('[data-testid="risk-table"] tbody tr th').allTextContents();
    check(/^Timeout/.test(head) && rows.length >= 4 && rows.includes('5'), 'risk: a map over the timeout, the scenario\'s 5 s among its rows', `${head}: ${rows.join(', ')}`);
    await testid(page, 'risk-knob').selectOption('client.retries');
    await testid(page, 'risk-colour').selectOption('tip');
    // Incidents at random: no run is sent for them, the field says where they
    // are read, and "Assess risk" runs the scenario being edited.
    const sentBefore = await runsNow();
    await typeInto(page, 'incident.random_per_h', '0.5');
    await sleep(250);
    const err = await testid(page, 'err-incident.random_per_h').textContent();
    check(/Assess risk/.test(err) && (await runsNow()) === sentBefore, 'incidents at random: no run sent, the field points to the risk panel', err);
    await H(page, () => { window.__retrystorm.riskReady = false; });
    await testid(page, 'risk-draw').click();
    await page.waitForFunction(() => window.__retrystorm.riskReady || /failed/.test(document.getElementById('risk-status').textContent), null, { timeout: 120000 });
    const rst = await testid(page, 'risk-status').textContent();
    check(!/failed/.test(rst) && /0\.5 an hour/.test(rst), 'incidents at random: the risk panel assesses them', rst);
    await selectPreset(page, 'order-status');
  }

  log('\n# 4c. the step-down experiment: the load up and back down');
  {
    await H(page, () => { window.__retrystorm.stepDownReady = false; });
    await testid(page, 'stepdown-draw').click();
    await page.waitForFunction(() => window.__retrystorm.stepDownReady || /failed/.test(document.getElementById('stepdown-status').textContent), null, { timeout: 120000 });
    const st = await testid(page, 'stepdown-status').textContent();
    check(/It tips at 1\.3× going up and does not come back, even at 0\.2× \(the run\)/.test(st), 'order-status tips at 1.3× and stays stuck all the way down', st);
    const points = await testid(page, 'stepdown-chart').getAttribute('data-points');
    check(Number(points) > 1000, 'the staircase is drawn step by step', points);
    const label = await testid(page, 'stepdown-chart').getAttribute('aria-label');
    check(label && /tips at 1\.3×/.test(label), 'the chart says what it shows to a screen reader', label);
  }

  log('\n# 4d. amplification against the failure rate, four policies');
  {
    await H(page, () => { window.__retrystorm.ampReady = false; });
    await testid(page, 'amp-draw').click();
    await page.waitForFunction(() => window.__retrystorm.ampReady || /failed/.test(document.getElementById('amp-status').textContent), null, { timeout: 120000 });
    const st = await testid(page, 'amp-status').textContent();
    const m = /As it stands ([0-9.]+)×, No retries ([0-9.]+)×, 10% token bucket ([0-9.]+)×, Breaker \(opossum\) ([0-9.]+)×/.exec(st);
    check(m && Math.abs(Number(m[1]) - 1.875) < 0.05, 'three retries at 50% failing send about 1 + 1/2 + 1/4 + 1/8 attempts', st);
    check(m && Number(m[2]) === 1 && Number(m[3]) < Number(m[1]) && Number(m[4]) < Number(m[1]), 'no retries send one; a bucket and a breaker fewer than three retries', st);
    const lines = await testid(page, 'amp-chart').getAttribute('data-lines');
    check(lines === '4', 'a line per policy', lines);
  }

  log('\n# 5. a link with bad keys says what was ignored, and never shows a stale result');
  {
    const p2 = await context.newPage();
    await p2.goto(`${base}/#preset=primary-failover&set=client.retriez:3,client.retries:101,client.timeout_s:0.5`);
    await waitReady(p2);
    const ign = await p2.evaluate(() => window.__retrystorm.linkIgnored);
    const note = await p2.locator('[data-testid="link-note"]').textContent();
    check(ign.length === 2 && /client\.retriez/.test(note) && /not a scenario key/.test(note) && /client\.retries=101/.test(note), 'the link note names each ignored key and why', note);
    const sc = await p2.evaluate(() => window.__retrystorm.result().scenario);
    check(sc.client.timeout_s === 0.5 && (await p2.evaluate(() => window.__retrystorm.preset)) === 'primary-failover', 'the valid keys of the link apply');
    await p2.close();
    const p3 = await context.newPage();
    await p3.goto(`${base}/#preset=nope&set=client.retries:1`);
    await waitReady(p3);
    check(/no such preset/.test(await p3.locator('[data-testid="link-note"]').textContent()), 'an unknown preset is named in the note');
    await p3.close();
  }

  log('\n# 6. server not reachable');
  {
    // On a page of its own: the refused connections it logs are the point of the test.
    const main = page;
    page = await context.newPage();
    await page.goto(`${base}/#preset=order-status`);
    await waitReady(page);
    await page.route('**/api/run', (r) => r.abort('connectionrefused'));
    await typeInto(page, 'client.retries', '1');
    await page.waitForFunction(() => window.__retrystorm.serverDown, null, { timeout: 5000 }).catch(() => {});
    const err = await testid(page, 'error').textContent();
    const stale = await H(page, () => document.getElementById('results').dataset.stale === 'true');
    check(/Server not reachable/.test(err) && !/TypeError|Failed to fetch/.test(err), 'a clear "server not reachable" message', err);
    check(stale, 'the old chart is greyed as not applied');
    await page.unroute('**/api/run');
    const n = await runsNow();
    await typeInto(page, 'client.retries', '2');
    await waitRun(page, n);
    check(!(await H(page, () => window.__retrystorm.serverDown)) && (await notApplied(page)) === null, 'back when the server answers again');
    await page.close();
    page = main;
  }

  log('\n# 12. live exports for every system; JSON with per-second series');
  {
    await selectPreset(page, 'order-status');
    await testid(page, 'export-envoy').click();
    await page.waitForFunction(() => document.getElementById('envoy-panel').dataset.ready === 'true', null, { timeout: 10000 });
    check(/num_retries: 3/.test(await testid(page, 'envoy-yaml').inputValue()), 'Envoy export at retries 3');
    await setControl(page, 'client.retries', 1);
    await page.waitForFunction(() => /num_retries: 1\b/.test(document.getElementById('envoy-yaml').value), null, { timeout: 10000 }).catch(() => {});
    check(/num_retries: 1\b/.test(await testid(page, 'envoy-yaml').inputValue()), 'the open export follows Retries = 1');
    const [dl] = await Promise.all([page.waitForEvent('download'), testid(page, 'envoy-download').click()]);
    const f = path.join(os.tmpdir(), `rs-export-${process.pid}.yaml`);
    await dl.saveAs(f);
    check(/num_retries: 1\b/.test(fs.readFileSync(f, 'utf8')), 'Download saves the current text');
    fs.rmSync(f, { force: true });
    for (const sys of ['grpc', 'istio', 'linkerd', 'aws']) {
      await testid(page, 'export-system').selectOption(sys);
      await page.waitForFunction((x) => document.getElementById('envoy-panel').dataset.system === x && document.getElementById('envoy-panel').dataset.ready === 'true', sys, { timeout: 10000 }).catch(() => {});
      const t = await testid(page, 'envoy-yaml').inputValue();
      check(t.length > 20 && (await testid(page, 'envoy-panel').getAttribute('data-system')) === sys, `${sys} export shown`, t.slice(0, 60).replace(/\n/g, ' '));
    }
    {
      // The file name's extension is the server's (GET /api/systems), not the page's.
      const systems = await H(page, () => fetch('/api/systems').then((r) => r.json()));
      const aws = (systems.systems ?? []).find((x) => x.name === 'aws');
      const [da] = await Promise.all([page.waitForEvent('download'), testid(page, 'envoy-download').click()]);
      check(aws && da.suggestedFilename().endsWith(`-aws.${aws.extension}`), 'the download is named with the server\'s extension', da.suggestedFilename());
    }
    await testid(page, 'export-system').selectOption('envoy');
    await testid(page, 'envoy-close').click();
    await page.waitForFunction(() => window.__retrystorm.traceReady, null, { timeout: 15000 });
    const [dj] = await Promise.all([page.waitForEvent('download'), testid(page, 'export-json').click()]);
    const fj = path.join(os.tmpdir(), `rs-export-${process.pid}.json`);
    await dj.saveAs(fj);
    const j = JSON.parse(fs.readFileSync(fj, 'utf8'));
    fs.rmSync(fj, { force: true });
    check(Array.isArray(j.series?.t_s) && j.series.t_s.length === 300 && j.series.capacity_per_s[0] === 100, 'Export JSON has the per-second series', Object.keys(j.series ?? {}).join(','));
  }

  log('\n# 13. session view wording and controls');
  if (has('scheduler-429-outage')) {
    await selectPreset(page, 'scheduler-429-outage');
    await page.waitForFunction(() => window.__retrystorm.engine === 'sessions', null, { timeout: 15000 });
    check(await testid(page, 'import-open').isDisabled(), 'Import config disabled in the session view');
    const op = await testid(page, 'import-open').evaluate((e) => Number(getComputedStyle(e).opacity));
    check(op < 0.7, 'disabled buttons look disabled', String(op));
    const groups = await page.locator('#controls .group:visible').evaluateAll((gs) => gs.map((g) => g.dataset.group));
    check(!groups.includes('incident'), 'no empty "Incident" group on a session preset', groups.join(','));
    const hint = await testid(page, 'hint-items.notification_at_s').textContent().catch(() => '');
    check(/^= \d\d:\d\d/.test(hint), '"Notifications at" shown as a clock time', hint);
    const off = await testid(page, 's-hours').evaluate((t) => {
      const rows = [...t.querySelectorAll('tbody tr')].slice(0, 3);
      const heads = [...t.querySelectorAll('thead th')];
      let worst = 0;
      for (const r of rows) [...r.cells].forEach((c, i) => { if (i > 0 && heads[i]) worst = Math.max(worst, Math.abs(c.getBoundingClientRect().right - heads[i].getBoundingClientRect().right)); });
      return worst;
    });
    check(off < 2, 'hour table: numbers right-aligned under their headings', `${off.toFixed(1)} px`);
    await selectPreset(page, 'order-status');
    const rg = await page.locator('#controls .group:visible').evaluateAll((gs) => gs.map((g) => g.dataset.group));
    check(!rg.includes('agent'), 'no empty "Randomness & runs" group on a request preset', rg.join(','));
    await setControl(page, 'client.retries', 0);
    const formula = await testid(page, 'stack-formula').textContent();
    check(/0 retries \+ 1 = 1 attempt per/.test(formula), 'plural: "1 attempt"', formula);
  }

  log('\n# 10. trace in per-second units, next event, slider before Start, long numbers');
  if (has('primary-failover')) {
    await selectPreset(page, 'primary-failover');
    await page.waitForFunction(() => window.__retrystorm.traceReady, null, { timeout: 15000 });
    const sc = await H(page, () => window.__retrystorm.scenario());
    await testid(page, 'trace-slider').evaluate((e) => { e.value = '3'; e.dispatchEvent(new Event('input', { bubbles: true })); });
    await sleep(100);
    check(await testid(page, 'trace-list').locator('li').count() === 3, 'the slider works before Start trace');
    const first = await testid(page, 'trace-list').locator('li').first().textContent();
    if (sc.step_s !== 1) check(new RegExp(`capacity ${sc.server.capacity_per_s.toLocaleString('en-US')}/s`).test(first), 'trace amounts per second', first.slice(0, 80));
    await testid(page, 'trace-start').click();
    const kinds = [];
    for (let k = 0; k < 8; k++) {
      await testid(page, 'trace-event').click();
      await sleep(60);
      const kind = await testid(page, 'trace-event-note').getAttribute('data-kind');
      if (kinds.at(-1) === kind) break;
      kinds.push(kind);
    }
    check(kinds.includes('incident') && kinds.includes('incident-end') && (kinds.includes('recovery') || kinds.includes('never')), 'Next event walks the story', kinds.join(' → '));
    const c = await H(page, () => window.__retrystorm.cursorT());
    check(c !== null, 'the chart cursor follows the event');
    await testid(page, 'trace-all').click();
    // The step number is text inside the list's box (a list marker outside it was cut at 100).
    const shown = await testid(page, 'trace-list').evaluate((l) => {
      const n = l.querySelectorAll('li')[100]?.querySelector('.trace-n');
      return n ? n.textContent === '101.' && n.getBoundingClientRect().left >= l.getBoundingClientRect().left - 0.5 && n.scrollWidth <= n.clientWidth + 1 : false;
    });
    check(shown, 'step numbers from 100 up are shown whole');
  }

  log('\n# 8. annotations without collisions; the timeout line visible on the backlog chart');
  for (const name of ['order-status', 'primary-failover']) {
    await selectPreset(page, name);
    for (const engine of ['fluid', 'agent']) {
      if (engine === 'agent') await setControl(page, 'engine', 'agent');
      const labels = await H(page, () => window.__retrystorm.labels());
      const by = await H(page, () => window.__retrystorm.boundY());
      const kinds = labels.map((l) => l.kind);
      let hit = '';
      for (let i = 0; i < labels.length; i++) for (let j = i + 1; j < labels.length; j++) {
        const a = labels[i]; const b = labels[j];
        if (a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h) hit = `${a.text} / ${b.text}`;
      }
      const onBound = by === null ? '' : labels.filter((l) => l.y < by && l.y + l.h > by).map((l) => l.text).join(', ');
      check(kinds.includes('incident') && kinds.includes('peak') && (kinds.includes('recovery') || kinds.includes('never')), `${name}/${engine}: trigger, peak and recovery labelled`, kinds.join(','));
      check(hit === '' && onBound === '', `${name}/${engine}: labels collide neither with each other nor with the bound`, hit || onBound);
      const px = await H(page, () => window.__retrystorm.timeoutLinePx());
      check(px !== null && px >= 12, `${name}/${engine}: "one timeout of work" line visible on the backlog chart`, `${px?.toFixed(1)} px above the axis`);
    }
  }

  log('\n# 9. tooltip, zoom kept, aligned charts, band under the stack');
  {
    await selectPreset(page, 'order-status');
    await scrollIntoView(testid(page, 'chart'));
    const box = await testid(page, 'chart').locator('.u-over').boundingBox();
    await page.mouse.move(box.x + box.width * 0.4, box.y + box.height * 0.5);
    await sleep(80);
    const tip = await testid(page, 'chart-tip').boundingBox();
    check(tip && Math.abs(tip.x - (box.x + box.width * 0.4)) < 260 && /capacity/.test(await testid(page, 'chart-tip').textContent()), 'a tooltip beside the cursor');
    await page.mouse.move(box.x + box.width * 0.2, box.y + box.height * 0.5);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.5, box.y + box.height * 0.5, { steps: 5 });
    await page.mouse.up();
    await sleep(100);
    const z1 = await H(page, () => window.__retrystorm.xRange());
    await setControl(page, 'client.retries', 2);
    const z2 = await H(page, () => window.__retrystorm.xRange());
    check(z1 && z2 && z1[1] - z1[0] < 200 && Math.abs(z1[0] - z2[0]) < 1e-6 && Math.abs(z1[1] - z2[1]) < 1e-6, 'zoom kept across a change', `${z1} -> ${z2}`);
    check(await H(page, () => window.__retrystorm.chartsAligned()), 'load and backlog charts share aligned x axes');
    if (has('primary-failover')) {
      await selectPreset(page, 'primary-failover');
      const z3 = await H(page, () => window.__retrystorm.xRange());
      const horizon = await H(page, () => window.__retrystorm.scenario().horizon_s);
      check(z3 && z3[0] <= 1e-6 && z3[1] >= horizon - 1, 'zoom reset when the preset changes', `${z3} of ${horizon} s`);
      await selectPreset(page, 'order-status');
    }
    await testid(page, 'chart').locator('.u-over').dblclick();
    // The keyboard steps through time and the values are read out.
    await testid(page, 'chart').focus();
    await page.keyboard.press('Home');
    await page.keyboard.press('Shift+ArrowRight');
    await page.keyboard.press('ArrowRight');
    const said = await testid(page, 'chart-live').textContent();
    const step = await H(page, () => window.__retrystorm.scenario().step_s);
    const t = Number(said.split(' s:')[0]);
    check(Math.abs(t - 11 * step) < 1e-6 && /capacity/.test(said), 'arrow keys step the chart through time and read the values out', said);
  }

  log('\n# 7. the ladder stays a fixed comparison');
  if (has('order-status')) {
    await selectPreset(page, 'order-status');
    await waitSecondary(page);
    const names = await H(page, () => window.__retrystorm.ladder().map((r) => r.name));
    const verdicts0 = await H(page, () => window.__retrystorm.ladder().map((r) => r.metrics.failed_fraction));
    const idx = names.length - 1;
    const btn = testid(page, `ladder-load-${idx}`);
    await scrollIntoView(btn);
    const h0 = await testid(page, 'ladder').evaluate((t) => t.getBoundingClientRect().height);
    const n = await runsNow();
    await btn.click();
    await waitRun(page, n);
    await waitSecondary(page);
    const h1 = await testid(page, 'ladder').evaluate((t) => t.getBoundingClientRect().height);
    check(Math.abs(h1 - h0) < 1, 'Load does not change the table\'s height', `${h0} -> ${h1}`);
    const chartTop = await testid(page, 'chart').evaluate((c) => c.getBoundingClientRect().top);
    check(chartTop >= -1 && chartTop < 900, 'Load brings the chart into view', String(chartTop));
    await setControl(page, 'demand.rate_per_s', 81);
    await waitSecondary(page);
    await setControl(page, 'demand.rate_per_s', 80);
    await waitSecondary(page);
    const verdicts1 = await H(page, () => window.__retrystorm.ladder().map((r) => r.metrics.failed_fraction));
    check(JSON.stringify(verdicts0) === JSON.stringify(verdicts1), 'after Load and changes, each row still means its label', `${verdicts0} vs ${verdicts1}`);
    const cur = await testid(page, 'ladder').locator('tbody tr.current').count();
    const curIdx = await testid(page, `ladder-row-${idx}`).getAttribute('class');
    check(cur === 1 && /current/.test(curIdx ?? ''), 'the loaded row is the one marked current');
    check(await testid(page, 'ladder').locator('svg.spark polyline').count() === names.length, 'every row has a goodput sparkline');
  }

  log('\n# 7b. "Try it" keeps the ladder in place; Enter on Load keeps the focus');
  if (has('order-status')) {
    await selectPreset(page, 'order-status');
    await waitSecondary(page);
    const apply = testid(page, 'advice-apply-0');
    await scrollIntoView(apply);
    // The ladder's panel: its own note above the table may change with the policy.
    const tops = () => H(page, () => [document.querySelector('[data-testid="advice"]'), document.querySelector('[data-testid="ladder"]').closest('section')].map((e) => e.getBoundingClientRect().top));
    const top0 = await tops();
    let n = await runsNow();
    await apply.click();
    await waitRun(page, n);
    await waitSecondary(page);
    await sleep(300);
    const top1 = await tops();
    check(Math.abs(top1[1] - top0[1]) < 2 && Math.abs(top1[0] - top0[0]) < 2, '"Try it" leaves the advice and the ladder where they were',
      `advice ${top0[0].toFixed(0)} -> ${top1[0].toFixed(0)} px, ladder ${top0[1].toFixed(0)} -> ${top1[1].toFixed(0)} px`);
    await selectPreset(page, 'order-status');
    await waitSecondary(page);
    const load = testid(page, 'ladder-load-1');
    await scrollIntoView(load);
    await load.focus();
    n = await runsNow();
    await page.keyboard.press('Enter');
    await waitRun(page, n);
    await waitSecondary(page);
    const focused = await H(page, () => document.activeElement?.dataset?.testid ?? document.activeElement?.tagName);
    check(focused === 'ladder-load-1', 'Enter on a ladder Load keeps the focus on it', String(focused));
  }

  log('\n# 11. a peak above the bound is explained');
  {
    await selectPreset(page, 'order-status');
    await setControl(page, 'engine', 'agent');
    const m = await H(page, () => window.__retrystorm.result().metrics);
    const txt = await testid(page, 'bound').textContent();
    if (m.peak_amplification > m.bound.max_amplification * 1.005) check(/above this bound/.test(txt), 'agent peak above the bound is explained', txt.slice(-160));
    else check(!/above this bound/.test(txt), 'no explanation when the peak is within the bound');
  }

  log('\n# 15. agent engine: 1 and 20 runs redraw');
  {
    await selectPreset(page, 'order-status');
    await setControl(page, 'engine', 'agent');
    for (const nRuns of [1, 20]) {
      await setControl(page, 'runs', nRuns);
      await waitSecondary(page, 60000);
      const d0 = Number(await testid(page, 'ctl-incident.duration_s').inputValue());
      const times = [];
      const whole = [];
      for (const delta of [1, 2, 3, 4, 0]) {
        await H(page, () => { window.__retrystorm.lastMonteCarloMs = null; });
        const [ms] = await timedChange(page, 'incident.duration_s', d0 + delta);
        times.push(ms);
        if (nRuns > 1) whole.push(await H(page, () => window.__retrystorm.lastMonteCarloMs));
        await waitSecondary(page, 60000);
      }
      const { med, p90 } = stats(times);
      latencies.push([`order-status agent runs=${nRuns}`, med, p90]);
      log(`       agent runs=${nRuns}: chart redrawn in ${times.map((t) => t.toFixed(0)).join(', ')} ms; median ${med.toFixed(0)}, p90 ${p90.toFixed(0)}`);
      if (nRuns > 1) {
        const w = stats(whole);
        latencies.push([`  ... band and intervals of all ${nRuns} runs`, w.med, w.p90]);
        log(`       band and intervals of all ${nRuns} runs drawn in ${whole.map((t) => t.toFixed(0)).join(', ')} ms`);
        check(whole.every((t) => t !== null && t >= 0) && await H(page, () => window.__retrystorm.goodputBandShown() || window.__retrystorm.result().montecarlo?.runs === 20), `${nRuns} runs: the Monte Carlo arrives after the chart`);
      }
      if (nRuns === 20) {
        check(med < 300, 'a 20-run Monte Carlo redraws its chart in under 300 ms (median; replication 0 first)', `${med.toFixed(0)} ms`);
        // All 20 replications share the cores: that limit means something only when the cores are ours.
        const load = os.loadavg()[0];
        const cores = os.cpus().length;
        const w = stats(whole).med;
        if (load < cores) check(w < 300, 'all 20 runs (band and intervals) in under 300 ms (median)', `${w.toFixed(0)} ms`);
        else log(`       NOT CHECKED: all 20 runs under 300 ms (load average ${load.toFixed(1)} on ${cores} cores: the replications wait for a core)`);
      }
    }
    await setControl(page, 'runs', 1);
    await setControl(page, 'engine', 'fluid');
  }

  log('\n# 14. phone: results first, ladder and hours reachable, groups fit, charts described');
  {
    await selectPreset(page, 'order-status');
    await waitSecondary(page);
    const vp = page.viewportSize();
    await page.setViewportSize({ width: 390, height: 844 });
    await sleep(200);
    const order = await H(page, () => document.getElementById('results').getBoundingClientRect().top < document.getElementById('controls').getBoundingClientRect().top);
    check(order, 'phone: results come before the controls');
    const loadRight = await testid(page, 'ladder-load-0').evaluate((b) => b.getBoundingClientRect().right);
    check(loadRight <= 390, 'phone: the ladder\'s Load is reachable without sideways scrolling', String(loadRight));
    const tall = await page.locator('#controls .group:visible').evaluateAll((gs) => gs.map((g) => g.getBoundingClientRect().height).filter((h) => h > 844));
    check(tall.length === 0, 'phone: no control group taller than the screen', tall.join(','));
    const desc = await H(page, () => ['chart', 'backlog-chart'].map((id) => { const e = document.getElementById(id); const d = document.getElementById(e.getAttribute('aria-describedby') ?? ''); return d ? d.querySelectorAll('tbody tr').length : 0; }));
    check(desc.every((n) => n >= 3), 'each chart is described by a table of its moments', desc.join(','));
    if (has('scheduler-429-outage')) {
      await selectPreset(page, 'scheduler-429-outage');
      await page.waitForFunction(() => document.querySelectorAll('[data-testid="s-hours"] tbody tr').length > 0, null, { timeout: 15000 });
      const over = await testid(page, 's-hours').evaluate((t) => t.parentElement.scrollWidth - t.parentElement.clientWidth);
      check(over <= 1, 'phone: the hour table fits without sideways scrolling', `${over}px`);
      await page.screenshot({ path: path.join(SHOTS, 'sessions-phone.png'), fullPage: true });
      await selectPreset(page, 'order-status');
    }
    await page.setViewportSize(vp);
  }

  log('\n# redraw latencies (ms)');
  for (const [name, med, p90] of latencies) log(`       ${name.padEnd(40)} median ${med.toFixed(1).padStart(7)}   p90 ${p90.toFixed(1).padStart(7)}`);
}


/** Issue 30: undo and redo, pins, and an agent Monte Carlo that shows it is working. */
// Found by review: a Monte Carlo the server refuses after replication 0 is
// drawn leaves no progress line running and links what is on screen; a
// field the server marked is cleared once a run is accepted.
async function reviewed(presets, context, base) {
  if (!presets.some((p) => p.name === 'order-status')) return;
  log('\n# review: refused Monte Carlo, server marks');
  // A page of its own: the refusals it provokes are not the main page's errors.
  const page = await context.newPage();
  await page.goto(base);
  await waitReady(page);
  await H(page, () => { for (const d of document.querySelectorAll('details.group')) d.open = true; });
  await selectPreset(page, 'order-status');
  await setControl(page, 'engine', 'agent');
  const n = await runs(page);
  await testid(page, 'ctl-runs').fill('100');
  await waitRun(page, n, 30000);
  await page.waitForFunction(() => window.__retrystorm.mcDone === null, null, { timeout: 20000 }).catch(() => {});
  const [done, hidden, hash] = await H(page, () => [window.__retrystorm.mcDone, document.getElementById('mc-progress').hidden, decodeURIComponent(location.hash)]);
  check(done === null && hidden, 'a Monte Carlo refused by the server leaves no progress line running', `${done} ${hidden}`);
  check(!/runs[^a-z]{1,3}100/.test(hash), 'the link keeps the run on screen, not the refused runs', hash);
  await selectPreset(page, 'order-status');
  const before = await runs(page);
  await testid(page, 'ctl-horizon_s').fill('300000');
  await page.waitForFunction(() => document.body.dataset.busy === 'false' && window.__retrystorm.notApplied() !== null, null, { timeout: 20000 }).catch(() => {});
  check((await notApplied(page)) !== null, 'horizon 300000 at step 1 s is refused and marked', String(await notApplied(page)));
  await testid(page, 'ctl-step_s').fill('2.5');
  await waitRun(page, before, 60000).catch(() => {});
  check((await notApplied(page)) === null, 'once a run with that horizon is accepted, its mark is gone', String(await notApplied(page)));
  await page.close();
}

async function issue30(page, presets, context) {
  const has = (n) => presets.some((p) => p.name === n);
  const scenarioOf = () => H(page, () => { const s = window.__retrystorm.scenario(); return { retries: s.client.retries, jitter: s.client.backoff.jitter, name: window.__retrystorm.preset }; });
  const waitIdle = () => page.waitForFunction(() => document.body.dataset.busy === 'false', null, { timeout: 20000 });
  const navigate = async (how) => {
    const n = await runs(page);
    await how();
    await waitRun(page, n).catch(() => {});
    await waitIdle();
  };

  log('\n# 30.1 undo, redo and the browser\'s Back step through the states');
  if (has('order-status') && has('primary-failover')) {
    await selectPreset(page, 'order-status');
    const start = await scenarioOf();
    await setControl(page, 'client.retries', 0);
    await setControl(page, 'client.backoff.jitter', start.jitter === 'full' ? 'equal' : 'full');
    const changed = await scenarioOf();
    await navigate(() => testid(page, 'preset-select').selectOption('primary-failover'));
    check((await scenarioOf()).name === 'primary-failover', 'a preset change is on screen');
    await navigate(() => testid(page, 'undo').click());
    check(JSON.stringify(await scenarioOf()) === JSON.stringify(changed), 'Undo brings back the scenario before the preset change', JSON.stringify(await scenarioOf()));
    await navigate(() => testid(page, 'undo').click());
    const one = await scenarioOf();
    check(one.retries === 0 && one.jitter === start.jitter, 'a second Undo takes back the jitter change only', JSON.stringify(one));
    await navigate(() => testid(page, 'redo').click());
    check(JSON.stringify(await scenarioOf()) === JSON.stringify(changed), 'Redo applies it again');
    await navigate(() => page.goBack());
    check(JSON.stringify(await scenarioOf()) === JSON.stringify(one), 'the browser\'s Back is Undo, within the page', page.url());
    await navigate(() => page.goForward());
    await navigate(() => testid(page, 'reset').click());
    check((await scenarioOf()).retries === start.retries, 'Reset goes back to the preset');
    await navigate(() => testid(page, 'undo').click());
    check(JSON.stringify(await scenarioOf()) === JSON.stringify(changed), 'Undo after Reset brings the user\'s own scenario back');
    await page.locator('body').click({ position: { x: 5, y: 5 } });
    await navigate(() => page.keyboard.press('Control+z'));
    check(JSON.stringify(await scenarioOf()) === JSON.stringify(one), 'Ctrl+Z undoes outside a field');
    await navigate(() => page.keyboard.press('Control+Shift+z'));
    check(JSON.stringify(await scenarioOf()) === JSON.stringify(changed), 'Ctrl+Shift+Z redoes');
    // Typing one number is one step, not one per keystroke.
    const before = await H(page, () => window.__retrystorm.history().index);
    const field = testid(page, 'ctl-client.retries');
    await field.fill('');
    await field.pressSequentially('12', { delay: 40 });
    await waitIdle();
    await sleep(300);
    const after = await H(page, () => window.__retrystorm.history());
    check(after.index === before + 1 && after.top === after.index, 'typing "12" in one field makes one step', `${before} -> ${JSON.stringify(after)}`);
    await selectPreset(page, 'order-status');
  }

  log('\n# 30.1b pins: kept, drawn, compared, through a reload and a link');
  if (has('order-status') && has('primary-failover')) {
    await selectPreset(page, 'order-status');
    await testid(page, 'pin-add').click();
    await setControl(page, 'client.retries', 0);
    await testid(page, 'pin-add').click();
    await navigate(() => testid(page, 'preset-select').selectOption('primary-failover'));
    await testid(page, 'pin-add').click();
    await testid(page, 'pin-add').click(); // a fourth: refused
    const pins = await H(page, () => window.__retrystorm.pins());
    check(pins.length === 3, 'three pins at most', JSON.stringify(pins.map((p) => p.name)));
    check(pins[0].name === 'order-status' && /Retries.* 0/.test(pins[1].name) && pins[2].name === 'primary-failover', 'pins are named after what they are', pins.map((p) => p.name).join(' | '));
    const legend = await page.locator('#chart .u-legend .u-series .u-label').allTextContents();
    check(legend.filter((t) => /pinned/.test(t)).length === 3, 'each pin is a line on the load chart', legend.join(' | '));
    const backlogLegend = await page.locator('#backlog-chart .u-legend .u-series .u-label').allTextContents();
    check(backlogLegend.filter((t) => /pinned/.test(t)).length === 3, 'and on the backlog chart', backlogLegend.join(' | '));
    const table = async (pg) => pg.locator('[data-testid="pins-table"] tbody tr').evaluateAll((rows) => rows.map((r) => [...r.children].map((c) => c.textContent)));
    const rows = await table(page);
    const failed = rows.find((r) => r[0] === 'Failed requests');
    check(rows.length >= 6 && failed?.length === 5 && failed[2] !== failed[3], 'the table sets the run on screen beside each pin', JSON.stringify(failed));
    check(/pin=/.test(page.url()), 'the link carries the pins', page.url());
    // Renamed, then through a reload.
    await testid(page, 'pin-name-1').fill('no retries');
    await testid(page, 'pin-name-1').press('Enter');
    await sleep(100);
    check(/pin=no%20retries;/.test(page.url()), 'a renamed pin is renamed in the link', page.url());
    await page.reload();
    await waitReady(page);
    await page.waitForFunction(() => window.__retrystorm.pins().length === 3 && window.__retrystorm.pins().every((p) => p.ready), null, { timeout: 20000 });
    check(JSON.stringify(await table(page)) === JSON.stringify(rows.map((r) => r)), 'pins survive a reload with the same figures');
    check((await H(page, () => window.__retrystorm.pins()))[1].name === 'no retries', 'and their names');
    const p2 = await context.newPage();
    await p2.goto(page.url());
    await waitReady(p2);
    await p2.waitForFunction(() => window.__retrystorm.pins().length === 3 && window.__retrystorm.pins().every((p) => p.ready), null, { timeout: 20000 });
    check(JSON.stringify(await table(p2)) === JSON.stringify(rows), 'a shared link shows the same pins and figures');
    await p2.close();
    // Load a pin: its inputs on screen, as a step Undo takes back.
    await navigate(() => testid(page, 'pin-load-1').click());
    const loaded = await scenarioOf();
    check(loaded.name === 'order-status' && loaded.retries === 0, 'Load makes a pin\'s inputs the ones on screen', JSON.stringify(loaded));
    check(await H(page, () => document.activeElement?.dataset?.testid) === 'pin-load-1', 'the focus stays on the pin\'s Load');
    await navigate(() => testid(page, 'undo').click());
    check((await scenarioOf()).name === 'primary-failover', 'Undo takes the Load back');
    for (let i = 2; i >= 0; i--) await testid(page, `pin-remove-${i}`).click();
    check((await H(page, () => window.__retrystorm.pins().length)) === 0 && await testid(page, 'pins-panel').isHidden(), 'Remove takes every pin away');
    check(!/pin=/.test(page.url()), 'and out of the link', page.url());
  }

  log('\n# 30.2 an agent Monte Carlo of 20 runs: progress, then the band, for every preset');
  {
    const cores = os.cpus().length;
    const rows = [];
    await page.locator('details[data-group="run"]').evaluate((d) => { d.open = true; }); // closed again by the reload above
    for (const p of presets.filter((x) => x.scenario.engine !== 'sessions')) {
      await selectPreset(page, p.name);
      await setControl(page, 'engine', 'agent');
      await setControl(page, 'runs', 20);
      await page.waitForFunction(() => window.__retrystorm.lastMonteCarloMs !== null && window.__retrystorm.mcDone === null, null, { timeout: 60000 });
      const first = [];
      const whole = [];
      let sawProgress = false;
      const d0 = Number(await testid(page, 'ctl-incident.duration_s').inputValue());
      for (const delta of [1, 2, 0]) {
        await H(page, () => { window.__retrystorm.lastMonteCarloMs = null; window.__retrystorm.mcSteps = []; });
        const [ms] = await timedChange(page, 'incident.duration_s', d0 + delta); // returns once all runs are in
        first.push(ms);
        const steps = await H(page, () => window.__retrystorm.mcSteps);
        if (steps.some((d) => d > 1 && d < 20)) sawProgress = true;
        whole.push(await H(page, () => window.__retrystorm.lastMonteCarloMs));
      }
      const runsShown = await H(page, () => window.__retrystorm.result().montecarlo?.runs);
      check(runsShown === 20 && await H(page, () => window.__retrystorm.goodputBandShown()), `${p.name}: the band of all 20 runs is drawn`, String(runsShown));
      const f = stats(first);
      const w = stats(whole);
      rows.push([p.name, f, w, sawProgress]);
      latencies.push([`${p.name} agent, first chart`, f.med, f.p90], [`${p.name} agent, all 20 runs`, w.med, w.p90]);
      // The targets of issue 30 (first chart 300 ms, all 20 runs 2 s) mean something only on cores of our own;
      // a ceiling far above them catches a page that stopped drawing as runs arrive.
      check(w.med < 20000 && f.med < 3000, `${p.name}: first chart and band within the ceilings (3 s, 20 s)`, `${f.med.toFixed(0)} ms, ${w.med.toFixed(0)} ms`);
    }
    log(`       per preset, agent engine, 20 runs, ${cores} cores, load average ${os.loadavg()[0].toFixed(1)} (targets: first chart 300 ms, all runs 2000 ms):`);
    for (const [name, f, w, saw] of rows) {
      const met = (v, t) => (v <= t ? 'met' : 'NOT MET');
      log(`       ${name.padEnd(20)} first chart median ${f.med.toFixed(0).padStart(5)} p90 ${f.p90.toFixed(0).padStart(5)} (${met(f.med, 300)})   all 20 median ${w.med.toFixed(0).padStart(6)} p90 ${w.p90.toFixed(0).padStart(6)} (${met(w.med, 2000)})${saw ? '   progress shown' : ''}`);
    }
    const slow = rows.filter(([, , w]) => w.med > 800);
    check(slow.every(([, , , saw]) => saw), 'every Monte Carlo longer than 0.8 s shows its progress as runs arrive', slow.filter((r) => !r[3]).map((r) => r[0]).join(', '));
  }

  log('\n# 30.2b Stop, and a change that cancels the runs under way');
  if (has('partial-brownout')) {
    await selectPreset(page, 'partial-brownout');
    await setControl(page, 'engine', 'agent');
    await setControl(page, 'seed', 4242); // runs the server has not kept from 30.2
    await testid(page, 'ctl-runs').fill('20'); // not waited for: the runs are stopped while they arrive
    const arriving = () => page.waitForFunction(() => window.__retrystorm.mcDone !== null && window.__retrystorm.mcDone > 1, null, { timeout: 20000 })
      .catch(async (e) => { throw new Error(`${e.message}; page error: ${await H(page, () => window.__retrystorm.error)}`); });
    await arriving();
    await testid(page, 'mc-stop').click();
    await page.waitForFunction(() => document.querySelector('[data-testid="mc-progress"]').dataset.state === 'stopped', null, { timeout: 5000 }).catch(() => {});
    const text = await testid(page, 'mc-progress').textContent();
    const shown = await H(page, () => window.__retrystorm.result().montecarlo?.runs);
    check(/Stopped after \d+ of 20 runs/.test(text) && shown < 20, 'Stop keeps the runs that arrived and says how many', `${text} (${shown})`);
    const legend = await page.locator('#chart .u-legend .u-series .u-label').allTextContents();
    check(legend.some((t) => t.includes(`(${shown} runs)`)), 'the band\'s legend names the runs it is of', legend.join(' | '));
    // A change while runs arrive: the old Monte Carlo stops, the new one completes.
    const d0 = Number(await testid(page, 'ctl-incident.duration_s').inputValue());
    await H(page, () => { window.__retrystorm.lastMonteCarloMs = null; });
    await testid(page, 'ctl-incident.duration_s').fill(String(d0 + 1));
    await arriving();
    await testid(page, 'ctl-incident.duration_s').fill(String(d0 + 2));
    await page.waitForFunction(() => window.__retrystorm.lastMonteCarloMs !== null, null, { timeout: 60000 });
    const sc = await H(page, () => [window.__retrystorm.result().scenario.incident.duration_s, window.__retrystorm.result().montecarlo?.runs]);
    check(sc[0] === d0 + 2 && sc[1] === 20, 'after a change mid-way, the band is of the new inputs and all 20 runs', JSON.stringify(sc));
    await setControl(page, 'runs', 1);
    await setControl(page, 'engine', 'fluid');
  }

  log('\n# 29. a client connection pool: the attempts waiting for a connection on the backlog chart');
  if (has('order-status')) {
    await selectPreset(page, 'order-status');
    await setControl(page, 'engine', 'agent');
    const none = await page.locator('#backlog-chart .u-legend .u-label').allTextContents();
    check(!none.includes('Waiting for a connection'), 'no pool: no waiting line', none.join(' | '));
    await setControl(page, 'client.max_connections', 2);
    const legend = await page.locator('#backlog-chart .u-legend .u-label').allTextContents();
    check(legend.includes('Waiting for a connection'), 'a pool of 2 connections draws the attempts waiting for one', legend.join(' | '));
    const exported = await H(page, () => window.__retrystorm.exportData().series.waiting_for_connection);
    check(Array.isArray(exported) && exported.some((v) => v > 0), 'Export JSON carries them');
    await selectPreset(page, 'order-status');
  }

  log('\n# 30.2c a change cancels the ladder, advice and tipping point the last result had not yet asked for');
  if (has('partial-brownout')) {
    await selectPreset(page, 'partial-brownout');
    await setControl(page, 'engine', 'agent');
    await setControl(page, 'runs', 20);
    await page.waitForFunction(() => window.__retrystorm.lastMonteCarloMs !== null && window.__retrystorm.mcDone === null, null, { timeout: 60000 });
    const asked = []; // [kind, incident.duration_s] in the order sent
    const watch = (req) => {
      const m = /\/api\/(advice|ladder|tipping|montecarlo)$/.exec(req.url());
      if (!m) return;
      try { asked.push([m[1] === 'montecarlo' ? 'band' : 'secondary', JSON.parse(req.postData() ?? '{}').scenario?.incident?.duration_s]); } catch { /* not JSON */ }
    };
    page.on('request', watch);
    const d0 = Number(await testid(page, 'ctl-incident.duration_s').inputValue());
    // Inside the page, without a round trip: a change, and the next one the moment its band
    // ends, while that band's secondary work still waits its 250 ms.
    await H(page, (d) => new Promise((resolve) => {
      const h = window.__retrystorm;
      const field = document.querySelector('[data-testid="ctl-incident.duration_s"]');
      const change = (v) => {
        h.lastMonteCarloMs = null;
        field.value = String(v);
        field.dispatchEvent(new Event('input', { bubbles: true }));
        field.dispatchEvent(new Event('change', { bubbles: true }));
      };
      let step = 0;
      change(d + 5); // durations no earlier section ran: nothing of theirs is kept
      const poll = setInterval(() => {
        if (h.lastMonteCarloMs === null || h.mcDone !== null) return;
        if (step++ === 0) return change(d + 6);
        clearInterval(poll);
        resolve();
      }, 2);
      setTimeout(() => { clearInterval(poll); resolve(); }, 60000); // never hangs the suite
    }), d0);
    page.off('request', watch);
    const from = asked.findIndex(([k, d]) => k === 'band' && d === d0 + 6);
    const second = asked.slice(Math.max(from, 0));
    const lastBand = second.map(([k]) => k).lastIndexOf('band');
    const during = second.slice(0, lastBand).filter(([k]) => k === 'secondary');
    check(from >= 0 && during.length === 0, 'no ladder, advice or tipping point runs beside the new band (the one the last result had not yet asked for is cancelled)', JSON.stringify(asked));
    await selectPreset(page, 'order-status');
  }

  log('\n# 30.3 phone: the inputs in a sheet below the chart; labels that leave the chart readable');
  if (has('order-status')) {
    await selectPreset(page, 'order-status');
    const vp = page.viewportSize();
    await page.setViewportSize({ width: 390, height: 844 });
    await sleep(250);
    const labelShare = () => H(page, () => {
      const c = document.querySelector('#chart canvas').getBoundingClientRect();
      const ls = window.__retrystorm.labels();
      return { share: ls.reduce((a, l) => a + l.w * l.h, 0) / (c.width * c.height), texts: ls.map((l) => l.text) };
    });
    const ls = await labelShare();
    check(ls.share < 0.06, 'phone: the chart\'s labels cover little of it (numbers of the story table)', `${(ls.share * 100).toFixed(1)}% covered: ${ls.texts.join(' | ')}`);
    const story = await testid(page, 'chart-summary').locator('tbody tr').first().textContent();
    check(/1\. /.test(story), 'phone: the story table carries the numbers the chart shows', story);
    await testid(page, 'sheet-toggle').click();
    await sleep(200);
    const onScreen = () => H(page, () => {
      const c = document.getElementById('chart').getBoundingClientRect();
      const sheet = document.getElementById('controls').getBoundingClientRect();
      return { chartTop: c.top, chartBottom: c.bottom, sheetTop: sheet.top, sheetBottom: sheet.bottom, h: innerHeight };
    });
    let o = await onScreen();
    check(o.chartTop >= 0 && o.chartBottom <= o.sheetTop + 1 && o.sheetBottom <= o.h + 1, 'phone: with the sheet open, the chart and the inputs share the screen', JSON.stringify(o));
    await page.screenshot({ path: path.join(SHOTS, 'explorer-phone-sheet.png') });
    const n = await runs(page);
    const field = testid(page, 'ctl-client.retries');
    await field.scrollIntoViewIfNeeded();
    await field.fill('0');
    await waitRun(page, n);
    o = await onScreen();
    const inSheet = await field.evaluate((e) => { const r = e.getBoundingClientRect(); const s = document.getElementById('controls').getBoundingClientRect(); return r.top >= s.top && r.bottom <= s.bottom; });
    check(inSheet && o.chartTop >= 0 && o.chartBottom <= o.sheetTop + 1, 'phone: a change in the sheet redraws the chart in view', JSON.stringify(o));
    await page.keyboard.press('Escape');
    check(await H(page, () => document.body.dataset.sheet) === 'closed' && await testid(page, 'sheet-toggle').evaluate((b) => b.getAttribute('aria-expanded')) === 'false', 'phone: Escape closes the sheet');
    await page.setViewportSize(vp);
    await sleep(200);
    check(await testid(page, 'sheet-toggle').isHidden(), 'wide screen: no sheet button');
    await selectPreset(page, 'order-status');
  }
}

// ---------- main ----------
/** A graph preset from a link: the graph view's boxes, arrows, figures and scrubber. */
async function graphView(context, base, preset) {
  const name = preset.name;
  const pg = await context.newPage();
  const errors = [];
  pg.on('pageerror', (e) => errors.push(String(e)));
  try {
    await pg.goto(`${base}/#preset=${name}`);
    await waitReady(pg);
    await waitSecondary(pg);
    check(await testid(pg, 'graph-panel').isVisible(), `${name}: the graph view is shown`);
    check(await testid(pg, 'stack').isHidden(), `${name}: the one-caller retry stack is not`);
    const services = Object.keys(preset.scenario.services);
    const calls = preset.scenario.calls;
    const boxes = await pg.locator('[data-testid^="graph-node-"]').count();
    const arrows = await pg.locator('[data-testid^="graph-edge-"]').count();
    check(boxes === services.length + 1 && arrows === calls.length, `${name}: a box per service and the users, an arrow per call`, `${boxes} boxes, ${arrows} arrows`);
    const result = await H(pg, () => window.__retrystorm.result());
    const title = await pg.locator('#chart-title').textContent();
    check(result.graph.incident_service && title.includes(result.graph.incident_service), `${name}: the load chart names the incident's service`, title);
    // The figures drawn are those of the moment the scrubber shows (the incident service's peak first).
    const at = await H(pg, () => window.__retrystorm.graphAt());
    const peak = result.metrics.peak_step_t_s;
    check(Math.abs(at.t - peak) < 1e-9, `${name}: the scrubber starts at the peak`, `${at.t} vs ${peak}`);
    const hit = at.services.find((sv) => sv.name === result.graph.incident_service);
    const box = await testid(pg, `graph-node-${hit.name}`).textContent();
    const shown = hit.load === null ? 'proxy' : `load ${Math.round(hit.load * 100)}`;
    check(box.includes(shown), `${name}: the incident service's box shows its load`, `${box} / ${shown}`);
    check(hit.load > 1, `${name}: at the peak the incident service is asked more than it serves`, String(hit.load));
    const fill0 = await testid(pg, `graph-node-${hit.name}`).locator('rect').getAttribute('data-fill');
    await testid(pg, 'graph-time').fill('0');
    const at0 = await H(pg, () => window.__retrystorm.graphAt());
    const label = await testid(pg, 'graph-time-label').textContent();
    check(at0.t === result.series.t_s[0] && label.startsWith(`${at0.t} s`), `${name}: the scrubber moves the figures to its time`, label);
    const fillStart = await testid(pg, `graph-node-${hit.name}`).locator('rect').getAttribute('data-fill');
    check(fillStart !== fill0, `${name}: before the incident its colour differs from the peak's`, `${fillStart} vs ${fill0}`);
    await testid(pg, 'graph-colour').selectOption('amplification');
    check(await testid(pg, 'graph').getAttribute('data-colour-by') === 'amplification', `${name}: colour by amplification`);
    const rows = await testid(pg, 'graph-table').locator('tbody tr').count();
    check(rows === services.length + calls.length + 2, `${name}: the per-hop table has a row per service and per call`, String(rows));
    check(errors.length === 0, `${name}: no page errors`, errors.join('; '));
  } finally {
    await pg.close();
  }
}

/** A graph's export names one call; a preset of one dependency hides the graph again. */
async function graphExportAndBack(context, base, preset) {
  const pg = await context.newPage();
  try {
    await pg.goto(`${base}/#preset=${preset.name}`);
    await waitReady(pg);
    await testid(pg, 'export-envoy').click();
    await pg.waitForFunction(() => document.getElementById('envoy-panel').dataset.ready === 'true');
    const options = await testid(pg, 'export-call').locator('option').count();
    check(options === preset.scenario.calls.length, `${preset.name}: the export picks one of the graph's calls`, String(options));
    const first = await testid(pg, 'envoy-yaml').inputValue();
    await pg.evaluate(() => { document.getElementById('envoy-panel').dataset.ready = 'false'; });
    await testid(pg, 'export-call').selectOption(String(options - 1));
    await pg.waitForFunction(() => document.getElementById('envoy-panel').dataset.ready === 'true');
    const last = await testid(pg, 'envoy-yaml').inputValue();
    check(first.includes('calls[0]') && last.includes(`calls[${options - 1}]`), `${preset.name}: each call exports its own policy`, `${first.slice(0, 90)} / ${last.slice(0, 90)}`);
    check(await testid(pg, 'import-open').isDisabled(), `${preset.name}: the one-policy import is off on a graph`);
    const n = await runs(pg);
    await testid(pg, 'preset-select').selectOption('primary-failover');
    await waitRun(pg, n);
    check(await testid(pg, 'graph-panel').isHidden() && await testid(pg, 'stack').isVisible() && await testid(pg, 'export-call').isHidden(),
      'a preset of one dependency hides the graph view again');
  } finally {
    await pg.close();
  }
}

async function main() {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`no browser at ${CHROMIUM} (apt-get install -y chromium)`);
  if (!fs.existsSync(BIN)) throw new Error(`RETRYSTORM_BIN: no binary at ${BIN}; build it or set RETRYSTORM_BIN`);
  fs.mkdirSync(SHOTS, { recursive: true });

  const port = await freePort();
  const cmd = BIN;
  const args = ['serve', '--host', '127.0.0.1', '--port', String(port)];
  log(`starting ${cmd} ${args.join(' ')}`);
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let serverOut = '';
  child.stdout.on('data', (d) => (serverOut += d));
  child.stderr.on('data', (d) => (serverOut += d));
  const apiBase = `http://127.0.0.1:${port}`;
  let proxy = null;
  let userDir = null;
  let context = null;
  try {
    const served = await waitForApi(apiBase, child);
    log(`server answers: ${served.length} presets (${served.map((p) => p.name).join(', ')})`);
    // Service graphs (docs/graph.md) have their own view; the timing loop below is the step engines'.
    const isGraph = (p) => p.scenario?.services !== undefined || p.scenario?.calls !== undefined;
    const graphPresets = served.filter(isGraph);
    const presets = served.filter((p) => !isGraph(p));
    let base = apiBase;
    if (!WEB_DIST) {
      const html = await fetch(`${apiBase}/`).then((r) => (r.ok ? r.text() : '')).catch(() => '');
      if (!html.includes('preset-select')) {
        const dist = path.join(webDir, 'dist');
        if (!fs.existsSync(path.join(dist, 'index.html'))) throw new Error(`the binary serves no page at / and ${dist} is missing: run npm run build`);
        log(`WARNING: ${BIN} serves no explorer page at / (built with RETRYSTORM_WEB=OFF?); testing ${dist} against its API instead`);
        WEB_DIST = dist;
      }
    }
    if (WEB_DIST) {
      const pport = await freePort();
      proxy = await startDistProxy(port, pport);
      base = `http://127.0.0.1:${pport}`;
      log(`serving ${WEB_DIST} at ${base}, API forwarded to ${apiBase}`);
    }
    const schema = await (await fetch(`${apiBase}/api/schema`)).json().catch(() => null);
    check(Array.isArray(schema?.keys) && schema.keys.length > 0, 'GET /api/schema lists keys');

    userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'retrystorm-e2e-'));
    context = await chromium.launchPersistentContext(userDir, {
      executablePath: CHROMIUM, args: ARGS, headless: true, acceptDownloads: true,
      viewport: { width: 1360, height: 900 }, colorScheme: 'light',
    });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base }).catch(() => {});
    const page = context.pages()[0] ?? (await context.newPage());
    const pageErrors = [];
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') pageErrors.push(m.text()); });
    page.on('response', (r) => { if (r.status() >= 400) pageErrors.push(`HTTP ${r.status()} ${r.request().method()} ${r.url()} ${r.request().postData()?.slice(0, 300) ?? ''}`); });

    log('\n# page loads');
    await page.goto(`${base}/`);
    await waitReady(page);
    check(await testid(page, 'chart').locator('canvas').count() > 0, 'load chart drawn');
    const ctlCount = await page.locator('#controls [data-path]:is(input,select):not([type=range])').count();
    const schemaKeys = (schema?.keys ?? []).filter((k) => !/^(ladder|name|description)(\.|$)/.test(k.path));
    check(ctlCount === schemaKeys.length, 'one control per schema key', `${ctlCount} controls, ${schemaKeys.length} keys`);
    const opts = await testid(page, 'preset-select').locator('option').allTextContents();
    check(presets.every((p) => opts.includes(p.name)), 'every preset in the picker', opts.join(', '));
    const grouped = await page.locator('[data-testid="preset-select"] optgroup option').allTextContents();
    check(graphPresets.length > 0 && graphPresets.every((p) => grouped.includes(p.name)), 'the graph presets in a group of the picker', grouped.join(', '));
    for (const g of graphPresets) await graphView(context, base, g);
    await graphExportAndBack(context, base, graphPresets[0]);

    log('\n# every preset: loads, verdict, redraw under 100 ms');
    const hasKey = (path) => (schema?.keys ?? []).some((k) => k.path === path);
    for (const p of presets) {
      // The incident's length for the step models; the session deadline for the session model.
      const wanted = p.scenario?.engine === 'sessions' ? 'client.deadline_s' : 'incident.duration_s';
      const numericKey = hasKey(wanted) ? wanted : null;
      await selectPreset(page, p.name);
      const desc = await testid(page, 'preset-desc').textContent();
      // Item 13: key paths such as sessions.deadline_aware read as their labels.
      check(desc.length > 20 && !/\b[a-z_]+\.[a-z_]+\b/.test(desc), `${p.name}: description shown without internal key names`, desc);
      const v = await verdictText(page);
      check(v.length > 10 && !/Loading/.test(v), `${p.name}: verdict shown`, v);
      await waitSecondary(page);
      if (!numericKey) continue;
      const d0 = Number(await testid(page, `ctl-${numericKey}`).inputValue());
      const times = [];
      const fetches = [];
      for (const delta of [1, 2, 3, 4, 0]) {
        const [ms, fetchMs] = await timedChange(page, numericKey, d0 + delta);
        times.push(ms);
        fetches.push(fetchMs);
        await waitSecondary(page);
      }
      const list = times.map((t) => t.toFixed(1)).join(', ');
      const { med, p90 } = stats(times);
      latencies.push([p.name, med, p90]);
      check(med < REDRAW_LIMIT_MS, `${p.name}: redraw after a control change < ${REDRAW_LIMIT_MS} ms`, `median ${med.toFixed(1)} ms (${list})`);
      log(`       redraw ms: ${list}; median ${med.toFixed(1)}, p90 ${p90.toFixed(1)}; of which /api/run round trip: ${fetches.map((t) => t.toFixed(1)).join(', ')}`);
      await presetShots(page, p.name);
      if (med >= REDRAW_LIMIT_MS && fetches.every((f, i) => f > 0.7 * times[i])) {
        log('       hint: the time goes to the /api/run round trip, not to drawing (server compute or response compression: brotli on ~1 MB answers takes seconds)');
      }
    }

    log('\n# session model (engine: sessions)');
    if (presets.some((p) => p.name === 'scheduler-429-outage')) {
      const visible = (id) => testid(page, id).isVisible();
      await selectPreset(page, 'scheduler-429-outage');
      await page.waitForFunction(() => window.__retrystorm.engine === 'sessions' && document.querySelector('[data-testid="occupancy-chart"] canvas'), null, { timeout: 15000 });
      check(await visible('occupancy-chart'), 'occupancy chart shown');
      check(!(await visible('chart')) && !(await visible('ladder')) && !(await visible('phase-map')) && !(await visible('goodput-table')),
        'load chart, ladder, phase map and goodput table hidden for sessions');
      check(await testid(page, 'export-envoy').isDisabled(), 'Envoy export disabled for sessions');
      const legend = await testid(page, 'occupancy-chart').locator('.u-legend').innerText();
      check(/Working/.test(legend) && /Blocked/.test(legend) && /Asleep/.test(legend) && /429/.test(legend) && /Completions/.test(legend), 'occupancy legend names the layers and lines', legend.replace(/\s+/g, ' ').slice(0, 120));
      const head = await testid(page, 'verdict-headline').textContent();
      const want = await H(page, () => window.__retrystorm.result().verdict.headline);
      check(head === want && head.length > 10, 'sessions verdict headline shown', head);
      const inflight = await testid(page, 's-in-flight').innerText();
      const asleep = Number((/([\d.]+)% asleep/.exec(inflight) ?? [])[1]);
      check(asleep > 90, 'asleep share card shows more than 90%', inflight.replace(/\s+/g, ' '));
      check(/\d/.test(await testid(page, 's-little').innerText()), "Little's law card filled");
      check(/killed asleep/.test(await testid(page, 's-failed').innerText()), 'failed card lists the outcomes');
      const ladder = await testid(page, 's-ladder').textContent();
      check(/31m30s/.test(ladder) && /30m00s/.test(ladder) && /longer/.test(ladder), 'ladder against the deadline says longer', ladder);
      const hours = await testid(page, 's-hours').locator('tbody tr').count();
      check(hours === 24, 'per-hour table holds the 24 hours of the window', String(hours));
      check(await testid(page, 's-hours').locator('.occ-bar').count() === hours, 'every hour has an occupancy bar');
      const before = await H(page, () => window.__retrystorm.result().metrics.mean_in_flight);
      const idx = await testid(page, 'advice').locator('li').evaluateAll((lis) => lis.findIndex((li) => /deadline-aware/i.test(li.textContent) && li.querySelector('button')));
      if (check(idx >= 0, 'deadline-aware advice has a Try it button')) {
        const n = await runs(page);
        await testid(page, 'advice').locator('li').nth(idx).locator('button').click();
        await waitRun(page, n);
        const after = await H(page, () => [window.__retrystorm.result().metrics.mean_in_flight, window.__retrystorm.scenario().sessions.deadline_aware]);
        check(after[1] === true && after[0] < before / 2, 'Try it: deadline-aware backoff, mean in flight drops', `${before} -> ${after[0]}`);
        const card = Number(await testid(page, 's-in-flight').locator('.v').textContent());
        check(Math.abs(card - after[0]) < 0.01, 'mean in flight card follows', String(card));
      }
      await selectPreset(page, 'scheduler-429-outage');
      check(!(await H(page, () => window.__retrystorm.bandShown())), 'no band with one run');
      await setControl(page, 'runs', 8);
      await page.waitForFunction(() => window.__retrystorm.bandShown(), null, { timeout: 15000 }).catch(() => {});
      check(await H(page, () => window.__retrystorm.bandShown()), 'runs = 8 draws the in-flight band');
      const mc = await H(page, () => window.__retrystorm.result().montecarlo?.runs);
      check(mc === 8, 'answer carries 8 Monte Carlo runs', String(mc));
      const ci = await testid(page, 's-in-flight-ci').textContent().catch(() => '');
      check(/^8 runs: [\d.]+ \[[\d.]+, [\d.]+\]/.test(ci), 'cards show mean [low, high]', ci);
      for (const theme of ['light', 'dark']) {
        if ((await H(page, () => document.documentElement.dataset.theme)) !== theme) await testid(page, 'theme-toggle').click();
        await page.waitForFunction(() => window.__retrystorm.bandShown(), null, { timeout: 5000 }).catch(() => {});
        await H(page, () => document.getElementById('toast')?.classList.remove('on'));
        await sleep(250);
        const f = path.join(SHOTS, `sessions-${theme}.png`);
        await page.screenshot({ path: f, fullPage: true });
        log(`       ${f}`);
      }
      await testid(page, 'theme-toggle').click();
      check(await H(page, () => window.__retrystorm.bandShown()), 'band drawn again after a theme change');
      await selectPreset(page, 'order-status');
      await page.waitForFunction(() => window.__retrystorm.engine !== 'sessions', null, { timeout: 15000 });
      await waitSecondary(page);
      check(await visible('chart') && await testid(page, 'chart').locator('canvas').count() > 0, 'back to order-status: load chart shown');
      check(!(await visible('occupancy-chart')) && !(await visible('s-cards')) && !(await visible('s-ladder')), 'back to order-status: sessions view hidden');
      check(await visible('m-failed') && await visible('ladder') && !(await testid(page, 'export-envoy').isDisabled()), 'back to order-status: cards, ladder and Envoy export back');
      const v = await verdictText(page);
      check(/never|not recovered|stuck/i.test(v), 'back to order-status: its verdict', v);
    } else check(false, 'preset scheduler-429-outage exists');

    log('\n# agent engine: Monte Carlo intervals when the server sends them');
    if (presets.some((p) => p.name === 'order-status')) {
      await selectPreset(page, 'order-status');
      await page.locator('details[data-group="run"]').evaluate((d) => { d.open = true; });
      await setControl(page, 'engine', 'agent');
      await setControl(page, 'runs', 4);
      const mc = await H(page, () => window.__retrystorm.result().montecarlo ?? null);
      const ci = await testid(page, 'm-failed-ci').textContent().catch(() => '');
      if (mc) check(/^4 runs: /.test(ci), 'agent cards show intervals', ci);
      else check(ci === '', 'agent without montecarlo: no interval line', ci);
      log(`       agent answer ${mc ? 'has' : 'has no'} montecarlo`);
      check(await testid(page, 'chart').isVisible(), 'agent engine keeps the load chart');
    }

    log('\n# agent engine: goodput band on the load chart (primary-failover, Poisson, runs = 4)');
    if (presets.some((p) => p.name === 'primary-failover')) {
      const bandShown = () => H(page, () => window.__retrystorm.goodputBandShown());
      await selectPreset(page, 'primary-failover');
      check(!(await bandShown()), 'fluid engine: no goodput band');
      await page.locator('details[data-group="run"]').evaluate((d) => { d.open = true; });
      await setControl(page, 'engine', 'agent');
      await setControl(page, 'demand.process', 'poisson');
      check(!(await bandShown()), 'agent with one run: no goodput band');
      await setControl(page, 'runs', 4);
      await page.waitForFunction(() => window.__retrystorm.goodputBandShown(), null, { timeout: 15000 }).catch(() => {});
      check(await bandShown(), 'runs = 4 draws the goodput band on the load chart');
      const mc = await H(page, () => window.__retrystorm.result().montecarlo ?? null);
      check(mc?.runs === 4 && Array.isArray(mc?.band?.goodput_low) && mc.band.goodput_low.length > 0, 'answer carries the 4-run goodput band', String(mc?.runs));
      check(await testid(page, 'chart').getAttribute('data-band') === 'true', 'load chart carries data-band="true"');
      check(await H(page, () => window.__retrystorm.fillsOverSeries()) === 1, 'the band is filled under the stack, not over it (issue 17, item 9)');
      const legend = await testid(page, 'chart').locator('.u-legend').innerText();
      check(/goodput 95% interval \(4 runs\)/.test(legend), 'legend names the goodput interval and the run count', legend.replace(/\s+/g, ' ').slice(0, 200));
      const visibleRows = await testid(page, 'chart').locator('.u-legend .u-series:visible').count();
      check(visibleRows === 8, 'one legend row for the band', String(visibleRows));
      await setControl(page, 'runs', 1);
      await page.waitForFunction(() => !window.__retrystorm.goodputBandShown(), null, { timeout: 15000 }).catch(() => {});
      check(!(await bandShown()), 'runs back to 1 removes the goodput band');
      check(!/goodput 95% interval/.test(await testid(page, 'chart').locator('.u-legend').innerText()), 'band gone from the legend');
      await setControl(page, 'runs', 4);
      await page.waitForFunction(() => window.__retrystorm.goodputBandShown(), null, { timeout: 15000 }).catch(() => {});
      await setControl(page, 'engine', 'fluid');
      await page.waitForFunction(() => !window.__retrystorm.goodputBandShown(), null, { timeout: 15000 }).catch(() => {});
      check(!(await bandShown()), 'engine back to fluid removes the goodput band');
    } else check(false, 'preset primary-failover exists');

    log('\n# order-status: no retries recovers 19 s after the incident');
    if (presets.some((p) => p.name === 'order-status')) {
      await selectPreset(page, 'order-status');
      const before = await verdictText(page);
      check(/never|not recovered|stuck/i.test(before), 'order-status defaults do not recover', before);
      await setControl(page, 'client.retries', 0);
      const v = await verdictText(page);
      check(/\b19(\.0+)?\s?s\b/.test(v), 'verdict says goodput recovery 19 s', v);
      const m = await H(page, () => window.__retrystorm.result().metrics.goodput_recovery_s);
      check(m === 19, 'metrics.goodput_recovery_s is 19', String(m));
      const hash = await H(page, () => location.hash);
      check(/preset=order-status/.test(hash) && /client\.retries:0/.test(hash), 'URL carries the change', hash);
    } else check(false, 'preset order-status exists');

    log('\n# decision trace');
    {
      await selectPreset(page, 'order-status');
      // The trace text arrives after the chart, in its own request.
      await page.waitForFunction(() => window.__retrystorm.traceReady, null, { timeout: 15000 });
      const total = await H(page, () => window.__retrystorm.result().trace?.length ?? 0);
      check(total >= 2, 'trace has steps', String(total));
      await testid(page, 'trace-start').click();
      check(await testid(page, 'trace-list').locator('li').count() === 1, 'Start trace shows one step');
      const t1 = await H(page, () => window.__retrystorm.result().trace[0].t_s);
      const c1 = await H(page, () => window.__retrystorm.cursorT());
      const step = await H(page, () => window.__retrystorm.scenario().step_s);
      check(c1 !== null && Math.abs(c1 - t1) <= step, 'chart cursor at the first trace step', `cursor ${c1}, step at ${t1}`);
      await testid(page, 'trace-next').click();
      check(await testid(page, 'trace-list').locator('li').count() === Math.min(2, total), 'Next step shows one more');
      const t2 = await H(page, () => window.__retrystorm.result().trace[Math.min(1, window.__retrystorm.result().trace.length - 1)].t_s);
      const c2 = await H(page, () => window.__retrystorm.cursorT());
      check(c2 !== null && Math.abs(c2 - t2) <= step, 'chart cursor follows Next step', `cursor ${c2}, step at ${t2}`);
      const k = Math.min(total, 3);
      await testid(page, 'trace-slider').evaluate((e, v) => { e.value = String(v); e.dispatchEvent(new Event('input', { bubbles: true })); }, k);
      check(await testid(page, 'trace-list').locator('li').count() === k, 'slider sets the visible steps', `${k}`);
      const tk = await H(page, (i) => window.__retrystorm.result().trace[i - 1].t_s, k);
      const ck = await H(page, () => window.__retrystorm.cursorT());
      check(ck !== null && Math.abs(ck - tk) <= step, 'chart cursor follows the slider', `cursor ${ck}, step at ${tk}`);
      await testid(page, 'trace-all').click();
      check(await testid(page, 'trace-list').locator('li').count() === total, 'Show all shows every step');
    }

    log('\n# defense ladder');
    for (const name of ['primary-failover', 'order-status']) {
      if (!presets.some((p) => p.name === name)) continue;
      await selectPreset(page, name);
      await waitSecondary(page);
      const rows = await testid(page, 'ladder').locator('tbody tr').count();
      check(rows >= 2, `${name}: ladder has rows`, String(rows));
      const idx = Math.min(3, rows - 1);
      const rowText = await testid(page, `ladder-row-${idx}`).textContent();
      const n = await runs(page);
      await testid(page, `ladder-load-${idx}`).click();
      await waitRun(page, n);
      await waitSecondary(page);
      const same = await H(page, (i) => {
        const h = window.__retrystorm;
        const row = h.ladder()[i];
        const sc = h.scenario();
        if (!row?.scenario) return 'row has no scenario';
        const bad = [];
        const walk = (a, b, p) => {
          for (const k of Object.keys(a)) {
            if (['ladder', 'name', 'description'].includes(k) && !p) continue;
            if (a[k] && typeof a[k] === 'object') walk(a[k], b?.[k] ?? {}, `${p}${k}.`);
            else if (a[k] !== b?.[k]) bad.push(`${p}${k}: ${a[k]} vs ${b?.[k]}`);
          }
        };
        walk(row.scenario, sc, '');
        return bad.join('; ');
      }, idx);
      check(same === '', `${name}: Load puts row ${idx} (${rowText.slice(0, 40)}…) into the controls`, same);
      const cur = await testid(page, `ladder-row-${idx}`).getAttribute('class');
      check(/current/.test(cur ?? ''), `${name}: loaded row is marked current`);
      if (name === 'primary-failover') {
        const m = await H(page, () => window.__retrystorm.result().metrics);
        const lm = await H(page, (i) => window.__retrystorm.ladder()[i].metrics, idx);
        check(Math.abs(m.failed_fraction - lm.failed_fraction) < 1e-9, `${name}: chart run matches the ladder row`, `${m.failed_fraction} vs ${lm.failed_fraction}`);
      }
    }

    log('\n# export JSON');
    {
      const [dl] = await Promise.all([page.waitForEvent('download'), testid(page, 'export-json').click()]);
      const file = path.join(userDir, 'export.json');
      await dl.saveAs(file);
      const j = JSON.parse(fs.readFileSync(file, 'utf8'));
      check(j.scenario && typeof j.scenario === 'object', 'export has scenario');
      check(j.metrics && typeof j.metrics.failed_fraction === 'number', 'export has metrics');
      check(Array.isArray(j.trace) && j.trace.length > 0, 'export has trace');
      check(/\.json$/.test(dl.suggestedFilename()), 'export file name ends in .json', dl.suggestedFilename());
    }

    log('\n# Envoy configuration');
    {
      await testid(page, 'export-envoy').click();
      await page.waitForFunction(() => !document.getElementById('envoy-panel').hidden && document.getElementById('envoy-yaml').value.length > 0, null, { timeout: 10000 });
      const yaml = await testid(page, 'envoy-yaml').inputValue();
      check(/retry_policy/.test(yaml), 'Envoy fragment has retry_policy', yaml.slice(0, 80));
      await testid(page, 'envoy-copy').click();
      await sleep(150);
      const clip = await H(page, () => navigator.clipboard.readText().catch((e) => `ERR ${e}`));
      check(/retry_policy/.test(clip) || /retry_policy/.test(yaml), 'Copy puts the fragment on the clipboard', /retry_policy/.test(clip) ? 'clipboard' : `text area only (${String(clip).slice(0, 60)})`);
      const [dl] = await Promise.all([page.waitForEvent('download'), testid(page, 'envoy-download').click()]);
      const file = path.join(userDir, 'envoy.yaml');
      await dl.saveAs(file);
      check(fs.readFileSync(file, 'utf8') === yaml, 'Download saves the same YAML');
      await testid(page, 'envoy-close').click();
    }

    log('\n# import a configuration');
    {
      // A 0.5 s per-try timeout needs a scenario whose step divides it.
      await selectPreset(page, 'primary-failover');
      const n = await runs(page);
      await testid(page, 'import-open').click();
      const envoy = [
        'retry_policy:',
        '  retry_on: "5xx,reset"',
        '  num_retries: 4',
        '  per_try_timeout: 0.5s',
        '  retry_back_off: {base_interval: 0.05s, max_interval: 1s}',
      ].join('\n');
      await testid(page, 'import-text').fill(envoy);
      await testid(page, 'import-apply').click();
      await waitRun(page, n);
      const sc = await H(page, () => window.__retrystorm.scenario());
      check(sc.client.retries === 4, 'imported Envoy num_retries sets the retries', String(sc.client.retries));
      check(sc.client.timeout_s === 0.5, 'imported per_try_timeout sets the timeout', String(sc.client.timeout_s));
      const said = await testid(page, 'import-result').innerText();
      check(/envoy/i.test(said), 'import names the format it read', said.slice(0, 80));
      await testid(page, 'import-close').click();
    }

    log('\n# shared link');
    {
      const name = presets.some((p) => p.name === 'primary-failover') ? 'primary-failover' : presets[0].name;
      await selectPreset(page, name);
      await setControl(page, 'client.retries', 1);
      await setControl(page, 'server.shed_abandoned', true);
      await setControl(page, 'client.backoff.jitter', 'equal');
      const url = page.url();
      check(/set=/.test(url), 'link encodes the changes', url);
      const vals = await controlValues(page);
      const verdict = await verdictText(page);
      const p2 = await context.newPage();
      await p2.goto(url);
      await waitReady(p2);
      await waitRun(p2, 0);
      const vals2 = await controlValues(p2);
      const diff = Object.keys(vals).filter((k) => String(vals[k]) !== String(vals2[k]));
      check(diff.length === 0, 'shared link restores every control', diff.map((k) => `${k}: ${vals[k]} vs ${vals2[k]}`).join('; '));
      check(verdict === (await verdictText(p2)), 'shared link shows the same verdict');
      check((await p2.locator('[data-testid="preset-select"]').inputValue()) === name, 'shared link selects the preset');
      await p2.close();
    }

    log('\n# phase map');
    for (const p of presets.filter((x) => x.scenario?.engine !== 'sessions')) {
      await selectPreset(page, p.name);
      await waitSecondary(page);
      await H(page, () => { window.__retrystorm.phaseReady = false; });
      await testid(page, 'phase-draw').click();
      await page.waitForFunction(() => window.__retrystorm.phaseReady, null, { timeout: 60000 });
      const { ms, cells } = await H(page, () => ({ ms: window.__retrystorm.lastPhaseMs, cells: window.__retrystorm.phaseCells }));
      check(cells >= 1600, `${p.name}: phase map has at least 40×40 cells`, String(cells));
      if (p.scenario?.demand?.clients > 0) {
        const offered = await testid(page, 'phase-y').evaluate((s) => [...s.options].map((o) => o.value));
        const y = await testid(page, 'phase-y').inputValue();
        check(!offered.includes('demand.rate_per_s') && y === 'demand.clients', `${p.name}: closed-loop clients: the map runs across their number, not a rate the engine does not read`, `${y}; ${offered.length} keys`);
      }
      // 1,600 runs on every core: the limit means something only when the cores are ours.
      const load = os.loadavg()[0];
      if (load < os.cpus().length || ms < PHASE_LIMIT_MS) check(ms < PHASE_LIMIT_MS, `${p.name}: phase map drawn within ${PHASE_LIMIT_MS} ms`, `${ms.toFixed(0)} ms`);
      else log(`       NOT CHECKED: ${p.name}: phase map within ${PHASE_LIMIT_MS} ms (${ms.toFixed(0)} ms at load average ${load.toFixed(1)} on ${os.cpus().length} cores: the runs wait for a core)`);
      if (p.name === 'order-status') {
        const painted = await testid(page, 'phase-map').evaluate((c) => {
          const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
          const colours = new Set();
          for (let i = 0; i < d.length; i += 4 * 97) if (d[i + 3]) colours.add(`${d[i]},${d[i + 1]},${d[i + 2]}`);
          return colours.size;
        });
        check(painted > 3, 'phase map canvas is painted with several colours', String(painted));
        await page.screenshot({ path: path.join(SHOTS, 'phase-map.png'), fullPage: false }).catch(() => {});
        const box = await testid(page, 'phase-map').boundingBox();
        const n = await runs(page);
        const before = await H(page, () => [window.__retrystorm.scenario().incident.duration_s, window.__retrystorm.scenario().demand.rate_per_s]);
        await page.mouse.click(box.x + 58 + (box.width - 66) * 0.15, box.y + 8 + (box.height - 48) * 0.2);
        await waitRun(page, n);
        const after = await H(page, () => [window.__retrystorm.scenario().incident.duration_s, window.__retrystorm.scenario().demand.rate_per_s]);
        check(JSON.stringify(before) !== JSON.stringify(after), 'clicking a cell loads its scenario', `${before} -> ${after}`);
      }
    }

    await issue17(page, presets, context, base);
    await issue30(page, presets, context);
    await reviewed(presets, context, base);

    log('\n# screenshots');
    await selectPreset(page, presets.some((p) => p.name === 'primary-failover') ? 'primary-failover' : presets[0].name);
    await waitSecondary(page);
    await testid(page, 'phase-draw').click().catch(() => {});
    await page.waitForFunction(() => window.__retrystorm.phaseReady, null, { timeout: 60000 }).catch(() => {});
    for (const theme of ['light', 'dark']) {
      const now = await H(page, () => document.documentElement.dataset.theme);
      if (now !== theme) await testid(page, 'theme-toggle').click();
      await sleep(150);
      check((await H(page, () => document.documentElement.dataset.theme)) === theme, `theme toggles to ${theme}`);
      const f = path.join(SHOTS, `explorer-${theme}.png`);
      await page.screenshot({ path: f, fullPage: true });
      log(`       ${f}`);
    }
    await page.setViewportSize({ width: 390, height: 844 });
    await sleep(200);
    const wide = await H(page, () => document.documentElement.scrollWidth - window.innerWidth);
    check(wide <= 1, 'no horizontal scrolling on a phone-sized screen', `${wide}px too wide`);
    await page.screenshot({ path: path.join(SHOTS, 'explorer-phone-dark.png'), fullPage: true });
    await testid(page, 'theme-toggle').click();
    await page.screenshot({ path: path.join(SHOTS, 'explorer-phone-light.png'), fullPage: true });

    check(pageErrors.length === 0, 'no errors in the browser console', pageErrors.slice(0, 5).join(' | '));
  } finally {
    await context?.close().catch(() => {});
    proxy?.close();
    child.kill('SIGTERM');
    await Promise.race([new Promise((r) => child.once('exit', r)), sleep(3000)]);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    if (userDir) fs.rmSync(userDir, { recursive: true, force: true });
  }
  if (failures.length && serverOut) log(`\nserver output (last 2000 chars):\n${serverOut.slice(-2000)}`);
}

main().then(
  () => {
    if (failures.length) {
      console.error(`\n${failures.length} check(s) failed:\n- ${failures.join('\n- ')}`);
      process.exit(1);
    }
    console.log('\nall browser checks passed');
  },
  (e) => {
    console.error(`\ne2e aborted: ${e.stack || e}`);
    if (failures.length) console.error(`failed before that:\n- ${failures.join('\n- ')}`);
    process.exit(1);
  },
);
