// Colours of the phase map: recovery time from fast (green) to slow (orange,
// red); "stuck" has its own colour so it never reads as a long recovery.

export const STUCK_COLOR = 'rgb(92, 38, 110)';

const STOPS: [number, [number, number, number]][] = [
  [0, [46, 160, 90]],
  [0.35, [220, 200, 60]],
  [0.7, [235, 130, 40]],
  [1, [200, 50, 40]],
];

export function lerp(a: number, b: number, t: number): number {
  return a + (b - a) * t;
}

/** Colour for a recovery time (seconds) on a scale up to `max`; null = stuck. */
export function recoveryColor(v: number | null, max: number): string {
  if (v === null || !Number.isFinite(v)) return STUCK_COLOR;
  return scaleColor(max > 0 ? v / max : 0);
}

/** Colour of a share of a scale from 0 (green, fine) to 1 (red, worst); clamped. */
export function scaleColor(share: number): string {
  const t = Math.min(1, Math.max(0, Number.isFinite(share) ? share : 1));
  for (let i = 1; i < STOPS.length; i++) {
    const [t1, c1] = STOPS[i];
    const [t0, c0] = STOPS[i - 1];
    if (t <= t1) {
      const u = (t - t0) / (t1 - t0);
      return `rgb(${Math.round(lerp(c0[0], c1[0], u))}, ${Math.round(lerp(c0[1], c1[1], u))}, ${Math.round(lerp(c0[2], c1[2], u))})`;
    }
  }
  const c = STOPS[STOPS.length - 1][1];
  return `rgb(${c[0]}, ${c[1]}, ${c[2]})`;
}

/** Legend stops: [label, colour] from 0 to max, then stuck. */
export function legendStops(max: number, n = 5): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i < n; i++) {
    const v = (max * i) / (n - 1);
    out.push([`${Number(v.toFixed(v < 10 ? 1 : 0))} s`, recoveryColor(v, max)]);
  }
  out.push(['stuck', STUCK_COLOR]);
  return out;
}
