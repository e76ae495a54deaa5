// Development stand-in for `retrystorm serve`: serves ../dist and answers the
// HTTP API of ../../../shared/spec/contract.md from mock-model.mjs.
// Usage: node e2e/mock-server.mjs [--port 8098]
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PRESETS, SCHEMA, clone, setPath, result, ladderRows, tipping, run } from './mock-model.mjs';

const dist = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'dist');
const argPort = process.argv.indexOf('--port');
const port = argPort > 0 ? Number(process.argv[argPort + 1]) : 8098;
const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml', '.json': 'application/json' };

function scenarioOf(body) {
  if (body.scenario) return clone(body.scenario);
  const p = PRESETS[body.preset || 'order-status'];
  if (!p) throw new Error(`preset: unknown "${body.preset}"`);
  const s = clone(p);
  for (const [k, v] of Object.entries(body.set || {})) setPath(s, k, v);
  return s;
}

function sweep(sc, vary) {
  const axes = vary.map((v) => { const xs = []; for (let x = v.from, i = 0; x <= v.to + 1e-9; i++, x = v.from + i * v.step) xs.push(+x.toFixed(9)); return xs; });
  const rows = [];
  const rec = (i, vals) => {
    if (i === vary.length) { const s = clone(sc); for (const [k, v] of Object.entries(vals)) setPath(s, k, v); rows.push({ values: { ...vals }, metrics: run(s).metrics }); return; }
    for (const x of axes[i]) rec(i + 1, { ...vals, [vary[i].path]: x });
  };
  rec(0, {});
  return { rows };
}

const envoy = (sc) => `retry_policy:\n  retry_on: "5xx,reset,connect-failure"\n  num_retries: ${sc.client.retries}\n  per_try_timeout: ${sc.client.timeout_s}s\n  retry_back_off:\n    base_interval: ${sc.client.backoff.base_s}s\n    max_interval: ${sc.client.backoff.cap_s || sc.client.backoff.base_s * 10}s\n# cluster circuit_breakers:\n#   thresholds:\n#   - retry_budget:\n#       budget_percent: { value: ${sc.client.budget.ratio * 100} }\n#       min_retry_concurrency: 3\n`;

http.createServer((req, res) => {
  const send = (code, obj) => { res.writeHead(code, { 'content-type': 'application/json' }); res.end(JSON.stringify(obj)); };
  if (req.url.startsWith('/api/')) {
    if (req.method === 'GET' && req.url === '/api/presets') return send(200, { presets: Object.values(PRESETS).map((p) => ({ name: p.name, description: p.description, scenario: p })) });
    if (req.method === 'GET' && req.url === '/api/schema') return send(200, { keys: SCHEMA });
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => {
      try {
        const body = JSON.parse(data || '{}');
        const sc = scenarioOf(body);
        switch (req.url) {
          case '/api/run': return send(200, result(sc));
          case '/api/ladder': return send(200, { rows: ladderRows(sc) });
          case '/api/tipping': return send(200, tipping(sc, body.grid_s || 0.5));
          case '/api/sweep': return send(200, sweep(sc, body.vary || []));
          case '/api/export/envoy': return send(200, { yaml: envoy(sc) });
          default: return send(404, { error: 'unknown path' });
        }
      } catch (e) { send(400, { error: String(e.message || e) }); }
    });
    return;
  }
  let f = path.join(dist, decodeURIComponent(req.url.split('?')[0]));
  if (f.endsWith('/')) f += 'index.html';
  fs.readFile(f, (err, buf) => {
    if (err) { res.writeHead(404); return res.end('not found'); }
    res.writeHead(200, { 'content-type': types[path.extname(f)] || 'application/octet-stream' });
    res.end(buf);
  });
}).listen(port, '127.0.0.1', () => console.log(`mock server on http://127.0.0.1:${port}/`));
