// DOM views of a session-model run (engine: sessions): verdict, cards with
// Monte Carlo intervals, the ladder against the deadline, the per-hour table.

import { fmtNum, fmtPct } from './format';
import {
  ciText, claimShareText, fmtClock, fmtDur, ladderLine, occupancyScale, occupancyShares, outcomesText, pickWindow, spreadText,
  windowHours,
} from './sessions';
import type { HeadlineClaim, MetricSpread } from './sessions';
import type { MetricInterval, SessionResult } from './types';
import { $ } from './views';

function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, ...kids: (Node | string)[]) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  e.append(...kids);
  return e;
}

type Fmt = (v: number) => string;
/** A card; `mc` names the Monte Carlo figures its interval line shows. */
interface CardSpec { id: string; k: string; v: string; s: string; mc?: [string, Fmt, string?][] }

const num2 = (v: number) => fmtNum(v, 2);
const num0 = (v: number) => fmtNum(v, 0);
const num1 = (v: number) => fmtNum(v, 1);
const pct = (v: number) => fmtPct(v);

export function sessionCards(r: SessionResult): CardSpec[] {
  const m = r.metrics;
  const share = (a: number, b: number) => (b > 0 ? fmtPct(a / b) : '–');
  const failedBy = outcomesText(m.outcomes);
  return [
    { id: 'launched', k: 'Sessions launched', v: num0(m.launched), s: m.in_flight ? `${num0(m.in_flight)} still in flight at the end` : 'started in the window', mc: [['launched', num1]] },
    { id: 'completed', k: 'Completed', v: num0(m.completed), s: `${share(m.completed, m.launched)} of launched`, mc: [['completed', num1]] },
    { id: 'failed', k: 'Failed', v: num0(m.failed), s: failedBy || 'none', mc: [['failed', num1]] },
    { id: 'median-success', k: 'Median success', v: fmtDur(m.median_success_s), s: 'duration of a completed session', mc: [['median_success_s', fmtDur]] },
    { id: 'mean-failure', k: 'Mean failure', v: fmtDur(m.mean_failed_s), s: 'duration of a failed session', mc: [['mean_failed_s', fmtDur]] },
    { id: 'pinned', k: 'Pinned to the deadline', v: fmtPct(m.pinned_share), s: 'of failures end at the deadline', mc: [['pinned_share', pct]] },
    { id: 'lines-429', k: '429 lines per session', v: fmtNum(m.lines_429_per_session, 2), s: `${num0(m.errors_429)} answers 429, ${num0(m.errors_401)} answers 401`, mc: [['lines_429_per_session', num2]] },
    {
      id: 'in-flight', k: 'Mean in flight', v: fmtNum(m.mean_in_flight, 2),
      s: `${fmtPct(m.asleep_share)} asleep · ${fmtNum(m.mean_working, 2)} working · ${fmtNum(m.mean_blocked, 2)} blocked`,
      mc: [['mean_in_flight', num2], ['asleep_share', pct, 'asleep']],
    },
    { id: 'peak', k: 'Peak in flight', v: num0(m.peak_in_flight), s: 'sessions at once', mc: [['peak_in_flight', num1]] },
    {
      id: 'little', k: "Little's law", v: `${fmtNum(m.little_l, 2)} vs ${fmtNum(m.little_lambda_w, 2)}`,
      s: 'L (time-average in flight) vs λW (launches × mean duration)', mc: [['little_l', num2, 'L'], ['little_lambda_w', num2, 'λW']],
    },
  ];
}

/** The per-seed spread of a card's first Monte Carlo figure: "1 / 2 / 5 per seed (min / median / max)". */
export function spreadLine(metrics: Record<string, MetricSpread>, want: [string, Fmt, string?][]): string {
  const first = want.find(([name]) => metrics[name]);
  return first ? spreadText(metrics[first[0]], first[1]) : '';
}

/** The Monte Carlo line of a card: "8 runs: 2.63 [2.51, 2.75]", several figures joined by "; ". */
export function ciLine(runs: number, metrics: Record<string, MetricInterval>, want: [string, Fmt, string?][]): string {
  const parts = want.filter(([name]) => metrics[name]).map(([name, fmt, label]) => `${label ? `${label} ` : ''}${ciText(metrics[name], fmt)}`);
  return parts.length ? `${runs} runs: ${parts.join('; ')}` : '';
}

export function renderSessionVerdict(r: SessionResult) {
  const m = r.metrics;
  const win = pickWindow(r);
  const v = $('verdict');
  v.dataset.recovered = String(m.launched > 0 && m.completed / m.launched >= 0.8);
  $('verdict-headline').textContent = r.verdict?.headline ?? `${fmtNum(m.completed, 0)} of ${fmtNum(m.launched, 0)} sessions completed`;
  $('verdict-recovery').textContent = '';
  const mc = r.montecarlo;
  // The share of seeds the headline's claim holds in: one seed's story is not the model's.
  const claim = claimShareText((mc as { headline_claim?: HeadlineClaim } | undefined)?.headline_claim);
  $('verdict-detail').textContent = `Figures cover sessions started ${fmtClock(win.from)} to ${fmtClock(win.to)}` +
    (mc ? `; intervals: mean and 95% interval over ${mc.runs} runs from seed ${fmtNum(mc.seed, 0)}, and the spread per seed.` : '.') +
    (claim ? ` ${claim}` : '');
  const l = ladderLine(r.ladder);
  const el = $('s-ladder');
  el.textContent = l.text;
  el.dataset.verdict = l.verdict;

  const mcs = mc?.metrics ?? {};
  const cards = sessionCards(r).map((c) => {
    const ci = mc && c.mc ? ciLine(mc.runs, mcs, c.mc) : '';
    const spread = mc && c.mc ? spreadLine(mcs, c.mc) : '';
    return h('div', { class: 'card', id: `s-${c.id}`, 'data-testid': `s-${c.id}` },
      h('span', { class: 'k' }, c.k), h('span', { class: 'v' }, c.v), h('span', { class: 's' }, c.s),
      ...(ci ? [h('span', { class: 'ci', 'data-testid': `s-${c.id}-ci` }, ci)] : []),
      ...(spread ? [h('span', { class: 'ci', 'data-testid': `s-${c.id}-spread` }, spread)] : []));
  });
  $('s-cards').replaceChildren(...cards);
}

export function renderHours(r: SessionResult) {
  const hours = windowHours(r.hours, pickWindow(r));
  const scale = occupancyScale(hours);
  const rows = hours.map((x) => {
    const [w, b, a] = occupancyShares(x, scale);
    const total = (x.working || 0) + (x.blocked || 0) + (x.asleep || 0);
    const bar = h('div', {
      class: 'occ-bar', role: 'img',
      'aria-label': `${fmtNum(total, 2)} in flight: ${fmtNum(x.working, 2)} working, ${fmtNum(x.blocked, 2)} blocked, ${fmtNum(x.asleep, 2)} asleep`,
    },
    h('i', { class: 'w', style: `width:${w.toFixed(1)}%` }), h('i', { class: 'b', style: `width:${b.toFixed(1)}%` }), h('i', { class: 'a', style: `width:${a.toFixed(1)}%` }));
    return h('tr', {},
      h('th', { scope: 'row' }, fmtClock(x.t_s)),
      h('td', { class: 'occ' }, bar, h('span', {}, fmtNum(total, 2))),
      h('td', {}, num0(x.launches)), h('td', {}, num0(x.completions)), h('td', {}, num0(x.failures)),
      h('td', {}, num0(x.errors_429)), h('td', {}, num0(x.errors_401)), h('td', {}, num0(x.items_done)), h('td', {}, num0(x.queue_unread)),
      h('td', {}, num0(x.peak_in_flight)));
  });
  $('s-hours').querySelector('tbody')!.replaceChildren(...rows);
  $('s-hours-note').textContent = hours.length
    ? `${hours.length} hour${hours.length === 1 ? '' : 's'} of the focus window. Bar: time-average sessions working, blocked and asleep, full width = ${fmtNum(scale, 2)}.`
    : 'No hours in the focus window.';
}
