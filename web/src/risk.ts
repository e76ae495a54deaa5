// The page's view of POST /api/risk (docs/risk.md): the metastable region
// as a table, knob values down, loads across; each cell the chance of
// tipping within a day by chance and the mean time to come back.

import { fmtNum, fmtPct } from './format';
import type { RiskLevel, RiskMap, Scenario, StepDownResult } from './types';
import { randomIncidents } from './validate';

export const RISK_LOADS = [0.5, 0.7, 0.8, 0.9, 1, 1.1];
export const RISK_RUNS = 20;

export { randomIncidents };

/** What the risk panel assesses: the scenario on screen, or the one being edited
 * when its incidents come at random (its run was refused for that reason). */
export function riskBase(sent: Scenario | null, editing: Scenario | null): Scenario | null {
  return randomIncidents(editing) ? editing : sent;
}

/** The scenario risk runs: the agent engine, and Poisson arrivals when nothing else is random. */
export function riskScenario(sc: Scenario): { scenario: Scenario; note: string } {
  const next = JSON.parse(JSON.stringify(sc)) as Scenario;
  const s = next as unknown as { engine: string; demand: { process: string }; server: { service: string } };
  s.engine = 'agent';
  let note = '';
  if (s.demand.process === 'deterministic' && (s.server.service ?? 'deterministic') === 'deterministic') {
    s.demand.process = 'poisson';
    note = 'Arrivals made Poisson (the scenario has nothing random). ';
  }
  return { scenario: next, note };
}

/** The retry counts of the map's rows: 0 to 4 and the scenario's own. */
export function retryValues(current: number): number[] {
  const v = new Set([0, 1, 2, 3, 4, current]);
  return [...v].filter((x) => x >= 0 && x <= 20).sort((a, b) => a - b);
}

/** The timeouts of the map's rows: halves and doubles of the scenario's own, whole steps. */
export function timeoutValues(current: number, step: number): number[] {
  const whole = (x: number) => Math.max(step, Math.round(x / step) * step);
  const v = new Set([0.25, 0.5, 1, 2, 4].map((f) => Number(whole(current * f).toPrecision(12))));
  return [...v].filter((x) => x > 0 && x <= 3600).sort((a, b) => a - b);
}

/** The budget ratios of the map's rows, with the scenario's own. */
export function budgetValues(current: number): number[] {
  const v = new Set([0.05, 0.1, 0.2, 0.5, 1, current]);
  return [...v].filter((x) => x > 0 && x <= 10).sort((a, b) => a - b);
}

/** A policy knob the map can run down its rows (docs/risk.md, "The metastable region"). */
export interface RiskKnob {
  path: string;
  label: string;
  values: (sc: Scenario) => number[];
  /** Whether the scenario reads the knob (a budget ratio needs a budget). */
  applies: (sc: Scenario) => boolean;
}

const num = (sc: Scenario, path: string) => Number(path.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], sc));

export const RISK_KNOBS: RiskKnob[] = [
  { path: 'client.retries', label: 'Retries', values: (sc) => retryValues(num(sc, 'client.retries')), applies: () => true },
  { path: 'client.timeout_s', label: 'Timeout (s)', values: (sc) => timeoutValues(num(sc, 'client.timeout_s'), num(sc, 'step_s')), applies: () => true },
  {
    path: 'client.budget.ratio', label: 'Retry budget ratio', values: (sc) => budgetValues(num(sc, 'client.budget.ratio')),
    applies: (sc) => { const k = (sc as unknown as { client?: { budget?: { kind?: string } } }).client?.budget?.kind; return !!k && k !== 'none'; },
  },
];

/** The knob of `path`, or the first (retries). */
export const riskKnob = (path: string) => RISK_KNOBS.find((k) => k.path === path) ?? RISK_KNOBS[0];

/** `--vary` of the map: the knob's rows. */
export const riskVary = (knob: RiskKnob, sc: Scenario) => `${knob.path}=${knob.values(sc).join(',')}`;

/** "3.2 h", "41 s": a mean waiting time to two digits; "> 3 h" when none was seen. */
export function roughTime(s: number): string {
  const units: [number, string][] = [[86400 * 365.25, 'years'], [86400, 'days'], [3600, 'h'], [60, 'min']];
  for (const [size, name] of units) if (s >= 2 * size) return `${fmtNum(Number((s / size).toPrecision(2)), 1)} ${name}`;
  return `${fmtNum(Number(s.toPrecision(2)), 1)} s`;
}

export interface RiskCell { text: string; title: string; here: boolean; tone: number }

/** What the cells' colour shows: the chance of tipping within a day, or the mean time back. */
export type RiskColour = 'tip' | 'leave';

/**
 * The time back as a shade from 0 to 1: none stuck 0; a mean on a log scale
 * from a minute (0) to a day (1); only a lower bound (none came back): at
 * least that bound's shade, and 1 from an hour up.
 */
export function leaveTone(l: RiskLevel): number {
  if (l.stuck_to_leave.k === 0) return 0;
  const shade = (s: number) => Math.min(1, Math.max(0, Math.log10(s / 60) / Math.log10(1440)));
  if (l.time_to_leave.mean_s !== null) return shade(l.time_to_leave.mean_s);
  return l.time_to_leave.low_s >= 3600 ? 1 : shade(l.time_to_leave.low_s);
}

/** The time back in words for the tooltip: no storm and one that did not end are told apart. */
function leaveWords(l: RiskLevel, leave: string): string {
  if (l.leave === 'none') return 'none stuck';
  return l.leave === 'never' ? `none came back within the run (${leave})` : leave;
}

export function riskCell(l: RiskLevel, here: boolean, colour: RiskColour = 'tip'): RiskCell {
  const day = l.time_to_tip.within_day;
  const leave = l.stuck_to_leave.k === 0 ? '–' : l.time_to_leave.mean_s !== null ? roughTime(l.time_to_leave.mean_s) : `> ${roughTime(l.time_to_leave.low_s)}`;
  return {
    text: `${fmtPct(day.p, 0)} · ${leave}`,
    title: `Tips within a day by chance: ${fmtPct(day.p, 1)} (95%: ${fmtPct(day.low, 1)} to ${fmtPct(day.high, 1)}); ${l.tipped_within_horizon.k} of ${l.tipped_within_horizon.n} runs tipped. Mean time back after being stuck: ${leaveWords(l, leave)}.`,
    here,
    tone: colour === 'tip' ? day.p : leaveTone(l),
  };
}

export function riskTable(map: RiskMap, colour: RiskColour = 'tip'): { head: string[]; rows: { label: string; cells: RiskCell[] }[] } {
  const head = [`${riskKnob(map.knob).label} ↓ · load →`, ...map.rows[0].levels.map((l) => `${fmtNum(l.load, 2)}×`)];
  const rows = map.rows.map((r) => ({
    label: fmtNum(r.value, 3),
    cells: r.levels.map((l) => riskCell(l, r.value === map.operating_value && l.load === 1, colour)),
  }));
  return { head, rows };
}

// ---------- the step-down experiment (POST /api/step-down) ----------

/** The page's staircase: from a fifth of the demand to 1.5x and back, by tenths. */
export const STEP_DOWN = { from: 0.2, to: 1.5, step: 0.1, runs: 5 };

const times = (x: number) => `${fmtNum(x, 2)}×`;

/** What the staircase found, in one sentence (medians over the runs). */
export function stepDownSummary(d: StepDownResult): string {
  const n = d.runs.length;
  const runs = n === 1 ? 'the run' : `the medians of ${n} runs`;
  const top = times(d.loads[Math.floor(d.loads.length / 2)]);
  if (d.tipping_load === null) return `It never became stuck, even at ${top}: the load alone does not tip it here.`;
  const stuckAtTop = d.runs.filter((r) => r.stuck_at_top).length;
  if (d.recovery_load === null) {
    if (stuckAtTop === 0) return `It tips at ${times(d.tipping_load)} going up but was healthy again before the top (${runs}).`;
    return `It tips at ${times(d.tipping_load)} going up and does not come back, even at ${times(d.loads[d.loads.length - 1])} (${runs}).`;
  }
  if (d.recovery_load < d.tipping_load)
    return `It tips at ${times(d.tipping_load)} going up and comes back only at ${times(d.recovery_load)} coming down (${runs}): between the two, it stays as it was.`;
  return `It tips at ${times(d.tipping_load)} going up and comes back at ${times(d.recovery_load)} (${runs}): no loop at these steps.`;
}

/** The chart's columns: time, the demand multiple of each step, and run 0's backlog. */
export function stepDownColumns(d: StepDownResult): [number[], number[], number[]] {
  const t = d.series.t_s;
  const backlog = d.series.backlog ?? t.map(() => 0);
  const step = t.length > 1 ? t[1] - t[0] : d.hold_s;
  const load = t.map((s) => d.loads[Math.min(d.loads.length - 1, Math.floor((s + step / 2) / d.hold_s))]);
  return [t, load, backlog];
}
