// The phase map: a grid of runs over two keys, drawn on a canvas, each cell
// coloured by recovery time (or "stuck"). Clicking a cell loads its scenario.

import { legendStops, recoveryColor } from './colorscale';
import { criterionOf, fmtNum, recoveryOf, type Criterion } from './format';
import type { Grid } from './phaseaxes';
import type { Scenario, SweepRow } from './types';

export interface PhaseView {
  grid: Grid;
  xPath: string;
  yPath: string;
  xLabel: string;
  yLabel: string;
  criterion: Criterion;
  max: number;
  current: { x: number; y: number } | null;
}

const css = (n: string) => getComputedStyle(document.documentElement).getPropertyValue(n).trim() || '#888';

export function cellValue(r: SweepRow | undefined, crit: Criterion): number | null | undefined {
  if (!r) return undefined;
  return recoveryOf(r.metrics, crit);
}

export function maxRecovery(grid: Grid, crit: Criterion): number {
  let m = 0;
  for (const row of grid.cells) for (const c of row) {
    const v = cellValue(c, crit);
    if (typeof v === 'number' && v > m) m = v;
  }
  return m || 1;
}

export function makeView(grid: Grid, xPath: string, yPath: string, xLabel: string, yLabel: string, sc: Scenario): PhaseView {
  const crit = criterionOf(sc);
  return { grid, xPath, yPath, xLabel, yLabel, criterion: crit, max: maxRecovery(grid, crit), current: null };
}

const PAD = { left: 58, bottom: 40, top: 8, right: 8 };

export class PhaseMap {
  view: PhaseView | null = null;
  focus = { xi: 0, yi: 0 };

  constructor(
    private canvas: HTMLCanvasElement,
    private tip: HTMLElement,
    private legend: HTMLElement,
    private onPick: (values: Record<string, number>) => void,
  ) {
    canvas.addEventListener('click', (e) => {
      const c = this.cellAt(e.offsetX, e.offsetY);
      if (c) { this.focus = c; this.pick(); }
    });
    canvas.addEventListener('mousemove', (e) => {
      const c = this.cellAt(e.offsetX, e.offsetY);
      if (c) this.describe(c.xi, c.yi);
    });
    canvas.addEventListener('keydown', (e) => {
      if (!this.view) return;
      const { xs, ys } = this.view.grid;
      const f = this.focus;
      if (e.key === 'ArrowLeft') f.xi = Math.max(0, f.xi - 1);
      else if (e.key === 'ArrowRight') f.xi = Math.min(xs.length - 1, f.xi + 1);
      else if (e.key === 'ArrowUp') f.yi = Math.min(ys.length - 1, f.yi + 1);
      else if (e.key === 'ArrowDown') f.yi = Math.max(0, f.yi - 1);
      else if (e.key === 'Enter' || e.key === ' ') { this.pick(); e.preventDefault(); return; }
      else return;
      e.preventDefault();
      this.draw();
      this.describe(f.xi, f.yi);
    });
    new ResizeObserver(() => this.draw()).observe(canvas.parentElement ?? canvas);
  }

  private geom() {
    const v = this.view!;
    const w = this.canvas.clientWidth;
    const h = this.canvas.clientHeight;
    const pw = w - PAD.left - PAD.right;
    const ph = h - PAD.top - PAD.bottom;
    return { w, h, pw, ph, cw: pw / v.grid.xs.length, ch: ph / v.grid.ys.length };
  }

  private cellAt(px: number, py: number) {
    if (!this.view) return null;
    const g = this.geom();
    const xi = Math.floor((px - PAD.left) / g.cw);
    const yi = this.view.grid.ys.length - 1 - Math.floor((py - PAD.top) / g.ch);
    if (xi < 0 || yi < 0 || xi >= this.view.grid.xs.length || yi >= this.view.grid.ys.length) return null;
    return { xi, yi };
  }

  private pick() {
    const v = this.view;
    if (!v) return;
    this.onPick({ [v.xPath]: v.grid.xs[this.focus.xi], [v.yPath]: v.grid.ys[this.focus.yi] });
  }

  describe(xi: number, yi: number) {
    const v = this.view;
    if (!v) return;
    const r = v.grid.cells[yi]?.[xi];
    const val = cellValue(r, v.criterion);
    const out = val === undefined ? 'no run' : val === null ? 'stuck' : `recovers in ${fmtNum(val)} s`;
    this.tip.textContent = `${v.xLabel} ${fmtNum(v.grid.xs[xi], 3)}, ${v.yLabel} ${fmtNum(v.grid.ys[yi], 3)}: ${out}${r ? `, ${(r.metrics.failed_fraction * 100).toFixed(1)}% failed` : ''}`;
  }

  show(view: PhaseView) {
    this.view = view;
    const f = this.focus;
    f.xi = Math.min(f.xi, view.grid.xs.length - 1);
    f.yi = Math.min(f.yi, view.grid.ys.length - 1);
    this.canvas.setAttribute('aria-label', `Phase map: ${view.grid.xs.length} by ${view.grid.ys.length} runs of ${view.xLabel} across and ${view.yLabel} up`);
    this.canvas.dataset.cells = String(view.grid.xs.length * view.grid.ys.length);
    this.draw();
    this.legend.replaceChildren(
      ...legendStops(view.max).map(([label, color]) => {
        const s = document.createElement('span');
        s.className = 'swatch';
        const b = document.createElement('i');
        b.style.background = color;
        s.append(b, document.createTextNode(label));
        return s;
      }),
    );
  }

  draw() {
    const v = this.view;
    const cv = this.canvas;
    const dpr = devicePixelRatio || 1;
    const w = cv.clientWidth;
    const h = cv.clientHeight;
    if (!w || !h) return;
    cv.width = Math.round(w * dpr);
    cv.height = Math.round(h * dpr);
    const ctx = cv.getContext('2d')!;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, h);
    if (!v) return;
    const g = this.geom();
    const { xs, ys, cells } = v.grid;
    for (let yi = 0; yi < ys.length; yi++) {
      for (let xi = 0; xi < xs.length; xi++) {
        const val = cellValue(cells[yi][xi], v.criterion);
        ctx.fillStyle = val === undefined ? css('--bg') : recoveryColor(val, v.max);
        const x = PAD.left + xi * g.cw;
        const y = PAD.top + (ys.length - 1 - yi) * g.ch;
        ctx.fillRect(x, y, Math.ceil(g.cw), Math.ceil(g.ch));
      }
    }
    ctx.fillStyle = css('--fg-muted');
    ctx.strokeStyle = css('--fg-muted');
    ctx.font = '11px system-ui, sans-serif';
    ctx.textAlign = 'center';
    const ticks = 5;
    for (let i = 0; i < ticks; i++) {
      const xi = Math.round((i * (xs.length - 1)) / (ticks - 1));
      ctx.fillText(fmtNum(xs[xi], 2), PAD.left + (xi + 0.5) * g.cw, PAD.top + g.ph + 14);
    }
    ctx.fillText(v.xLabel, PAD.left + g.pw / 2, PAD.top + g.ph + 32);
    ctx.textAlign = 'right';
    for (let i = 0; i < ticks; i++) {
      const yi = Math.round((i * (ys.length - 1)) / (ticks - 1));
      ctx.fillText(fmtNum(ys[yi], 2), PAD.left - 6, PAD.top + (ys.length - 1 - yi + 0.5) * g.ch + 4);
    }
    ctx.save();
    ctx.translate(12, PAD.top + g.ph / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = 'center';
    ctx.fillText(v.yLabel, 0, 0);
    ctx.restore();
    // Current scenario and keyboard focus
    const ring = (xi: number, yi: number, color: string, width: number) => {
      ctx.strokeStyle = color;
      ctx.lineWidth = width;
      ctx.strokeRect(PAD.left + xi * g.cw + 1, PAD.top + (ys.length - 1 - yi) * g.ch + 1, g.cw - 2, g.ch - 2);
    };
    if (v.current) {
      const xi = nearest(xs, v.current.x);
      const yi = nearest(ys, v.current.y);
      ring(xi, yi, css('--fg'), 2);
    }
    if (document.activeElement === cv) ring(this.focus.xi, this.focus.yi, css('--accent'), 2);
  }
}

function nearest(arr: number[], v: number) {
  let best = 0;
  for (let i = 1; i < arr.length; i++) if (Math.abs(arr[i] - v) < Math.abs(arr[best] - v)) best = i;
  return best;
}
