// Drives a real circuit breaker (opossum or cockatiel) through a script of
// calls and outcomes on a fake clock, for tests/conformance/
// breaker_conformance_test.cpp (docs/conformance.md, "Circuit breakers").
// argv[2]: {"library": "opossum" | "cockatiel", "settings": {...},
//         "events": [{"t_ms": 0, "op": "call", "id": 1},
//                    {"t_ms": 5, "op": "end", "id": 1, "ok": false}, ...]}
// stdout: one entry per event: {"id", "op", "call": "ran" | "rejected" |
// "waits" (cockatiel holds a call during a half-open trial), "state"}.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

// ---- a fake clock: Date.now and timers, before the libraries load -------
let now = 0;
let nextTimer = 1;
const timers = new Map();  // id -> {due, every, fn}
const realSetImmediate = setImmediate;
Date.now = () => now;
const addTimer = (fn, ms, every) => {
  const id = nextTimer++;
  timers.set(id, { due: now + Math.max(0, ms || 0), every, fn });
  return { id, unref() {}, ref() {}, [Symbol.toPrimitive]: () => id };
};
const clear = (t) => { if (t) timers.delete(typeof t === 'object' ? t.id : t); };
globalThis.setTimeout = (fn, ms) => addTimer(fn, ms, 0);
globalThis.setInterval = (fn, ms) => addTimer(fn, ms, ms);
globalThis.clearTimeout = clear;
globalThis.clearInterval = clear;

const flush = async () => {
  for (let i = 0; i < 5; ++i) await new Promise((r) => realSetImmediate(r));
};

// Fires the timers due up to t, in order, with the clock at each one's instant.
async function advance(t) {
  for (;;) {
    let first = null;
    for (const [id, timer] of timers) if (timer.due <= t && (!first || timer.due < first[1].due)) first = [id, timer];
    if (!first) break;
    const [id, timer] = first;
    now = timer.due;
    if (timer.every > 0) timer.due += timer.every;
    else timers.delete(id);
    timer.fn();
    await flush();
  }
  now = t;
}

function opossum(settings) {
  const CircuitBreaker = require('opossum');
  const breaker = new CircuitBreaker((p) => p, {
    timeout: false,
    resetTimeout: settings.open_ms,
    errorThresholdPercentage: settings.failure_rate * 100,
    rollingCountTimeout: settings.window_ms,
    rollingCountBuckets: settings.buckets,
    volumeThreshold: settings.min_calls,
    allowWarmUp: false,
    enableSnapshots: false,
  });
  const state = () => (breaker.opened ? 'open' : breaker.halfOpen ? 'half-open' : 'closed');
  return { fire: (p) => breaker.fire(p), state };
}

function cockatiel(settings) {
  const { circuitBreaker, handleAll, ConsecutiveBreaker, CircuitState } = require('cockatiel');
  const policy = circuitBreaker(handleAll, {
    halfOpenAfter: settings.open_ms,
    breaker: new ConsecutiveBreaker(settings.failures),
  });
  const names = { [CircuitState.Closed]: 'closed', [CircuitState.Open]: 'open', [CircuitState.HalfOpen]: 'half-open' };
  return { fire: (p) => policy.execute(() => p), state: () => names[policy.state] };
}

const input = JSON.parse(process.argv[2]);
const breaker = (input.library === 'opossum' ? opossum : cockatiel)(input.settings);
const pending = new Map();  // id -> {resolve, reject, started, rejected}
const out = [];
for (const e of input.events) {
  await advance(e.t_ms);
  if (e.op === 'call') {
    const call = { started: false, rejected: false };
    const p = new Promise((resolve, reject) => Object.assign(call, { resolve, reject }));
    p.catch(() => {});
    // The action runs when the breaker lets the call through.
    const gate = { then: (res, rej) => { call.started = true; return p.then(res, rej); } };
    breaker.fire(gate).catch((err) => {
      if (!call.started) call.rejected = true;
      return err;
    });
    pending.set(e.id, call);
    await flush();
    out.push({ id: e.id, op: 'call', call: call.started ? 'ran' : call.rejected ? 'rejected' : 'waits', state: breaker.state() });
  } else {
    const call = pending.get(e.id);
    if (e.ok) call.resolve('ok');
    else call.reject(new Error('failed'));
    await flush();
    out.push({ id: e.id, op: 'end', state: breaker.state() });
  }
}
process.stdout.write(JSON.stringify(out) + '\n');
process.exit(0);
