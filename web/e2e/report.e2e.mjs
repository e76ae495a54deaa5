// Browser test of the HTML report of `retrystorm analyze`: the binary writes
// the report of a fixture log, Chromium opens it from disk (file://, no
// server), and the charts must be drawn with no console errors.
//
//   RETRYSTORM_BIN=/work/main/build/retrystorm npm run e2e:report
//
// Env: RETRYSTORM_BIN (default ../build/retrystorm), RETRYSTORM_SHOTS
// (screenshot folder, default ../build/screenshots), CHROMIUM (default
// /usr/bin/chromium). Exits non-zero with a list of failures.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const webDir = path.resolve(here, '..');
const BIN = process.env.RETRYSTORM_BIN || path.resolve(webDir, '..', 'build', 'retrystorm');
const SHOTS = path.resolve(webDir, process.env.RETRYSTORM_SHOTS || path.join('..', 'build', 'screenshots'));
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const LOGS = path.resolve(webDir, '..', 'tests', 'fixtures', 'logs', 'outage');
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const CHARTS = ['chart-load', 'chart-occupancy', 'chart-errors', 'chart-durations'];

const failures = [];
function check(ok, what, detail = '') {
  console.log(`  ${ok ? 'ok  ' : 'FAIL'} ${what}${!ok && detail ? `: ${detail}` : ''}`);
  if (!ok) failures.push(`${what}${detail ? `: ${detail}` : ''}`);
  return ok;
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'retrystorm-report-'));
  const report = path.join(dir, 'report.html');
  execFileSync(BIN, ['analyze', path.join(LOGS, 'sessions.csv'), path.join(LOGS, 'events.jsonl'),
    '--slots', '6', '--format', 'html', '--out', report]);
  check(fs.existsSync(report), 'analyze wrote the report');
  const html = fs.readFileSync(report, 'utf8');
  check(!/<script[^>]+src=|<link[^>]+href=/i.test(html), 'the report loads nothing from elsewhere');

  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
  try {
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const errors = [];
    const requests = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('request', (r) => { if (!r.url().startsWith('file:') && !r.url().startsWith('data:')) requests.push(r.url()); });
    await page.goto(pathToFileURL(report).href);
    await page.waitForSelector('body[data-charts-drawn="true"]', { timeout: 10000 }).catch(() => {});
    for (const id of CHARTS) {
      const canvases = await page.locator(`#${id} canvas`).count();
      check(canvases > 0, `${id} drawn`, `${canvases} canvases`);
    }
    const width = await page.locator('#chart-load canvas').first().evaluate((c) => c.width).catch(() => 0);
    check(width > 200, 'the load chart has a width', String(width));
    const first = await page.locator('[data-testid=findings] > li').first().getAttribute('data-finding');
    check(first === 'dead_dependency', 'first finding is the dead dependency', String(first));
    check((await page.locator('[data-testid=hours] tbody tr').count()) === 8, 'one table row an hour');
    check(errors.length === 0, 'no console errors', errors.join(' | '));
    check(requests.length === 0, 'no network requests', requests.join(' '));
    fs.mkdirSync(SHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SHOTS, 'analyze-report.png'), fullPage: true });
    console.log(`  screenshot ${path.join(SHOTS, 'analyze-report.png')}`);
  } finally {
    await browser.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().then(() => {
  if (failures.length) {
    console.log(`\n${failures.length} failure(s):\n${failures.map((f) => `  - ${f}`).join('\n')}`);
    process.exit(1);
  }
  console.log('\nreport: all checks passed');
}, (e) => { console.error(e); process.exit(1); });
