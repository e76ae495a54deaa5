// The load chart and the backlog chart (uPlot). Data comes from series.ts;
// the incident window, the amplification bound and the peak are drawn here and,
// for agent runs with runs > 1, the 95% band of the mean goodput.

import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { fmtAmp, fmtNum } from './format';
import { goodputBandLabel, nearestIndex, type LoadData } from './series';
import type { RunResult } from './types';

const css = (name: string) => getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#888';

export interface ChartCtx {
  result: RunResult | null;
  data: LoadData | null;
  traceT: number | null; // time of the current trace step
  onDrawn: () => void;
}

const SYNC = 'retrystorm';

function size(el: HTMLElement, small: boolean) {
  const w = Math.max(280, el.clientWidth || 600);
  const narrow = w < 560;
  return { width: w, height: small ? (narrow ? 130 : 160) : narrow ? 240 : 320 };
}

/** Series indices of the goodput band's edges on the load chart (present only with a band). */
const BAND_LOW = 7;
const BAND_HIGH = 8;

function fmtVal(v: number | null | undefined) {
  return v === null || v === undefined ? '–' : `${fmtNum(v, 1)}`;
}

export class Charts {
  load: uPlot | null = null;
  backlog: uPlot | null = null;
  private ro: ResizeObserver;
  private key = ''; // what the load chart's options depend on: the goodput band and its run count

  constructor(private loadEl: HTMLElement, private backlogEl: HTMLElement, private ctx: ChartCtx) {
    this.ro = new ResizeObserver(() => this.resize());
    this.ro.observe(loadEl);
  }

  private incidentHook = (u: uPlot) => {
    const r = this.ctx.result;
    if (!r) return;
    const inc = r.scenario.incident;
    const x0 = u.valToPos(inc.start_s, 'x', true);
    const x1 = u.valToPos(inc.start_s + inc.duration_s, 'x', true);
    const { top, height, left, width } = u.bbox;
    const a = Math.max(left, Math.min(x0, x1));
    const b = Math.min(left + width, Math.max(x0, x1));
    const ctx = u.ctx;
    ctx.save();
    ctx.fillStyle = css('--c-incident');
    ctx.fillRect(a, top, Math.max(1, b - a), height);
    ctx.restore();
  };

  private markHook = (u: uPlot) => {
    const d = this.ctx.data;
    const r = this.ctx.result;
    if (!d || !r) return;
    const ctx = u.ctx;
    const { top, height } = u.bbox;
    const dpr = devicePixelRatio || 1;
    // Peak marker
    const pt = r.metrics.peak_step_t_s;
    let i = pt !== undefined ? nearestIndex(d.t, pt) : -1;
    if (i < 0) {
      let best = -1;
      d.stackTop.forEach((v, j) => { if (d.first[j] > 0 && v / d.first[j] > best) { best = v / d.first[j]; i = j; } });
    }
    if (i >= 0) {
      const x = u.valToPos(d.t[i], 'x', true);
      const y = u.valToPos(d.stackTop[i], 'y', true);
      ctx.save();
      ctx.strokeStyle = css('--c-peak');
      ctx.fillStyle = css('--c-peak');
      ctx.lineWidth = 2 * dpr;
      ctx.beginPath();
      ctx.arc(x, y, 5 * dpr, 0, Math.PI * 2);
      ctx.stroke();
      ctx.font = `${12 * dpr}px system-ui, sans-serif`;
      const label = `peak ${fmtAmp(r.metrics.peak_amplification)}`;
      const tw = ctx.measureText(label).width;
      const lx = Math.min(x + 8 * dpr, u.bbox.left + u.bbox.width - tw - 2);
      ctx.fillText(label, lx, Math.max(top + 12 * dpr, y - 8 * dpr));
      ctx.restore();
    }
    // Trace marker
    if (this.ctx.traceT !== null) {
      const x = u.valToPos(this.ctx.traceT, 'x', true);
      ctx.save();
      ctx.strokeStyle = css('--c-trace');
      ctx.setLineDash([4 * dpr, 3 * dpr]);
      ctx.lineWidth = 1.5 * dpr;
      ctx.beginPath();
      ctx.moveTo(x, top);
      ctx.lineTo(x, top + height);
      ctx.stroke();
      ctx.restore();
    }
  };

  private loadOpts(): uPlot.Options {
    const d = () => this.ctx.data;
    const axisColor = css('--fg-muted');
    const grid = css('--grid');
    const axis = (label: string): uPlot.Axis => ({ stroke: axisColor, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, label, labelSize: 18 });
    const opts: uPlot.Options = {
      ...size(this.loadEl, false),
      cursor: { sync: { key: SYNC }, drag: { x: true, y: false } },
      scales: { x: { time: false } },
      legend: { live: true },
      axes: [axis('seconds'), { ...axis('per second'), size: 56 }],
      series: [
        { label: 't', value: (_u, v) => (v === null ? '–' : `${fmtNum(v, 2)} s`) },
        { label: 'First attempts', stroke: css('--c-first'), fill: css('--c-first-fill'), width: 1, value: (_u, v) => fmtVal(v) },
        {
          label: 'Retries',
          stroke: css('--c-retry'),
          width: 1,
          value: (_u, _v, _s, i) => (i === null || i === undefined || !d() ? '–' : fmtVal(d()!.retries[i])),
        },
        { label: 'Capacity', stroke: css('--c-capacity'), width: 2, paths: uPlot.paths.stepped!({ align: 1 }), value: (_u, v) => fmtVal(v) },
        { label: 'On-time responses', stroke: css('--c-good'), width: 2.5, value: (_u, v) => fmtVal(v) },
        { label: 'Late (wasted)', stroke: css('--c-late'), width: 2, dash: [6, 4], value: (_u, v) => fmtVal(v) },
        { label: 'Bound', stroke: css('--c-bound'), width: 1.5, dash: [2, 4], value: (_u, v) => fmtVal(v) },
      ],
      bands: [{ series: [2, 1], fill: css('--c-retry-fill') }],
      hooks: {
        drawClear: [this.incidentHook],
        draw: [this.markHook, () => {
          this.loadEl.dataset.band = String(!!this.ctx.data?.goodputBand);
          this.ctx.onDrawn();
        }],
      },
    };
    const band = this.ctx.data?.goodputBand;
    if (band) {
      // Two edge series with the fill between them; one legend row (the low edge's)
      // shows "low–high" and toggles both.
      const bandVal = (_u: uPlot, _v: number | null, _s: number, i: number | null) => {
        const b = d()?.goodputBand;
        return i === null || i === undefined || !b ? '–' : `${fmtVal(b.low[i])}–${fmtVal(b.high[i])}`;
      };
      opts.series.push(
        { label: goodputBandLabel(band.runs), stroke: css('--c-good-band'), width: 1, value: bandVal },
        { label: 'goodput 95% interval, high', stroke: css('--c-good-band'), width: 1, value: (_u, v) => fmtVal(v) },
      );
      opts.bands!.push({ series: [BAND_HIGH, BAND_LOW], fill: css('--c-good-band-fill') });
      opts.hooks!.setSeries = [(u, i, o) => {
        if (i === BAND_LOW && o.show !== undefined && u.series[BAND_HIGH].show !== o.show) u.setSeries(BAND_HIGH, { show: o.show });
      }];
    }
    return opts;
  }

  private backlogOpts(): uPlot.Options {
    const axisColor = css('--fg-muted');
    const grid = css('--grid');
    const axis = (label: string): uPlot.Axis => ({ stroke: axisColor, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, label, labelSize: 18 });
    return {
      ...size(this.backlogEl, true),
      cursor: { sync: { key: SYNC } },
      scales: { x: { time: false } },
      axes: [axis('seconds'), { ...axis('queued'), size: 56 }, { ...axis('failed /s'), scale: 'f', side: 1, size: 50, grid: { show: false } }],
      series: [
        { label: 't', value: (_u, v) => (v === null ? '–' : `${fmtNum(v, 2)} s`) },
        { label: 'Backlog', stroke: css('--c-backlog'), fill: css('--c-backlog-fill'), width: 1.5, value: (_u, v) => fmtVal(v) },
        { label: 'One timeout of work', stroke: css('--c-late'), width: 1.5, dash: [6, 4], value: (_u, v) => fmtVal(v) },
        { label: 'Failed /s', stroke: css('--c-failed'), width: 1.5, scale: 'f', value: (_u, v) => fmtVal(v) },
      ],
      hooks: { drawClear: [this.incidentHook] },
    };
  }

  private loadArrays(): uPlot.AlignedData {
    const d = this.ctx.data!;
    const data: (number | null)[][] = [d.t, d.first, d.stackTop, d.capacity, d.goodput, d.late, d.bound];
    if (d.goodputBand) data.push(d.goodputBand.low, d.goodputBand.high);
    return data as uPlot.AlignedData;
  }

  private backlogArrays(): uPlot.AlignedData {
    const d = this.ctx.data!;
    return [d.t, d.backlog, d.timeoutWork, d.failed];
  }

  /** Draws the current data; creates the charts on first use. */
  render() {
    if (!this.ctx.data) return;
    // The band's series come and go with the answer: rebuild the load chart then.
    const band = this.ctx.data.goodputBand;
    const key = band ? `band|${band.runs}` : 'none';
    if (this.load && key !== this.key) {
      this.load.destroy();
      this.load = null;
    }
    this.key = key;
    if (!this.load) {
      this.load = new uPlot(this.loadOpts(), this.loadArrays(), this.loadEl);
      // The high edge shares the low edge's legend row.
      const row = this.loadEl.querySelectorAll<HTMLElement>('.u-legend .u-series')[BAND_HIGH];
      if (band && row) row.hidden = true;
    } else this.load.setData(this.loadArrays());
    if (!this.backlogEl.hidden) {
      if (!this.backlog) this.backlog = new uPlot(this.backlogOpts(), this.backlogArrays(), this.backlogEl);
      else this.backlog.setData(this.backlogArrays());
    }
    const bound = this.ctx.result ? `Bound: ${fmtAmp(this.ctx.result.metrics.bound.max_amplification)} demand` : 'Bound';
    const lbl = this.loadEl.querySelectorAll<HTMLElement>('.u-legend .u-series th .u-label')[6];
    if (lbl) lbl.textContent = bound;
  }

  /** Rebuilds with the current theme's colours. */
  rebuild() {
    this.load?.destroy();
    this.backlog?.destroy();
    this.load = null;
    this.backlog = null;
    this.render();
  }

  setBacklogVisible(v: boolean) {
    this.backlogEl.hidden = !v;
    if (!v) {
      this.backlog?.destroy();
      this.backlog = null;
    } else this.render();
  }

  resize() {
    if (this.load) this.load.setSize(size(this.loadEl, false));
    if (this.backlog) this.backlog.setSize(size(this.backlogEl, true));
  }

  /** Moves the cursor to time t (the trace step) and redraws its marker. */
  cursorTo(t: number | null) {
    this.ctx.traceT = t;
    const u = this.load;
    const d = this.ctx.data;
    if (!u || !d) return;
    u.redraw(false, false);
    if (t === null) return;
    const i = nearestIndex(d.t, t);
    if (i < 0) return;
    u.setCursor({ left: u.valToPos(d.t[i], 'x'), top: u.valToPos(d.stackTop[i], 'y') });
  }
}
