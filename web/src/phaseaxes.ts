// Phase-map axes: which range of a key to sweep, and how to place rows on a grid.

import { getPath } from './paths';
import type { Scenario, SchemaKey, SweepRow } from './types';

export const PHASE_CELLS = 40;

export interface Axis { path: string; from: number; to: number; step: number }

const nice = (v: number) => Number(v.toPrecision(6));

/** A sensible default range for a key around the scenario's current value. */
export function defaultAxis(key: SchemaKey, sc: Scenario, cells = PHASE_CELLS): Axis {
  const cur = Number(getPath(sc, key.path) ?? 0);
  const kmin = key.min ?? 0;
  let hi = cur > 0 ? cur * 2 : key.max ?? 1;
  if (key.path === 'incident.duration_s') hi = Math.min(Math.max(cur * 2, 10), sc.horizon_s - sc.incident.start_s);
  if (key.path === 'incident.start_s') hi = sc.horizon_s;
  if (key.max !== undefined) hi = Math.min(hi, key.max);
  if (!(hi > kmin)) hi = kmin + 1;
  if (key.type === 'integer') {
    const lo = Math.ceil(kmin);
    const top = Math.max(lo + 1, Math.round(hi));
    const count = Math.min(cells, top - lo + 1);
    const step = Math.max(1, Math.ceil((top - lo) / (count - 1)));
    return { path: key.path, from: lo, to: lo + step * (count - 1), step };
  }
  // Start one cell above the minimum when the minimum is 0 (a 0 demand or
  // duration says nothing).
  const lo = kmin > 0 && !key.min_exclusive ? kmin : kmin + (hi - kmin) / cells;
  return axisFromRange(key, lo, hi, cells);
}

export function axisFromRange(key: SchemaKey, from: number, to: number, cells = PHASE_CELLS): Axis {
  if (key.type === 'integer') {
    const lo = Math.round(from);
    const top = Math.max(lo + 1, Math.round(to));
    const count = Math.min(cells, top - lo + 1);
    const step = Math.max(1, Math.ceil((top - lo) / (count - 1)));
    return { path: key.path, from: lo, to: lo + step * (count - 1), step };
  }
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
