// Chart data from the result series: per-step amounts become per-second rates
// (the Monte Carlo goodput band too).

import { timeoutWork } from './events';
import { boundDemand, graphBound } from './format';
import type { RunResult } from './types';

export function perSecond(arr: number[] | undefined, step: number, n: number): number[] {
  const out = new Array<number>(n);
  if (!arr) return out.fill(0);
  for (let i = 0; i < n; i++) out[i] = (arr[i] ?? 0) / step;
  return out;
}

export function addArrays(a: number[], b: number[]): number[] {
  return a.map((v, i) => v + (b[i] ?? 0));
}

export interface LoadData {
  t: number[];
  first: number[];
  retries: number[];
  stackTop: number[]; // first + retries, per second
  capacity: number[];
  goodput: number[];
  late: number[];
  bound: number[];
  backlog: number[];
  timeoutWork: number[]; // backlog level above which every response is late
  failed: number[];
  /** Attempts waiting at their client for a connection (a level, like the backlog); null when none ever waits. */
  pooled: number[] | null;
  goodputBand: GoodputBand | null; // agent runs > 1: 95% interval of the mean goodput
  /** Whose arrivals `first` and `retries` are: a graph's incident service, or null (the top-level series). */
  service: string | null;
}

/** The Monte Carlo band of goodput, per second like `LoadData.goodput` (null: no value for that step). */
export interface GoodputBand {
  runs: number;
  low: (number | null)[];
  high: (number | null)[];
}

/** Legend label of the goodput band on the load chart. */
export function goodputBandLabel(runs: number): string {
  return `goodput 95% interval (${runs} runs)`;
}

/**
 * `montecarlo.band.goodput_low/high` (per-step amounts) as per-second rates, or null when
 * the answer has no usable band (one run, the fluid engine, missing or empty arrays).
 * The low edge is kept at zero or above: goodput is never negative.
 */
export function goodputBand(r: RunResult): GoodputBand | null {
  const mc = r.montecarlo;
  const lo = mc?.band?.goodput_low;
  const hi = mc?.band?.goodput_high;
  const n = r.series.t_s.length;
  if (!mc || !Array.isArray(lo) || !Array.isArray(hi) || !lo.length || !hi.length || !n) return null;
  const step = r.scenario.step_s || 1;
  const ok = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
  const low = new Array<number | null>(n);
  const high = new Array<number | null>(n);
  for (let i = 0; i < n; i++) {
    const a = lo[i];
    const b = hi[i];
    if (!ok(a) || !ok(b)) {
      low[i] = high[i] = null;
      continue;
    }
    low[i] = Math.max(0, Math.min(a, b) / step);
    high[i] = Math.max(0, Math.max(a, b) / step);
  }
  return { runs: mc.runs, low, high };
}

/**
 * The arrivals the load line draws. A graph's top-level first attempts are its users'
 * requests at the entry; its chart is of the incident service (its capacity, backlog),
 * so the line is that service's own arrivals, as the text report's chart draws them.
 */
export function chartedArrivals(r: RunResult): { service: string | null; first?: number[]; retries?: number[] } {
  const name = r.graph?.incident_service;
  const hit = name ? r.graph!.services.find((v) => v.name === name) : undefined;
  if (!hit) return { service: null, first: r.series.first_attempts, retries: r.series.retries };
  return { service: hit.name, first: hit.series.first_attempts, retries: hit.series.retries };
}

/** The load line's legend labels: a graph's name the service whose arrivals they are. */
export function loadLabels(d: Pick<LoadData, 'service'>): { first: string; retries: string } {
  const at = d.service ? ` at ${d.service}` : '';
  return { first: `First attempts${at}`, retries: `Retries${at}` };
}

export function loadData(r: RunResult): LoadData {
  const s = r.series;
  const step = r.scenario.step_s || 1;
  const n = s.t_s.length;
  const arrivals = chartedArrivals(r);
  const first = perSecond(arrivals.first, step, n);
  const retries = perSecond(arrivals.retries, step, n);
  // Attempts per second when every attempt is late: the bound's load, as the server gave it.
  // A graph's is at its incident service, whose arrivals the line draws: bound.load
  // (users × calls per request reaching it, over its capacity) × max_amplification × its capacity.
  const boundLevel = graphBound(r.metrics, r.scenario, r.graph)?.level ?? r.metrics.bound.max_amplification * boundDemand(r.metrics, r.scenario);
  const cap = perSecond(s.capacity, step, n);
  return {
    t: s.t_s,
    first,
    retries,
    stackTop: addArrays(first, retries),
    capacity: cap,
    goodput: perSecond(s.goodput, step, n),
    late: perSecond(s.served_late, step, n),
    bound: new Array<number>(n).fill(boundLevel),
    backlog: (s.backlog ?? new Array<number>(n).fill(0)).slice(),
    timeoutWork: new Array<number>(n).fill(timeoutWork(r)),
    failed: perSecond(s.failed, step, n),
    pooled: s.pooled?.some((v) => v > 0) ? s.pooled.slice() : null,
    goodputBand: goodputBand(r),
    service: arrivals.service,
  };
}

/** Index of the sample nearest to time t (t_s is sorted). */
export function nearestIndex(ts: number[], t: number): number {
  let lo = 0;
  let hi = ts.length - 1;
  if (hi < 0) return -1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ts[mid] < t) lo = mid + 1;
    else hi = mid;
  }
  if (lo > 0 && Math.abs(ts[lo - 1] - t) <= Math.abs(ts[lo] - t)) return lo - 1;
  return lo;
}
