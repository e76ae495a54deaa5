// Drives the real retry strategies of the AWS SDK for JavaScript v3
// (@smithy/util-retry: StandardRetryStrategy, AdaptiveRetryStrategy) through
// the calls the SDK's retry middleware makes: acquireInitialRetryToken, then
// per failed attempt refreshRetryTokenForRetry(token, {errorType}) (a throw
// = no retry), recordSuccess(token) on success (docs/conformance.md).
//
// Time is virtual: setTimeout (the backoff sleep inside
// refreshRetryTokenForRetry, and DefaultRateLimiter.setTimeoutFn, the rate
// limiter's wait) records the delay, advances the clock Date.now() reads and
// resolves at once. The delays are still computed by the library's own code.
//
// Input (argv[2]): JSON {"strategy": "standard"|"adaptive", "max_attempts": 3,
//   "calls": [["THROTTLING", "TRANSIENT", "OK"], ...]  (each attempt's outcome;
//   past the list: "OK"), "repeat": 1 (the calls list played this many times),
//   "fresh_per_call": false (a new strategy, full quota, for each call),
//   "gap_ms": 0 (virtual time between calls), "seed": 12}.
// Output: JSON {"calls": [{"attempts", "ok", "delays_ms", "limiter_waits_ms",
//   "capacity"}], "version": ...}.
import { createRequire } from "node:module";

import retry from "@smithy/util-retry";

const require = createRequire(import.meta.url);
const { AdaptiveRetryStrategy, DefaultRateLimiter, StandardRetryStrategy } = retry;

// Math.random, which the strategies draw their jitter from, is replaced by a
// seeded generator (mulberry32) so that runs repeat; "seed" in the input.
function seededRandom(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

let skippedMs = 0;
const realNow = Date.now.bind(Date);
Date.now = () => realNow() + skippedMs;

let current = null;  // the call being played
const immediately = (fn, ms) => {
  skippedMs += ms ?? 0;
  setImmediate(fn);
};
globalThis.setTimeout = (fn, ms) => {
  if (current) current.delays_ms.push(ms);
  immediately(fn, ms);
};
DefaultRateLimiter.setTimeoutFn = (fn, ms) => {
  if (current) current.limiter_waits_ms.push(ms);
  immediately(fn, ms);
};

function makeStrategy(spec) {
  return spec.strategy === "adaptive" ? new AdaptiveRetryStrategy(spec.max_attempts)
                                      : new StandardRetryStrategy(spec.max_attempts);
}

function capacityOf(strategy) {
  const standard = strategy.standardRetryStrategy ?? strategy;
  return standard.getCapacity();
}

async function play(strategy, outcomes) {
  current = { attempts: 0, ok: false, delays_ms: [], limiter_waits_ms: [], capacity: 0 };
  let token = await strategy.acquireInitialRetryToken("");
  for (;;) {
    const outcome = outcomes[current.attempts] ?? "OK";
    current.attempts += 1;
    if (outcome === "OK") {
      strategy.recordSuccess(token);
      current.ok = true;
      break;
    }
    try {
      token = await strategy.refreshRetryTokenForRetry(token, { errorType: outcome });
    } catch {
      break;  // no retry: attempts, retryability or the quota
    }
  }
  current.capacity = capacityOf(strategy);
  const done = current;
  current = null;
  return done;
}

const spec = JSON.parse(process.argv[2]);
Math.random = seededRandom(spec.seed ?? 12);
const out = {
  version: require("@smithy/util-retry/package.json").version,
  core: require("@smithy/core/package.json").version,
  calls: [],
};
let strategy = makeStrategy(spec);
for (let r = 0; r < (spec.repeat ?? 1); ++r) {
  for (const outcomes of spec.calls) {
    if (spec.fresh_per_call) strategy = makeStrategy(spec);
    out.calls.push(await play(strategy, outcomes));
    skippedMs += spec.gap_ms ?? 0;
  }
}
process.stdout.write(JSON.stringify(out) + "\n");
