// Amplification against the failure rate (uPlot): one line per policy,
// attempts per request up, the share of attempts failing across.

import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { fmtNum } from './format';

const css = (name: string) => getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#888';
const COLOURS = ['--c-retry', '--c-good', '--c-first', '--c-bound'];

export class AmpChart {
  u: uPlot | null = null;
  private ro: ResizeObserver;

  constructor(private el: HTMLElement) {
    this.ro = new ResizeObserver(() => { if (this.u) this.u.setSize(this.size()); });
    this.ro.observe(el);
  }

  private size() {
    const w = Math.max(280, this.el.clientWidth || 600);
    return { width: w, height: w < 560 ? 220 : 260 };
  }

  render(names: string[], shares: number[], series: (number | null)[][]) {
    const axisColor = css('--fg-muted');
    const grid = css('--grid');
    const axis = (label: string): uPlot.Axis => ({ stroke: axisColor, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, label, labelSize: 18 });
    const opts: uPlot.Options = {
      ...this.size(),
      scales: { x: { time: false }, y: { range: (_u, _min, max) => [1, Math.max(2, max * 1.1)] } },
      legend: { live: true },
      axes: [
        { ...axis('attempts failing'), values: (_u, splits) => splits.map((v) => `${fmtNum(v * 100, 0)}%`) },
        { ...axis('attempts per request'), size: 50, values: (_u, splits) => splits.map((v) => `${fmtNum(v, 1)}×`) },
      ],
      series: [
        { label: 'failing', value: (_u, v) => (v === null ? '–' : `${fmtNum(v * 100, 0)}%`) },
        ...names.map((name, i) => ({ label: name, stroke: css(COLOURS[i % COLOURS.length]), width: 2, points: { show: true }, value: (_u: uPlot, v: number | null) => (v === null ? '–' : `${fmtNum(v, 2)}×`) })),
      ],
      hooks: { draw: [() => { this.el.dataset.lines = String(names.length); }] },
    };
    this.u?.destroy();
    this.u = new uPlot(opts, [shares, ...series] as uPlot.AlignedData, this.el);
  }
}
