// The step-down experiment's chart (uPlot): run 0's backlog against time,
// with the demand multiple stepping up and back down on a second axis, and
// the stuck rule's backlog as a line: where the backlog crosses it going up
// and comes back under it going down is the loop.

import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { fmtNum } from './format';
import { stepDownColumns } from './risk';
import type { StepDownResult } from './types';

const css = (name: string) => getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#888';

function size(el: HTMLElement) {
  const w = Math.max(280, el.clientWidth || 600);
  return { width: w, height: w < 560 ? 220 : 280 };
}

export class StepDownChart {
  u: uPlot | null = null;
  private d: StepDownResult | null = null;
  private ro: ResizeObserver;

  constructor(private el: HTMLElement) {
    this.ro = new ResizeObserver(() => { if (this.u) this.u.setSize(size(this.el)); });
    this.ro.observe(el);
  }

  private opts(): uPlot.Options {
    const axisColor = css('--fg-muted');
    const grid = css('--grid');
    const axis = (label: string): uPlot.Axis => ({ stroke: axisColor, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, label, labelSize: 18 });
    const rule = this.d!.stuck_rule.backlog_above;
    return {
      ...size(this.el),
      scales: { x: { time: false }, y: { range: (_u, _min, max) => [0, Math.max(rule * 1.5, max)] }, load: { range: (_u, _min, max) => [0, Math.max(1.6, max * 1.1)] } },
      legend: { live: true },
      axes: [
        { ...axis('time (s)') },
        { ...axis('attempts at the server'), size: 60 },
        { ...axis('demand (×)'), scale: 'load', side: 1, size: 50, grid: { show: false }, values: (_u, splits) => splits.map((v) => `${fmtNum(v, 1)}×`) },
      ],
      series: [
        { label: 'time', value: (_u, v) => (v === null ? '–' : `${fmtNum(v, 0)} s`) },
        { label: 'Demand', scale: 'load', stroke: css('--c-first'), width: 2, paths: uPlot.paths.stepped!({ align: 1 }), value: (_u, v) => (v === null ? '–' : `${fmtNum(v, 2)}×`) },
        { label: 'Backlog (run 1)', stroke: css('--c-backlog'), fill: css('--c-backlog-fill'), width: 1, value: (_u, v) => (v === null ? '–' : fmtNum(v, 0)) },
      ],
      hooks: {
        draw: [(u: uPlot) => {
          // The stuck rule's backlog: a dashed line across.
          const y = u.valToPos(rule, 'y', true);
          const { left, width } = u.bbox;
          const ctx = u.ctx;
          ctx.save();
          ctx.strokeStyle = css('--c-peak');
          ctx.setLineDash([6, 4]);
          ctx.beginPath();
          ctx.moveTo(left, y);
          ctx.lineTo(left + width, y);
          ctx.stroke();
          ctx.restore();
          this.el.dataset.points = String(this.d?.series.t_s.length ?? 0);
        }],
      },
    };
  }

  render(d: StepDownResult) {
    this.d = d;
    this.u?.destroy();
    this.u = new uPlot(this.opts(), stepDownColumns(d) as uPlot.AlignedData, this.el);
  }
}
