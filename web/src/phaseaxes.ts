// Phase-map axes: which range of a key to sweep, and how to place rows on a grid.

import { getPath } from './paths';
import type { Scenario, SchemaKey, SweepRow } from './types';

export const PHASE_CELLS = 40;

export interface Axis { path: string; from: number; to: number; step: number }

const nice = (v: number) => Number(v.toPrecision(6));

/** The step a key must move in (step_s for keys counted in whole steps), or 0. */
export function gridStep(key: SchemaKey, sc: Scenario | null): number {
  if (!key.multiple_of || !sc) return 0;
  const v = Number(getPath(sc, key.multiple_of));
  return v > 0 ? v : 0;
}

/** The top of a sensible range when the value gives none (0 = off, or a huge limit). */
function sensibleTop(key: SchemaKey, sc: Scenario, cur: number): number {
  if (key.path === 'server.queue_limit') {
    const work = sc.server.capacity_per_s * sc.client.timeout_s; // one timeout of work
    return Math.max(10, Math.round(work * 4));
  }
  if (cur > 0 && !(key.max !== undefined && cur >= key.max)) return cur * 2;
  if (key.max !== undefined && key.max <= 1000) return key.max;
  return 10;
}

/** A sensible default range for a key around the scenario's current value. */
export function defaultAxis(key: SchemaKey, sc: Scenario, cells = PHASE_CELLS): Axis {
  const cur = Number(getPath(sc, key.path) ?? 0);
  const kmin = key.min ?? 0;
  let hi = sensibleTop(key, sc, cur);
  if (key.path === 'incident.duration_s') hi = Math.min(Math.max(cur * 2, 10), sc.horizon_s - sc.incident.start_s);
  if (key.path === 'incident.start_s') hi = sc.horizon_s - sc.step_s; // an incident starts inside the run
  if (key.max !== undefined) hi = Math.min(hi, key.max);
  if (!(hi > kmin)) hi = kmin + 1;
  if (key.type === 'integer') return integerAxis(key.path, Math.ceil(kmin), Math.round(hi), cells);
  // Start one cell above the minimum when the minimum is 0 (a 0 demand or
  // duration says nothing).
  const g = gridStep(key, sc);
  const lo = g > 0 ? Math.max(g, Math.ceil(kmin / g) * g) : kmin > 0 && !key.min_exclusive ? kmin : kmin + (hi - kmin) / cells;
  return axisFromRange(key, lo, hi, cells, g);
}

/** Whole numbers from lo to at most top, at most `cells` of them, by a whole
 * step: the last one stays within the range asked for (a step rounded up
 * over the first count would carry it past, 0 to 50 became 0 to 78). */
function integerAxis(path: string, lo: number, top: number, cells: number): Axis {
  top = Math.max(lo + 1, top);
  const step = Math.max(1, Math.ceil((top - lo) / (Math.min(cells, top - lo + 1) - 1)));
  const count = Math.floor((top - lo) / step) + 1;
  return { path, from: lo, to: lo + step * (count - 1), step };
}

/** A range of `cells` values from..to (swapped when reversed); on the key's grid of `g` when g > 0. */
export function axisFromRange(key: SchemaKey, from: number, to: number, cells = PHASE_CELLS, g = 0): Axis {
  if (to < from) [from, to] = [to, from];
  if (g > 0) {
    const lo = Math.max(g, Math.round(from / g) * g);
    const span = Math.max(g, to - lo);
    const step = Math.max(1, Math.round(span / g / (cells - 1))) * g;
    const count = Math.min(cells, Math.floor(span / step + 1e-9) + 1);
    return { path: key.path, from: nice(lo), to: nice(lo + step * (count - 1)), step: nice(step) };
  }
  if (key.type === 'integer') return integerAxis(key.path, Math.round(from), Math.round(to), cells);
  const step = nice((to - from) / (cells - 1));
  return { path: key.path, from: nice(from), to: nice(from + step * (cells - 1)), step };
}

export interface Grid {
  xs: number[];
  ys: number[];
  cells: (SweepRow | undefined)[][]; // [yi][xi]
}

/** Places sweep rows on a grid by their values (rows may come in any order). */
export function gridOf(rows: SweepRow[], xPath: string, yPath: string): Grid {
  const key = (v: number) => Number(v.toPrecision(9));
  const xs = [...new Set(rows.map((r) => key(r.values[xPath])))].sort((a, b) => a - b);
  const ys = [...new Set(rows.map((r) => key(r.values[yPath])))].sort((a, b) => a - b);
  const xi = new Map(xs.map((v, i) => [v, i]));
  const yi = new Map(ys.map((v, i) => [v, i]));
  const cells: (SweepRow | undefined)[][] = ys.map(() => new Array<SweepRow | undefined>(xs.length));
  for (const r of rows) {
    const a = xi.get(key(r.values[xPath]));
    const b = yi.get(key(r.values[yPath]));
    if (a !== undefined && b !== undefined) cells[b][a] = r;
  }
  return { xs, ys, cells };
}
