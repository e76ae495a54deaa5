// What the graph view draws, from a graph run's result (docs/graph.md, "Results"):
// where each service sits, and each service's and call's figures around one moment.
// Pure functions: the view (graphview.ts) only draws them.

import type { GraphResult, RunResult, Scenario } from './types';

/** The entry caller: the users, the `from` of the one entry call. */
export const USER = 'user';

export interface NodePlace { name: string; depth: number; row: number }

/** Columns by depth (the longest path from the users), rows in the order calls name them. */
export function layoutGraph(calls: { from: string; to: string }[]): { nodes: NodePlace[]; depths: number; rows: number } {
  const depth = new Map<string, number>([[USER, 0]]);
  // A graph has no cycle (the server refuses one), so as many passes as calls settle it.
  for (let pass = 0; pass <= calls.length; pass++) {
    let moved = false;
    for (const c of calls) {
      const d = (depth.get(c.from) ?? 0) + 1;
      if ((depth.get(c.to) ?? -1) < d) { depth.set(c.to, d); moved = true; }
    }
    if (!moved) break;
  }
  const order = [USER];
  for (const c of calls) for (const n of [c.from, c.to]) if (!order.includes(n)) order.push(n);
  const perColumn = new Map<number, number>();
  const nodes = order.map((name) => {
    const d = depth.get(name) ?? 0;
    const row = perColumn.get(d) ?? 0;
    perColumn.set(d, row + 1);
    return { name, depth: d, row };
  });
  return { nodes, depths: Math.max(...nodes.map((n) => n.depth)) + 1, rows: Math.max(...perColumn.values()) };
}

/**
 * Calls each service receives per user request when nothing fails: the sum over the
 * calls into it of its caller's share times the call's count (the users' share is 1).
 */
export function callsPerRequest(calls: { from: string; to: string; count?: number }[]): Map<string, number> {
  const { nodes } = layoutGraph(calls);
  const share = new Map<string, number>([[USER, 1]]);
  // By depth, so that a caller's share is complete before its calls are counted.
  for (const n of [...nodes].sort((a, b) => a.depth - b.depth)) {
    for (const c of calls) {
      if (c.from !== n.name) continue;
      share.set(c.to, (share.get(c.to) ?? 0) + (share.get(c.from) ?? 0) * (c.count ?? 1));
    }
  }
  return share;
}

export interface ServiceAt {
  name: string;
  serves: boolean;
  arrivalsPerS: number; // attempts arriving (first attempts and retries)
  capacityPerS: number | null; // null: a proxy
  load: number | null; // arrivals over capacity (Infinity: capacity 0); null for a proxy
  amplification: number | null; // attempts per user request over the calls per request when nothing fails
  queue: number; // attempts at the server at the window's end
}

export interface CallAt {
  index: number;
  from: string;
  to: string;
  callsPerS: number;
  attemptsPerCall: number | null; // (calls + retries) / calls; null when no call was made
  timeoutsPerS: number;
  failedPerS: number;
}

export interface GraphAt { t: number; seconds: number; services: ServiceAt[]; calls: CallAt[] }

/** Steps of one second (at least one step): the window the view's figures sum over. */
export const windowSteps = (step: number) => Math.max(1, Math.round(1 / step));

const sum = (a: number[] | undefined, from: number, to: number) => {
  let s = 0;
  if (a) for (let i = from; i <= to; i++) s += a[i] ?? 0;
  return s;
};

/** A service's capacity per second at step i: the incident's service has the run's own series. */
function capacityAt(r: RunResult, name: string, from: number, to: number): number {
  const sc = r.scenario as Scenario & { services?: Record<string, { capacity_per_s?: number }> };
  const step = Number(sc.step_s);
  if (r.graph?.incident_service === name) return sum(r.series.capacity, from, to) / ((to - from + 1) * step);
  return Number(sc.services?.[name]?.capacity_per_s ?? sc.server.capacity_per_s);
}

/** Each service's and call's figures over the second that ends at step `i`. */
export function graphAt(r: RunResult, i: number): GraphAt {
  const g = r.graph as GraphResult;
  const step = Number(r.scenario.step_s);
  const n = r.series.t_s.length;
  const to = Math.min(n - 1, Math.max(0, Math.round(i)));
  const from = Math.max(0, to - windowSteps(step) + 1);
  const seconds = (to - from + 1) * step;
  const rate = (a: number[] | undefined) => sum(a, from, to) / seconds;
  const calls = (r.scenario.calls ?? []) as { from: string; to: string; count?: number }[];
  const share = callsPerRequest(calls);
  const entry = g.edges.find((e) => e.from === USER);
  const usersPerS = rate(entry?.series.calls);
  const services = g.services.map((s): ServiceAt => {
    const arrivalsPerS = rate(s.series.first_attempts) + rate(s.series.retries);
    const capacityPerS = s.serves ? capacityAt(r, s.name, from, to) : null;
    const normal = usersPerS * (share.get(s.name) ?? 0);
    return {
      name: s.name, serves: s.serves, arrivalsPerS, capacityPerS,
      load: capacityPerS === null ? null : capacityPerS > 0 ? arrivalsPerS / capacityPerS : arrivalsPerS > 0 ? Infinity : 0,
      amplification: normal > 0 ? arrivalsPerS / normal : null,
      queue: s.series.queue[to] ?? 0,
    };
  });
  const edges = g.edges.map((e, index): CallAt => {
    const c = rate(e.series.calls);
    return {
      index, from: e.from, to: e.to, callsPerS: c,
      attemptsPerCall: c > 0 ? (c + rate(e.series.retries)) / c : null,
      timeoutsPerS: rate(e.series.timeouts), failedPerS: rate(e.series.failed),
    };
  });
  return { t: r.series.t_s[to] ?? 0, seconds, services, calls: edges };
}

/** Where the colour scale of each mode reaches red: twice the capacity; ten times the attempts. */
export const LOAD_RED = 2;
export const AMPLIFICATION_RED = 10;

/** Position on the colour scale (0 green … 1 red) of a load; a proxy has none. */
export const loadShare = (load: number | null) => (load === null ? null : load / LOAD_RED);

/** Position on the colour scale of an amplification, on a log scale from 1× to 10×. */
export const amplificationShare = (a: number | null) => (a === null ? null : a <= 1 ? 0 : Math.log(a) / Math.log(AMPLIFICATION_RED));

/** The step index at time t (the last step at or before it). */
export function stepAt(r: RunResult, t: number): number {
  const ts = r.series.t_s;
  let i = 0;
  while (i + 1 < ts.length && ts[i + 1] <= t + 1e-9) i++;
  return i;
}
