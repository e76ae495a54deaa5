// Pinned runs: a run kept as a named snapshot, drawn over the charts beside the
// run on screen and compared in one table. The inputs of each pin travel in
// the link (urlstate.ts); its result is the run itself, or run again on load.

import { fmtAmp, fmtNum, fmtPct, shortVerdict } from './format';
import { nearestIndex } from './series';
import type { RunResult, SchemaKey } from './types';
import type { PinState } from './urlstate';

/** At most this many pins: more lines than that would hide the run on screen. */
export const MAX_PINS = 3;

export interface Pin extends PinState {
  result: RunResult | null; // null while it is run again (a pin from the link)
}

/** A name that says what the pin is: its preset and the first keys it changed. */
export function pinName(preset: string, set: PinState['set'], keys: SchemaKey[], taken: string[]): string {
  const label = (p: string) => keys.find((k) => k.path === p)?.label ?? p;
  const what = set.length
    ? `${preset}: ${set.slice(0, 2).map(([p, v]) => `${label(p)} ${String(v)}`).join(', ')}${set.length > 2 ? ` +${set.length - 2}` : ''}`
    : preset;
  let name = what;
  for (let i = 2; taken.includes(name); i++) name = `${what} (${i})`;
  return name;
}

/**
 * Takes `pin` out of `pins` if it is still there: the user may have removed
 * it while its run was under way. True when it was there.
 */
export function removePin(pins: Pin[], pin: Pin): boolean {
  const i = pins.indexOf(pin);
  if (i < 0) return false; // splice(-1, 1) would take the last pin instead
  pins.splice(i, 1);
  return true;
}

/**
 * One per-second series of a pinned run on the time line of the run on screen:
 * the pin's value at the nearest of its own steps, null outside its run.
 */
export function onTimeLine(t: number[], pinT: number[], perSecond: number[]): (number | null)[] {
  if (!pinT.length) return t.map(() => null);
  const half = pinT.length > 1 ? (pinT[1] - pinT[0]) / 2 : 0.5;
  const first = pinT[0] - half;
  const last = pinT[pinT.length - 1] + half;
  return t.map((x) => (x < first || x > last ? null : perSecond[nearestIndex(pinT, x)]));
}

/** The figures the pins table compares, each as text for one run. */
const ROWS: [string, (r: RunResult) => string][] = [
  ['Verdict', (r) => shortVerdict(r.metrics, r.scenario)],
  ['Failed requests', (r) => fmtPct(r.metrics.failed_fraction)],
  ['Wasted work', (r) => fmtPct(r.metrics.wasted_fraction)],
  ['Peak load', (r) => fmtAmp(r.metrics.peak_amplification)],
  ['Goodput back after', (r) => (r.metrics.goodput_recovery_s === null ? 'never' : `${fmtNum(r.metrics.goodput_recovery_s)} s`)],
  ['Failures stop after', (r) => (r.metrics.failure_recovery_s === null ? 'never' : `${fmtNum(r.metrics.failure_recovery_s)} s`)],
  ['Latency p99', (r) => (r.metrics.latency_s?.p99 == null ? '–' : `${fmtNum(r.metrics.latency_s.p99)} s`)],
  ['Engine', (r) => String(r.scenario.engine ?? 'fluid')],
];

/** The table's rows: a label, then the run on screen's text, then each pin's ('…' while it runs). */
export function pinRows(current: RunResult | null, pins: Pin[]): string[][] {
  return ROWS.map(([label, text]) => [label, current ? text(current) : '–', ...pins.map((p) => (p.result ? text(p.result) : '…'))]);
}
