// Turning numbers from the run result into the words and figures on the page.

import type { LadderRow, Metrics, Scenario, Tipping } from './types';

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
export function boundSentence(m: Metrics, sc: Scenario): string {
  const amp = m.bound.max_amplification;
  const load = m.bound.load ?? sc.demand.rate_per_s / sc.server.capacity_per_s;
  const peakLoad = amp * load;
  const safe = m.bound.safe_load_below;
  const head =
    `When every response comes back late, each request can turn into ${fmtNum(amp)} attempts, ` +
    `so demand at the server can climb to ${fmtAmp(amp)} normal: ${fmtPct(peakLoad, 0)} of capacity. `;
  const tail =
    load < safe
      ? `You run at ${fmtPct(load, 0)} load, under the ${fmtPct(safe)} that is always safe with this policy, so any backlog drains.`
      : `Only below ${fmtPct(safe)} load is the backlog sure to drain; you run at ${fmtPct(load, 0)}, so an incident that lasts long enough can leave it stuck.`;
  return head + tail;
}

export function attemptsPerRequest(retries: number, layers: number): number {
  return Math.pow(retries + 1, layers);
}
