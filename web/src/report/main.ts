// The charts of the `retrystorm analyze` HTML report, drawn with uPlot (the
// explorer's chart library) from the analysis embedded in the page.

import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { fmtNum } from '../format';
import { hourTick, occupancyStacks, readAnalysis, type Analysis } from './data';

const COLORS = { launches: '#4c78a8', done: '#54a24b', failed: '#e45756', errors: '#f58518', working: '#54a24b', blocked: '#f58518', asleep: '#9d755d', little: '#222', ceiling: '#b279a2' };

function width(el: HTMLElement): number {
  return Math.max(320, el.clientWidth || 900);
}

function heading(el: HTMLElement, text: string) {
  const h = document.createElement('h3');
  h.textContent = text;
  el.append(h);
}

const hourAxis = (): uPlot.Axis => ({ incrs: [1, 2, 3, 6, 12, 24, 48, 96, 168], values: (_u, ticks) => ticks.map((t) => hourTick(t)), space: 70 });
const val = (_u: uPlot, v: number | null) => (v === null || v === undefined ? '–' : fmtNum(v, 2));

function loadChart(el: HTMLElement, a: Analysis) {
  heading(el, `Launches, completions, failures and error lines per hour (${a.unit})`);
  const x = a.hours.map((h) => h.hour);
  new uPlot({
    width: width(el), height: 260, scales: { x: { time: false }, e: {} },
    axes: [hourAxis(), { label: `${a.unit} per hour`, size: 56 }, { scale: 'e', side: 1, label: 'error lines', grid: { show: false }, size: 56 }],
    series: [
      { label: 'hour', value: (_u, v) => (v === null ? '–' : hourTick(v)) },
      { label: 'launches (λ)', stroke: COLORS.launches, width: 2, value: val },
      { label: 'completed', stroke: COLORS.done, width: 2, value: val },
      { label: 'failed', stroke: COLORS.failed, width: 2, value: val },
      { label: 'error lines', stroke: COLORS.errors, width: 1.5, dash: [5, 3], scale: 'e', value: val },
    ],
  }, [x, a.hours.map((h) => h.launches), a.hours.map((h) => h.completions), a.hours.map((h) => h.failures), a.hours.map((h) => h.errors)], el);
}

function occupancyChart(el: HTMLElement, a: Analysis) {
  const x = a.hours.map((h) => h.hour);
  const stacks = occupancyStacks(a.hours);
  const ceiling = a.hours.map(() => a.ceiling);
  const little = a.hours.map((h) => h.little);
  heading(el, stacks ? `In flight (L) by state, λ·W and the ceiling (${a.occupancy.source})` : 'In flight (L), λ·W and the ceiling (split by state unknown)');
  const series: uPlot.Series[] = [{ label: 'hour', value: (_u, v) => (v === null ? '–' : hourTick(v)) }];
  const data: (number | null)[][] = [x];
  if (stacks) {
    series.push({ label: 'asleep', stroke: COLORS.asleep, fill: `${COLORS.asleep}aa`, value: val });
    series.push({ label: 'blocked', stroke: COLORS.blocked, fill: `${COLORS.blocked}aa`, value: val });
    series.push({ label: 'working', stroke: COLORS.working, fill: `${COLORS.working}aa`, value: val });
    data.push(stacks.asleep, stacks.blocked, stacks.working);
  } else {
    series.push({ label: 'L', stroke: COLORS.launches, fill: `${COLORS.launches}55`, value: val });
    data.push(a.hours.map((h) => h.in_flight));
  }
  series.push({ label: 'λ·W', stroke: COLORS.little, width: 1.5, dash: [4, 3], value: val });
  series.push({ label: 'ceiling', stroke: COLORS.ceiling, width: 1.5, dash: [2, 4], value: val });
  data.push(little, ceiling);
  new uPlot({ width: width(el), height: 240, scales: { x: { time: false } }, axes: [hourAxis(), { label: 'in flight', size: 56 }], series }, data as uPlot.AlignedData, el);
}

function durationChart(el: HTMLElement, a: Analysis) {
  const d = a.durations;
  heading(el, `Durations in whole minutes${d.deadline_s ? ` (deadline ${fmtNum(d.deadline_s / 60, 1)} min)` : ''}`);
  const x = d.minute_completed.map((_v, i) => i);
  const bars = uPlot.paths.bars!({ size: [0.8, 40] });
  new uPlot({
    width: width(el), height: 220, scales: { x: { time: false } },
    axes: [{ label: 'minutes' }, { label: a.unit, size: 56 }],
    series: [
      { label: 'minute' },
      { label: 'completed', stroke: COLORS.done, fill: `${COLORS.done}aa`, paths: bars, value: val },
      { label: 'failed', stroke: COLORS.failed, fill: `${COLORS.failed}aa`, paths: bars, value: val },
    ],
  }, [x, d.minute_completed, d.minute_failed], el);
}

function errorChart(el: HTMLElement, a: Analysis) {
  heading(el, 'Error lines against launches, one dot an hour');
  const hours = a.hours.filter((h) => h.launches > 0 || h.errors > 0).sort((p, q) => p.launches - q.launches);
  new uPlot({
    width: width(el), height: 220, scales: { x: { time: false } },
    axes: [{ label: 'launches in the hour' }, { label: 'error lines', size: 56 }],
    series: [{ label: 'launches' }, { label: 'error lines', stroke: COLORS.errors, width: 0, points: { show: true, size: 6, fill: COLORS.errors }, value: val }],
  }, [hours.map((h) => h.launches), hours.map((h) => h.errors)], el);
}

function main() {
  const a = readAnalysis(document);
  const charts: [string, (el: HTMLElement, a: Analysis) => void][] = [
    ['chart-load', loadChart], ['chart-occupancy', occupancyChart], ['chart-errors', errorChart], ['chart-durations', durationChart],
  ];
  for (const [id, draw] of charts) {
    const el = document.getElementById(id);
    if (el && a.hours.length) draw(el, a);
  }
  document.body.dataset.chartsDrawn = 'true';
}

main();
