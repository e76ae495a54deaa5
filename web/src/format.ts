// Turning numbers from the run result into the words and figures on the page.

import type { GraphResult, LadderRow, Metrics, Scenario, Tipping } from './types';

// One formatter per digit count: toLocaleString with options builds a new one
// on every call, which costs tens of milliseconds over a table.
const formatters = new Map<number, Intl.NumberFormat>();

export function fmtNum(v: number | null | undefined, maxDigits = 2): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  const r = Math.abs(v) >= 100 ? Math.round(v) : Number(v.toFixed(maxDigits));
  let f = formatters.get(maxDigits);
  if (!f) formatters.set(maxDigits, (f = new Intl.NumberFormat('en-US', { maximumFractionDigits: maxDigits })));
  return f.format(r);
}

/** An instant in seconds: its fraction kept at any size, so that the steps
 * of 0.5 s past 100 s do not read as the same second (fmtNum rounds those). */
export function fmtTime(t: number | null | undefined): string {
  if (t === null || t === undefined || !Number.isFinite(t)) return '–';
  let f = formatters.get(-3);
  if (!f) formatters.set(-3, (f = new Intl.NumberFormat('en-US', { maximumFractionDigits: 3 })));
  return f.format(Number(t.toFixed(3)));
}

export function fmtPct(f: number | null | undefined, digits = 1): string {
  if (f === null || f === undefined || !Number.isFinite(f)) return '–';
  return `${(f * 100).toFixed(digits)}%`;
}

export function fmtAmp(x: number): string {
  return `${fmtNum(x, 2)}×`;
}

export function fmtSeconds(s: number | null | undefined): string {
  if (s === null || s === undefined) return '–';
  return `${fmtNum(s, 2)} s`;
}

export type Criterion = 'failures' | 'goodput';

export function criterionOf(sc: Scenario | undefined): Criterion {
  return sc?.recovery?.criterion === 'goodput' ? 'goodput' : 'failures';
}

/** The recovery time the verdict uses; null means stuck. */
export function recoveryOf(m: Metrics, crit: Criterion): number | null {
  const v = crit === 'goodput' ? m.goodput_recovery_s : m.failure_recovery_s;
  return v === undefined ? null : v;
}

export function incidentEnd(sc: Scenario): number {
  return sc.incident.start_s + sc.incident.duration_s;
}

/** Short verdict used in tables and the phase map: "Recovered +19 s" / "Stuck at 300 s". */
export function shortVerdict(m: Metrics, sc: Scenario): string {
  const r = recoveryOf(m, criterionOf(sc));
  return r === null ? `Not recovered by ${fmtNum(sc.horizon_s)} s` : `Recovered +${fmtNum(r)} s`;
}

/** Our own one-line statement of what recovered, by which measure. */
export function recoverySentence(m: Metrics, sc: Scenario): string {
  const crit = criterionOf(sc);
  const r = recoveryOf(m, crit);
  const what = crit === 'goodput' ? 'Goodput' : 'Failures';
  if (incidentEnd(sc) > sc.horizon_s) {
    return `The incident lasts past the end of the run (${fmtNum(incidentEnd(sc))} s against ${fmtNum(sc.horizon_s)} s): recovery cannot be measured; shorten the incident or lengthen the run.`;
  }
  if (r === null) {
    return crit === 'goodput'
      ? `Goodput never returns: still stuck at ${fmtNum(sc.horizon_s)} s, ${fmtNum(sc.horizon_s - incidentEnd(sc))} s after the incident ended.`
      : `Failures never stop: still stuck at ${fmtNum(sc.horizon_s)} s, ${fmtNum(sc.horizon_s - incidentEnd(sc))} s after the incident ended.`;
  }
  if (r === 0) return `${what === 'Goodput' ? 'Goodput is back' : 'Failures stop'} as soon as the incident ends (recovery 0 s).`;
  return crit === 'goodput'
    ? `Goodput recovers ${fmtNum(r)} s after the incident ends.`
    : `Failures stop ${fmtNum(r)} s after the incident ends.`;
}

export interface LadderCells { verdict: string; recovered: boolean; failed: string; peak: string }

export function ladderCells(row: LadderRow, sc: Scenario): LadderCells {
  const rowSc = row.scenario ?? sc;
  const r = recoveryOf(row.metrics, criterionOf(rowSc));
  return {
    verdict: shortVerdict(row.metrics, rowSc),
    recovered: r !== null,
    failed: fmtPct(row.metrics.failed_fraction),
    peak: fmtAmp(row.metrics.peak_amplification),
  };
}

export function tippingText(t: Tipping | null): string {
  if (!t) return '…';
  if (t.exact_s === null && t.on_grid_s === null) return 'none';
  const v = t.on_grid_s ?? t.exact_s;
  return `${fmtNum(v, 2)} s`;
}

/** How the tipping point was found: the grid, and the exact value to one step. */
export function tippingDetail(t: Tipping | null): string {
  if (!t) return '';
  if (t.exact_s === null && t.on_grid_s === null) return 'every incident length tried recovers';
  const exact = t.exact_s !== null && t.exact_s !== t.on_grid_s ? `; exactly ${fmtNum(t.exact_s, 2)} s` : '';
  return `shortest incident that does not recover, on a ${fmtNum(t.grid_s, 2)} s grid${exact}`;
}

/** The model bound in plain words. */
/**
 * The load the bound is of: the server's (closed-loop clients send what their
 * think time lets them, not demand.rate_per_s), else demand over capacity.
 */
export function boundLoad(m: Metrics, sc: Scenario): number {
  return m.bound.load ?? sc.demand.rate_per_s / sc.server.capacity_per_s;
}

/**
 * The same load as requests per second. A graph's load is its incident
 * service's, whose capacity is not the top-level server's: its users'
 * demand is the rate.
 */
export function boundDemand(m: Metrics, sc: Scenario): number {
  return m.bound.load != null && !isGraph(sc) ? m.bound.load * sc.server.capacity_per_s : sc.demand.rate_per_s;
}

/** A scenario with services and calls (docs/graph.md). */
export const isGraph = (s: Scenario) => s.services !== undefined || s.calls !== undefined;

/**
 * A graph's incident service, as the run names it (`graph.incident_service`:
 * the server's rule, not a copy of it here), and its capacity; null when the
 * result names none or the service has no capacity of its own.
 */
export function graphIncident(sc: Scenario, named?: string | null): { name: string; capacity: number } | null {
  if (!isGraph(sc) || !named) return null;
  const services = (sc.services ?? {}) as Record<string, { capacity_per_s?: number } | undefined>;
  const capacity = services[named]?.capacity_per_s;
  return typeof capacity === 'number' && capacity > 0 ? { name: named, capacity } : null;
}

/**
 * A graph's model bound at its incident service, or null (not a graph, or no
 * load or service to read). `bound.max_amplification` is attempts per call the
 * service receives and `bound.load` the users' demand times the calls per user
 * request reaching it, over its capacity (docs/graph.md, "bound"), so:
 * - level: attempts per second the service can get when every attempt is late,
 *   max_amplification × load × its capacity (= users × calls per request × max_amplification);
 * - perRequest: the worst case per user request at the service, the run's
 *   `graph.services[].totals.worst_case_per_request` when given, else
 *   max_amplification × load × capacity / users' demand (14 at db on shared-database).
 */
export function graphBound(m: Metrics, sc: Scenario, graph?: GraphResult | null): { service: string; level: number; perRequest: number } | null {
  const load = m.bound.load;
  if (load == null) return null;
  const hit = graphIncident(sc, graph?.incident_service);
  if (!hit) return null;
  const level = m.bound.max_amplification * load * hit.capacity;
  const given = graph?.services.find((v) => v.name === hit.name)?.totals.worst_case_per_request;
  const users = sc.demand.rate_per_s;
  const perRequest = typeof given === 'number' && Number.isFinite(given) ? given : users > 0 ? level / users : NaN;
  return { service: hit.name, level, perRequest };
}

export function boundSentence(m: Metrics, sc: Scenario, graph?: GraphResult | null): string {
  const amp = m.bound.max_amplification;
  const load = boundLoad(m, sc);
  const peakLoad = amp * load;
  const safe = m.bound.safe_load_below;
  const g = graphBound(m, sc, graph);
  // A graph's worst case is per user request at its incident service, as the server's verdict words it.
  const head = g
    ? `When every response comes back late, each user request can cost up to ${fmtNum(g.perRequest)} attempts at ${g.service}, ` +
      `so the load there can climb to ${fmtPct(peakLoad, 0)} of its capacity. `
    : `When every response comes back late, each request can turn into ${fmtNum(amp)} attempts, ` +
      `so demand at the server can climb to ${fmtAmp(amp)} normal: ${fmtPct(peakLoad, 0)} of capacity. `;
  const tail =
    load < safe
      ? `You run at ${fmtPct(load, 0)} load, under the ${fmtPct(safe)} that is always safe with this policy, so any backlog drains.`
      : `Only below ${fmtPct(safe)} load is the backlog sure to drain; you run at ${fmtPct(load, 0)}, so an incident that lasts long enough can leave it stuck.`;
  return head + tail + peakNote(m, sc);
}

/**
 * Why a peak can pass the bound: the bound counts attempts per user request,
 * the peak counts one step, where retries of earlier requests pile up.
 */
export function peakNote(m: Metrics, sc: Scenario): string {
  const amp = m.bound.max_amplification;
  if (!(m.peak_amplification > amp * 1.005)) return '';
  const why: string[] = [];
  if (sc.server.queue_limit > 0) why.push('the queue limit refuses attempts at once, so their retries come back within the same seconds instead of after a timeout');
  if (sc.engine === 'agent') why.push('the agent engine\'s random arrivals and retry timing bunch up, so one step can carry retries of several earlier seconds');
  if (!why.length) why.push('retries of requests sent in earlier seconds land in the same second as new ones');
  return ` The peak of ${fmtAmp(m.peak_amplification)} is above this bound: the bound holds for the attempts of each user request over its life, not for any single second, and here ${why.join('; and ')}.`;
}

export function attemptsPerRequest(retries: number, layers: number): number {
  return Math.pow(retries + 1, layers);
}

/**
 * Retries at each retrying layer, outermost first, as the server reads them:
 * client.stack_retries when set ("2,1"), else client.retries at each of client.layers.
 */
export function layerRetries(sc: Scenario): number[] {
  const stack = (sc.client.stack_retries ?? '').trim();
  if (stack) return stack.split(',').map((x) => Number(x.trim()));
  return Array.from({ length: Math.max(1, sc.client.layers) }, () => sc.client.retries);
}

/** "1 attempt", "2 attempts", "1.5 attempts": the noun agrees with the number,
 * or with its shown text (1.0011 shown as "1" reads "1 attempt"). */
export function plural(n: number, one: string, text = String(n), many = `${one}s`): string {
  return `${text} ${n === 1 || text === '1' ? one : many}`;
}

/** Seconds after midnight as a clock time: 23400 -> "06:30". */
export function clockOfDay(s: number): string {
  const t = ((Math.round(s) % 86400) + 86400) % 86400;
  const h = Math.floor(t / 3600);
  const m = Math.floor((t % 3600) / 60);
  const sec = t % 60;
  const two = (v: number) => String(v).padStart(2, '0');
  return sec ? `${two(h)}:${two(m)}:${two(sec)}` : `${two(h)}:${two(m)}`;
}

/** A preset's description with key paths ("client.timeout_s") as their labels ("Timeout"). */
export function describeText(text: string, keys: { path: string; label?: string }[]): string {
  const byPath = new Map(keys.filter((k) => k.label).map((k) => [k.path, k.label!]));
  return text.replace(/`?\b([a-z_]+(?:\.[a-z_]+)+|[a-z]+_[a-z_]+)\b`?/g, (m, p: string) => {
    const label = byPath.get(p);
    return label ? label.charAt(0).toLowerCase() + label.slice(1) : m;
  });
}
