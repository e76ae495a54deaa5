// The occupancy chart of the session model (uPlot): sessions in flight stacked
// as working / blocked / asleep, completions and 429 answers per bucket on a
// second axis, the focus window shaded and, with runs > 1, the 95% band of the
// mean in flight.

import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { fmtNum } from './format';
import { CLOCK_INCRS, fmtClock, isWholeRun, pickWindow, stackOccupancy, type Window } from './sessions';
import type { SessionResult } from './types';

const css = (name: string) => getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#888';

function size(el: HTMLElement) {
  const w = Math.max(280, el.clientWidth || 600);
  return { width: w, height: w < 560 ? 260 : 340 };
}

const fmtVal = (v: number | null | undefined, d = 2) => (v === null || v === undefined ? '–' : fmtNum(v, d));
/** Zero counts are left out so the marks show only where something happened. */
const nonZero = (a: number[] | undefined, n: number) => {
  const out = new Array<number | null>(n);
  for (let i = 0; i < n; i++) out[i] = a && a[i] ? a[i] : null;
  return out;
};

export function bucketLabel(step: number): string {
  return step % 60 === 0 ? `per ${fmtNum(step / 60)} min` : `per ${fmtNum(step)} s`;
}

export class OccupancyChart {
  u: uPlot | null = null;
  private r: SessionResult | null = null;
  private win: Window | null = null;
  private band = false;
  private key = ''; // what the options depend on: the band and the bucket
  private ro: ResizeObserver;

  constructor(private el: HTMLElement, private onDrawn: () => void) {
    this.ro = new ResizeObserver(() => { if (this.u && !this.el.hidden) this.u.setSize(size(this.el)); });
    this.ro.observe(el);
  }

  private windowHook = (u: uPlot) => {
    const r = this.r;
    const w = this.win;
    if (!r || !w || isWholeRun(w, r.series.t_s, r.scenario.step_s)) return;
    const x0 = u.valToPos(w.from, 'x', true);
    const x1 = u.valToPos(w.to, 'x', true);
    const { top, height, left, width } = u.bbox;
    const a = Math.max(left, Math.min(x0, x1));
    const b = Math.min(left + width, Math.max(x0, x1));
    if (b <= a) return;
    const ctx = u.ctx;
    const dpr = devicePixelRatio || 1;
    ctx.save();
    ctx.fillStyle = css('--c-window');
    ctx.fillRect(a, top, b - a, height);
    ctx.fillStyle = css('--fg-muted');
    ctx.font = `${11 * dpr}px system-ui, sans-serif`;
    ctx.fillText('focus window', a + 4 * dpr, top + 12 * dpr);
    ctx.restore();
  };

  private opts(): uPlot.Options {
    const r = this.r!;
    const step = r.scenario.step_s;
    const axisColor = css('--fg-muted');
    const grid = css('--grid');
    const axis = (label: string): uPlot.Axis => ({ stroke: axisColor, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, label, labelSize: 18 });
    // Legend values: the layer itself, not the stacked top.
    const rawVal = (name: 'working' | 'blocked' | 'asleep') => (_u: uPlot, _v: number | null, _s: number, i: number | null) => {
      const arr = this.r?.series[name];
      return i === null || i === undefined || !arr ? '–' : fmtVal(arr[i]);
    };
    const series: uPlot.Series[] = [
      { label: 'time', value: (_u, v) => (v === null ? '–' : fmtClock(v)) },
      { label: 'Asleep in backoff', stroke: css('--c-asleep'), width: 1, value: rawVal('asleep') },
      { label: 'Blocked on the API', stroke: css('--c-blocked'), width: 1, value: rawVal('blocked') },
      { label: 'Working', stroke: css('--c-working'), fill: css('--c-working-fill'), width: 1, value: rawVal('working') },
      {
        label: 'Completions', scale: 'n', stroke: css('--c-good'), width: 0, paths: () => null,
        points: { show: true, size: 6, fill: css('--c-good'), stroke: css('--c-good') }, value: (_u, v) => fmtVal(v ?? 0, 0),
      },
      {
        label: '429 answers', scale: 'n', stroke: css('--c-failed'), width: 1, paths: uPlot.paths.bars!({ size: [0.8, Infinity, 1], align: 0 }),
        fill: css('--c-failed-fill'), value: (_u, v) => fmtVal(v ?? 0, 0),
      },
    ];
    const bands: uPlot.Band[] = [
      { series: [1, 2], fill: css('--c-asleep-fill') },
      { series: [2, 3], fill: css('--c-blocked-fill') },
    ];
    if (this.band) {
      const runs = r.montecarlo?.runs ?? 0;
      series.push(
        { label: `In flight, 95% band low (${runs} runs)`, stroke: css('--c-band'), width: 1, value: (_u, v) => fmtVal(v) },
        { label: 'band high', stroke: css('--c-band'), width: 1, value: (_u, v) => fmtVal(v) },
      );
      bands.push({ series: [7, 6], fill: css('--c-band-fill') });
    }
    return {
      ...size(this.el),
      cursor: { drag: { x: true, y: false } },
      scales: { x: { time: false }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] }, n: { range: (_u, _min, max) => [0, Math.max(4, max * 2.5)] } },
      legend: { live: true },
      axes: [
        { ...axis('day d hh:mm'), incrs: CLOCK_INCRS, values: (_u, splits) => splits.map((v) => fmtClock(v)), space: 70 },
        { ...axis('sessions in flight'), size: 50 },
        { ...axis(`answers ${bucketLabel(step)}`), scale: 'n', side: 1, size: 50, grid: { show: false } },
      ],
      series,
      bands,
      hooks: {
        drawClear: [this.windowHook],
        draw: [() => {
          this.el.dataset.band = String(this.band);
          this.el.dataset.points = String(this.r?.series.t_s.length ?? 0);
          this.onDrawn();
        }],
      },
    };
  }

  private arrays(): uPlot.AlignedData {
    const s = this.r!.series;
    const n = s.t_s.length;
    const st = stackOccupancy(s);
    const data: (number | null)[][] = [s.t_s, st.total, st.blocked, st.working, nonZero(s.completions, n), nonZero(s.errors_429, n)];
    if (this.band) {
      const b = this.r!.montecarlo!.band!;
      data.push(b.in_flight_low.slice(0, n), b.in_flight_high.slice(0, n));
    }
    return data as uPlot.AlignedData;
  }

  /** Draws a result; rebuilds when the band comes or goes. */
  render(r: SessionResult) {
    this.r = r;
    this.win = pickWindow(r);
    const b = r.montecarlo?.band;
    this.band = !!(b && Array.isArray(b.in_flight_low) && Array.isArray(b.in_flight_high) && b.in_flight_low.length);
    const key = `${this.band}|${r.scenario.step_s}`;
    if (this.u && key === this.key) {
      this.u.setData(this.arrays());
      // the legend label carries the run count
      if (this.band) {
        const lbl = this.el.querySelectorAll<HTMLElement>('.u-legend .u-series th .u-label')[6];
        if (lbl) lbl.textContent = `In flight, 95% band low (${r.montecarlo?.runs ?? 0} runs)`;
      }
      return;
    }
    this.u?.destroy();
    this.key = key;
    this.u = new uPlot(this.opts(), this.arrays(), this.el);
  }

  /** Rebuilds with the current theme's colours. */
  rebuild() {
    this.u?.destroy();
    this.u = null;
    if (this.r) this.render(this.r);
  }
}
