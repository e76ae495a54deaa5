// The load chart and the backlog chart (uPlot). Data comes from series.ts;
// the incident window, the amplification bound and the peak are drawn here and,
// for agent runs with runs > 1, the 95% band of the mean goodput.

import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { moments, placeLabel, type Box } from './events';
import { fmtAmp, fmtNum, fmtTime } from './format';
import { goodputBandLabel, loadLabels, nearestIndex, type LoadData } from './series';
import type { RunResult } from './types';

/** A label drawn on a chart (CSS pixels inside the chart's canvas), for the tests. */
export interface PlacedLabel extends Box { kind: string; text: string }

const css = (name: string) => getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#888';

/** A pinned run drawn over the charts: its goodput and backlog on the time line of the run on screen (pins.ts). */
export interface PinLine { name: string; goodput: (number | null)[]; backlog: (number | null)[] }

/** Each pin's line: its own colour and its own dash, so that colour is not the only difference. */
export const PIN_DASH = [[8, 3], [2, 3], [10, 3, 2, 3]];

export interface ChartCtx {
  result: RunResult | null;
  data: LoadData | null;
  pins: PinLine[];
  traceT: number | null; // time of the current trace step
  onDrawn: () => void;
}

const SYNC = 'retrystorm';
/** Width of the y axes left and right: the same on both charts so their x axes line up. */
const AXIS_L = 60;
const AXIS_R = 52;

function size(el: HTMLElement, small: boolean) {
  const w = Math.max(280, el.clientWidth || 600);
  const narrow = w < 560;
  return { width: w, height: small ? (narrow ? 130 : 160) : narrow ? 240 : 320 };
}

/** Below this plot width (CSS px) the chart's labels are the numbers of the story table. */
export const NARROW_PLOT_PX = 420;

/** Series indices of the goodput band's edges on the load chart (present only with a band). */
const BAND_LOW = 7;
const BAND_HIGH = 8;

/** 1500 -> "1.5k", 2e6 -> "2M": tick labels of the compressed backlog axis. */
function compact(v: number): string {
  const a = Math.abs(v);
  if (a >= 1e9) return `${fmtNum(v / 1e9, 1)}G`;
  if (a >= 1e6) return `${fmtNum(v / 1e6, 1)}M`;
  if (a >= 1e3) return `${fmtNum(v / 1e3, 1)}k`;
  return fmtNum(v, 0);
}

function fmtVal(v: number | null | undefined) {
  return v === null || v === undefined ? '–' : `${fmtNum(v, 1)}`;
}

export class Charts {
  load: uPlot | null = null;
  backlog: uPlot | null = null;
  labels: PlacedLabel[] = []; // the load chart's annotations as last drawn
  boundY: number | null = null; // the bound line's height on the load chart (CSS px), for the tests
  private ro: ResizeObserver;
  private key = ''; // what the load chart's options depend on: the goodput band, the pins
  private backlogKey = ''; // what the backlog chart's options depend on: the pool's series, the pins
  private zoom: { min: number; max: number } | null = null; // the user's x range, kept across changes
  private syncing = false;

  constructor(private loadEl: HTMLElement, private backlogEl: HTMLElement, private ctx: ChartCtx) {
    this.ro = new ResizeObserver(() => this.resize());
    this.ro.observe(loadEl);
    for (const el of [loadEl, backlogEl]) el.addEventListener('keydown', (e) => this.onKey(e));
  }

  /** The step the keyboard cursor is on (-1: none yet). */
  keyIndex = -1;

  /**
   * Arrow keys step the cursor through time (Shift: ten steps; Home and End:
   * the ends), and the values at the cursor are read out (#chart-live).
   */
  private onKey(e: KeyboardEvent) {
    const d = this.ctx.data;
    if (!d || !d.t.length) return;
    const last = d.t.length - 1;
    const by = e.shiftKey ? 10 : 1;
    const at = this.keyIndex < 0 ? 0 : this.keyIndex;
    const next = e.key === 'ArrowRight' ? Math.min(last, at + (this.keyIndex < 0 ? 0 : by))
      : e.key === 'ArrowLeft' ? Math.max(0, at - by)
        : e.key === 'Home' ? 0 : e.key === 'End' ? last : null;
    if (next === null) return;
    e.preventDefault();
    this.keyIndex = next;
    this.cursorTo(d.t[next]);
    this.ctx.traceT = null; // a keyboard cursor is not a trace step
    const live = document.getElementById('chart-live');
    if (live) live.textContent = this.describeStep(next);
  }

  /** One step's values in words, for a screen reader. */
  describeStep(i: number): string {
    const d = this.ctx.data!;
    return `${fmtTime(d.t[i])} s: ${fmtVal(d.first[i])} first attempts and ${fmtVal(d.retries[i])} retries per second ` +
      `against a capacity of ${fmtVal(d.capacity[i])}; ${fmtVal(d.goodput[i])} answered in time, ${fmtVal(d.late[i])} late; ` +
      `backlog ${fmtVal(d.backlog[i])}.`;
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
    if (u === this.load) this.bandUnder(u);
  };

  /** The Monte Carlo goodput band, filled under the stack and the lines (never over them). */
  private bandUnder(u: uPlot) {
    const d = this.ctx.data;
    const band = d?.goodputBand;
    if (!d || !band) return;
    const ctx = u.ctx;
    ctx.save();
    ctx.beginPath();
    ctx.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height);
    ctx.clip();
    ctx.fillStyle = css('--c-good-band-fill');
    let open = false;
    const lows: [number, number][] = [];
    const flush = () => {
      for (let k = lows.length - 1; k >= 0; k--) ctx.lineTo(lows[k][0], lows[k][1]);
      ctx.closePath();
      ctx.fill();
      lows.length = 0;
      open = false;
    };
    for (let i = 0; i < d.t.length; i++) {
      const lo = band.low[i];
      const hi = band.high[i];
      if (lo === null || hi === null) { if (open) flush(); continue; }
      const x = u.valToPos(d.t[i], 'x', true);
      const y = u.valToPos(hi, 'y', true);
      if (!open) { ctx.beginPath(); ctx.moveTo(x, y); open = true; } else ctx.lineTo(x, y);
      lows.push([x, u.valToPos(lo, 'y', true)]);
    }
    if (open) flush();
    ctx.restore();
  }

  /** Vertical lines and labels for the moments of the story, the peak, the trace step. */
  private markHook = (u: uPlot) => {
    const d = this.ctx.data;
    const r = this.ctx.result;
    if (!d || !r) return;
    const ctx = u.ctx;
    const dpr = devicePixelRatio || 1;
    const { top, height, left, width } = u.bbox;
    const area: Box = { x: left / dpr, y: top / dpr, w: width / dpr, h: height / dpr };
    ctx.save();
    ctx.font = `${11 * dpr}px system-ui, sans-serif`;
    const taken: Box[] = [];
    // The bound line is a band of its own: no label may sit on it.
    const boundLevel = d.bound[0];
    const by = boundLevel !== undefined ? u.valToPos(boundLevel, 'y', true) / dpr : null;
    this.boundY = by !== null && by >= area.y && by <= area.y + area.h ? by : null;
    if (this.boundY !== null) taken.push({ x: area.x, y: this.boundY - 3, w: area.w, h: 6 });
    const labels: PlacedLabel[] = [];
    const draw = (kind: string, text: string, x: number, y0: number, colour: string) => {
      const w = ctx.measureText(text).width / dpr + 8;
      const box = placeLabel(w, 15, x, y0, area, taken);
      taken.push(box);
      labels.push({ ...box, kind, text });
      ctx.fillStyle = css('--label-bg');
      ctx.fillRect(box.x * dpr, box.y * dpr, box.w * dpr, box.h * dpr);
      ctx.strokeStyle = colour;
      ctx.lineWidth = dpr;
      ctx.strokeRect(box.x * dpr, box.y * dpr, box.w * dpr, box.h * dpr);
      ctx.fillStyle = css('--fg');
      ctx.fillText(text, (box.x + 4) * dpr, (box.y + 11.5) * dpr);
    };
    const colours: Record<string, string> = {
      incident: css('--fg-muted'), overload: css('--c-late'), 'give-up': css('--c-late'), failed: css('--c-failed'), budget: css('--c-bound'),
      'incident-end': css('--fg-muted'), recovery: css('--c-good'), never: css('--c-failed'),
    };
    // A phone-wide plot has no room for sentences: each line gets its number in
    // the story table below the charts, and the peak its figure alone.
    const narrow = area.w < NARROW_PLOT_PX;
    moments(r).forEach((m, k) => {
      // "never" belongs at the run's end, which can sit just past the last sample.
      const x = m.kind === 'never' ? Math.min(u.valToPos(m.t, 'x', true), left + width) : u.valToPos(m.t, 'x', true);
      if (x < left - 1 || x > left + width + 1) return;
      if (m.kind !== 'incident' && m.kind !== 'never') {
        ctx.strokeStyle = colours[m.kind];
        ctx.lineWidth = 1.2 * dpr;
        ctx.setLineDash([5 * dpr, 4 * dpr]);
        ctx.beginPath();
        ctx.moveTo(x, top);
        ctx.lineTo(x, top + height);
        ctx.stroke();
        ctx.setLineDash([]);
      }
      const text = narrow ? String(k + 1) : m.label;
      const lx = m.kind === 'never' ? x / dpr - (narrow ? 20 : 200) : x / dpr + 3;
      draw(m.kind, text, lx, area.y + 2, colours[m.kind]);
    });
    // Peak marker: a ring on the stack, its label boxed beside it.
    const pt = r.metrics.peak_step_t_s;
    let i = pt !== undefined ? nearestIndex(d.t, pt) : -1;
    if (i < 0) {
      let best = -1;
      d.stackTop.forEach((v, j) => { if (d.first[j] > 0 && v / d.first[j] > best) { best = v / d.first[j]; i = j; } });
    }
    if (i >= 0) {
      const x = u.valToPos(d.t[i], 'x', true);
      const y = u.valToPos(d.stackTop[i], 'y', true);
      ctx.strokeStyle = css('--c-peak');
      ctx.lineWidth = 2 * dpr;
      ctx.beginPath();
      ctx.arc(x, y, 5 * dpr, 0, Math.PI * 2);
      ctx.stroke();
      const ring: Box = { x: x / dpr - 6, y: y / dpr - 6, w: 12, h: 12 };
      taken.push(ring);
      draw('peak', narrow ? fmtAmp(r.metrics.peak_amplification) : `peak ${fmtAmp(r.metrics.peak_amplification)}`, x / dpr + 9, Math.max(area.y + 2, y / dpr - 8), css('--c-peak'));
    }
    ctx.restore();
    this.labels = labels;
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

  /** The tooltip beside the cursor: time and every value of the load chart. */
  private tipHook = (u: uPlot) => {
    const tip = document.getElementById('chart-tip');
    const d = this.ctx.data;
    if (!tip || !d) return;
    const i = u.cursor.idx;
    const l = u.cursor.left ?? -1;
    if (i === null || i === undefined || l < 0) { tip.hidden = true; return; }
    const rows: [string, string][] = [
      ['t', `${fmtTime(d.t[i])} s`], ['first attempts', fmtVal(d.first[i])], ['retries', fmtVal(d.retries[i])],
      ['capacity', fmtVal(d.capacity[i])], ['on time', fmtVal(d.goodput[i])], ['late', fmtVal(d.late[i])], ['backlog', fmtVal(d.backlog[i])],
    ];
    if (d.goodputBand) rows.push(['95% band', `${fmtVal(d.goodputBand.low[i])}–${fmtVal(d.goodputBand.high[i])}`]);
    tip.replaceChildren(...rows.map(([k, v]) => { const p = document.createElement('div'); p.textContent = `${k}: ${v}`; return p; }));
    tip.hidden = false;
    const over = u.over.getBoundingClientRect();
    const host = tip.offsetParent?.getBoundingClientRect() ?? { left: 0, top: 0 };
    const x = over.left - host.left + l;
    const y = over.top - host.top + (u.cursor.top ?? 0);
    const flip = l > over.width / 2;
    tip.style.left = `${flip ? x - tip.offsetWidth - 14 : x + 14}px`;
    tip.style.top = `${Math.max(0, y - tip.offsetHeight / 2)}px`;
  };

  /** Keeps the user's zoom and shows it on the other chart too. */
  private scaleHook = (u: uPlot, key: string) => {
    if (key !== 'x' || this.syncing) return;
    const min = u.scales.x.min;
    const max = u.scales.x.max;
    const d = this.ctx.data;
    if (min === undefined || max === undefined || !d || !d.t.length) return;
    const full = min <= d.t[0] + 1e-9 && max >= d.t[d.t.length - 1] - 1e-9;
    this.zoom = full ? null : { min, max };
    const other = u === this.load ? this.backlog : this.load;
    if (other) {
      this.syncing = true;
      other.setScale('x', { min, max });
      this.syncing = false;
    }
  };

  private loadOpts(): uPlot.Options {
    const d = () => this.ctx.data;
    // A graph's load line is its incident service's arrivals: the legend names it.
    const labels = loadLabels({ service: this.ctx.data?.service ?? null });
    const axisColor = css('--fg-muted');
    const grid = css('--grid');
    const axis = (label: string): uPlot.Axis => ({ stroke: axisColor, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, label, labelSize: 18 });
    const opts: uPlot.Options = {
      ...size(this.loadEl, false),
      cursor: { sync: { key: SYNC }, drag: { x: true, y: false } },
      scales: { x: { time: false } },
      legend: { live: true },
      // The empty right axis keeps the plot as wide as the backlog chart's.
      axes: [axis('seconds'), { ...axis('per second'), size: AXIS_L }, { side: 1, size: AXIS_R, label: ' ', labelSize: 18, values: () => [], grid: { show: false }, ticks: { show: false } }],
      series: [
        { label: 't', value: (_u, v) => (v === null ? '–' : `${fmtNum(v, 2)} s`) },
        { label: labels.first, stroke: css('--c-first'), fill: css('--c-first-fill'), width: 1, value: (_u, v) => fmtVal(v) },
        {
          label: labels.retries,
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
        setCursor: [this.tipHook],
        setScale: [this.scaleHook],
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
        { label: goodputBandLabel(band.runs), stroke: css('--c-good-band'), width: 1, dash: [3, 3], value: bandVal },
        { label: 'goodput 95% interval, high', stroke: css('--c-good-band'), width: 1, dash: [3, 3], value: (_u, v) => fmtVal(v) },
      );
      // The fill between the edges is drawn under everything (bandUnder), not over the stack.
      opts.hooks!.setSeries = [(u, i, o) => {
        if (i === BAND_LOW && o.show !== undefined && u.series[BAND_HIGH].show !== o.show) u.setSeries(BAND_HIGH, { show: o.show });
      }];
    }
    this.pinSeries(opts, 'goodput');
    return opts;
  }

  /** One dashed line per pinned run, after the run's own series. */
  private pinSeries(opts: uPlot.Options, what: 'goodput' | 'backlog') {
    this.ctx.pins.forEach((p, i) => opts.series.push({
      label: `${p.name} (pinned${what === 'goodput' ? ', on time' : ''})`, stroke: css(`--c-pin${i + 1}`), width: 2, dash: PIN_DASH[i], value: (_u, v) => fmtVal(v),
    }));
  }

  private backlogOpts(): uPlot.Options {
    const axisColor = css('--fg-muted');
    const grid = css('--grid');
    const axis = (label: string): uPlot.Axis => ({ stroke: axisColor, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, label, labelSize: 18 });
    const opts: uPlot.Options = {
      ...size(this.backlogEl, true),
      cursor: { sync: { key: SYNC }, drag: { x: true, y: false } },
      // A compressed (asinh) scale: one timeout of work stays visible beside a backlog a hundred times larger.
      scales: { x: { time: false }, y: { distr: 4, asinh: 1 } },
      axes: [axis('seconds'), { ...axis('queued'), size: AXIS_L, values: (_u, v) => v.map((x, i) => (v.length > 6 && i % 2 ? '' : compact(x))) }, { ...axis('failed /s'), scale: 'f', side: 1, size: AXIS_R, grid: { show: false } }],
      series: [
        { label: 't', value: (_u, v) => (v === null ? '–' : `${fmtNum(v, 2)} s`) },
        { label: 'Backlog', stroke: css('--c-backlog'), fill: css('--c-backlog-fill'), width: 1.5, value: (_u, v) => fmtVal(v) },
        { label: 'One timeout of work', stroke: css('--c-late'), width: 1.5, dash: [6, 4], value: (_u, v) => fmtVal(v) },
        { label: 'Failed /s', stroke: css('--c-failed'), width: 1.5, scale: 'f', value: (_u, v) => fmtVal(v) },
      ],
      hooks: { drawClear: [this.incidentHook], setScale: [this.scaleHook] },
    };
    // Client connection pools (client.max_connections): attempts that wait before they are sent.
    if (this.ctx.data?.pooled) opts.series.push({ label: 'Waiting for a connection', stroke: css('--c-first'), width: 1.5, dash: [4, 2], value: (_u, v) => fmtVal(v) });
    this.pinSeries(opts, 'backlog');
    return opts;
  }

  private loadArrays(): uPlot.AlignedData {
    const d = this.ctx.data!;
    const data: (number | null)[][] = [d.t, d.first, d.stackTop, d.capacity, d.goodput, d.late, d.bound];
    if (d.goodputBand) data.push(d.goodputBand.low, d.goodputBand.high);
    for (const p of this.ctx.pins) data.push(p.goodput);
    return data as uPlot.AlignedData;
  }

  private backlogArrays(): uPlot.AlignedData {
    const d = this.ctx.data!;
    return [d.t, d.backlog, d.timeoutWork, d.failed, ...(d.pooled ? [d.pooled] : []), ...this.ctx.pins.map((p) => p.backlog)] as uPlot.AlignedData;
  }

  /**
   * Draws the current data; creates the charts on first use. `loadOnly`: only the load
   * chart's data changed (a Monte Carlo batch brings the band, not a new backlog), so
   * the backlog chart is left as drawn: on a busy machine its redraw took time from the
   * server's runs of the next batch.
   */
  render(loadOnly = false) {
    if (!this.ctx.data) return;
    // New data resets the scales: keep the user's zoom through it.
    const z = this.zoom;
    this.syncing = true;
    // The band's series come and go with the answer: rebuild the load chart then.
    const band = this.ctx.data.goodputBand;
    const pins = this.ctx.pins.map((p) => p.name).join('|');
    // Not the band's run count: a Monte Carlo arriving batch by batch redraws in place.
    // Nor the service the load line is of (a graph's): its legend names it.
    const key = `${band ? 'band' : 'none'}|${pins}|${this.ctx.data.service ?? ''}`;
    const backlogKey = `${this.ctx.data.pooled ? 'pooled' : ''}|${pins}`;
    if (key !== this.key) {
      this.load?.destroy();
      this.load = null;
    }
    if (backlogKey !== this.backlogKey) {
      this.backlog?.destroy();
      this.backlog = null;
    }
    this.key = key;
    this.backlogKey = backlogKey;
    if (!this.load) {
      this.load = new uPlot(this.loadOpts(), this.loadArrays(), this.loadEl);
      // The high edge shares the low edge's legend row.
      const row = this.loadEl.querySelectorAll<HTMLElement>('.u-legend .u-series')[BAND_HIGH];
      if (band && row) row.hidden = true;
    } else this.load.setData(this.loadArrays());
    const backlogToo = !this.backlogEl.hidden && (!loadOnly || !this.backlog);
    if (backlogToo) {
      if (!this.backlog) this.backlog = new uPlot(this.backlogOpts(), this.backlogArrays(), this.backlogEl);
      else this.backlog.setData(this.backlogArrays());
    }
    if (z) for (const u of backlogToo ? [this.load, this.backlog] : [this.load]) u?.setScale('x', { min: z.min, max: z.max });
    this.zoom = z;
    this.syncing = false;
    const bound = this.ctx.result ? `Bound: ${fmtAmp(this.ctx.result.metrics.bound.max_amplification)} demand` : 'Bound';
    const labels = this.loadEl.querySelectorAll<HTMLElement>('.u-legend .u-series th .u-label');
    if (labels[6]) labels[6].textContent = bound;
    if (band && labels[BAND_LOW]) labels[BAND_LOW].textContent = goodputBandLabel(band.runs);
  }

  /** Forgets the user's zoom: a new preset is a new time line, shown whole. */
  resetZoom() {
    this.zoom = null;
  }

  /** The x range shown (zoomed or whole). */
  xRange(): [number, number] | null {
    const x = this.load?.scales.x;
    return x && x.min !== undefined && x.max !== undefined ? [x.min, x.max] : null;
  }

  /** Whether the plots of both charts start and end at the same pixels. */
  aligned(): boolean {
    if (!this.load || !this.backlog) return false;
    const a = this.load.over.getBoundingClientRect();
    const b = this.backlog.over.getBoundingClientRect();
    return Math.abs(a.left - b.left) < 1 && Math.abs(a.width - b.width) < 1;
  }

  /** Height above the backlog chart's x axis of its "one timeout of work" line (CSS px). */
  timeoutLinePx(): number | null {
    const u = this.backlog;
    const d = this.ctx.data;
    if (!u || !d || !d.timeoutWork.length) return null;
    return u.bbox.height / (devicePixelRatio || 1) - u.valToPos(d.timeoutWork[0], 'y');
  }

  /** Rebuilds with the current theme's colours. */
  rebuild() {
    const z = this.zoom;
    this.load?.destroy();
    this.backlog?.destroy();
    this.load = null;
    this.backlog = null;
    this.zoom = z;
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
