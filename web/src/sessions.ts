// Pure helpers for the session model's view (engine: sessions): clock times,
// durations, the focus window, stacked occupancy, intervals.

import { fmtNum } from './format';
import type { MetricInterval, SessionHour, SessionResult } from './types';

const DAY = 86400;

/** Seconds from day 0 00:00 as "1d13:05" (minutes floored). */
export function fmtClock(t: number | null | undefined): string {
  if (t === null || t === undefined || !Number.isFinite(t)) return '–';
  const neg = t < 0;
  const mins = Math.floor(Math.abs(t) / 60 + 1e-9);
  const d = Math.floor(mins / 1440);
  const hh = Math.floor((mins % 1440) / 60);
  const mm = mins % 60;
  return `${neg ? '-' : ''}${d}d${String(hh).padStart(2, '0')}:${String(mm).padStart(2, '0')}`;
}

/** A duration the way the server writes it: "0m29s", "31m30s", "2h05m00s". */
export function fmtDur(s: number | null | undefined): string {
  if (s === null || s === undefined || !Number.isFinite(s)) return '–';
  const total = Math.round(Math.abs(s));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const sec = total % 60;
  const ss = String(sec).padStart(2, '0');
  const sign = s < 0 ? '-' : '';
  return h > 0 ? `${sign}${h}h${String(m).padStart(2, '0')}m${ss}s` : `${sign}${m}m${ss}s`;
}

/** Axis steps (seconds) for a clock axis: minutes to days. */
export const CLOCK_INCRS = [60, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, DAY, 2 * DAY, 7 * DAY];

export interface Window { from: number; to: number }

/** The focus window the figures cover: metrics.window, else the scenario's focus, else the run. */
export function pickWindow(r: Pick<SessionResult, 'metrics' | 'scenario' | 'series'>): Window {
  const w = r.metrics?.window;
  if (w && Number.isFinite(w.from_s) && Number.isFinite(w.to_s) && w.to_s > w.from_s) return { from: w.from_s, to: w.to_s };
  const s = (r.scenario as { sessions?: { focus_from_s?: number; focus_to_s?: number } }).sessions;
  if (s && (s.focus_to_s ?? 0) > (s.focus_from_s ?? 0)) return { from: s.focus_from_s ?? 0, to: s.focus_to_s! };
  const t = r.series?.t_s ?? [];
  const step = r.scenario?.step_s || 60;
  if (!t.length) return { from: 0, to: r.scenario?.horizon_s ?? 0 };
  return { from: t[0], to: t[t.length - 1] + step };
}

/** Whether the window is the whole run (nothing to shade). */
export function isWholeRun(win: Window, t: number[], step: number): boolean {
  if (!t.length) return true;
  return win.from <= t[0] && win.to >= t[t.length - 1] + step;
}

/** Hours that overlap the window, in order. */
export function windowHours(hours: SessionHour[] | undefined, win: Window): SessionHour[] {
  return (hours ?? []).filter((h) => h.t_s + 3600 > win.from && h.t_s < win.to);
}

export interface Stacked {
  working: number[]; // top of the working layer (= working)
  blocked: number[]; // top of the blocked layer (working + blocked)
  total: number[]; // top of the asleep layer (working + blocked + asleep): sessions in flight
}

/** Cumulative tops of the three occupancy layers, bottom to top: working, blocked, asleep. */
export function stackOccupancy(s: { t_s: number[]; working?: number[]; blocked?: number[]; asleep?: number[] }): Stacked {
  const n = s.t_s.length;
  const w = new Array<number>(n);
  const b = new Array<number>(n);
  const a = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const wi = s.working?.[i] ?? 0;
    const bi = wi + (s.blocked?.[i] ?? 0);
    w[i] = wi;
    b[i] = bi;
    a[i] = bi + (s.asleep?.[i] ?? 0);
  }
  return { working: w, blocked: b, total: a };
}

/** "2.63 [2.51, 2.75]": mean and 95% interval. */
export function ciText(iv: MetricInterval | undefined, fmt: (v: number) => string = (v) => fmtNum(v, 2)): string {
  if (!iv || iv.mean === null || iv.mean === undefined || !Number.isFinite(iv.mean)) return '–';
  const f = (v: number | null) => (v === null || v === undefined || !Number.isFinite(v) ? '–' : fmt(v));
  return `${f(iv.mean)} [${f(iv.low)}, ${f(iv.high)}]`;
}

/** A Monte Carlo figure with its per-seed spread (the server's `min`, `median`, `max`). */
export type MetricSpread = MetricInterval & { min?: number | null; median?: number | null; max?: number | null };

/** "1 / 2 / 5 per seed (min / median / max)": the spread the interval of the mean hides; '' when absent. */
export function spreadText(iv: MetricSpread | undefined, fmt: (v: number) => string = (v) => fmtNum(v, 2)): string {
  if (!iv) return '';
  const vals = [iv.min, iv.median, iv.max];
  if (vals.some((v) => v === null || v === undefined || !Number.isFinite(v))) return '';
  return `${vals.map((v) => fmt(v as number)).join(' / ')} per seed (min / median / max)`;
}

/** The Monte Carlo's `headline_claim`: the reported run's claim and the seeds it holds in. */
export interface HeadlineClaim { claim: string; seeds: number; runs: number }

/** 'The headline's claim "…" holds in 40/40 seeds.'; '' when the run has none. */
export function claimShareText(c: HeadlineClaim | undefined | null): string {
  if (!c || !c.claim || !(c.runs > 0)) return '';
  return `The headline's claim "${c.claim}" holds in ${fmtNum(c.seeds, 0)}/${fmtNum(c.runs, 0)} seeds.`;
}

/** Failed outcomes with a count, largest first: "118 killed asleep, 10 crashed". */
export function outcomesText(outcomes: Record<string, number> | undefined): string {
  return Object.entries(outcomes ?? {})
    .filter(([k, v]) => k !== 'completed' && k !== 'in_flight' && v > 0)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([k, v]) => `${fmtNum(v, 0)} ${k.replace(/_/g, ' ')}`)
    .join(', ');
}

export interface LadderLine { text: string; verdict: 'longer' | 'shorter' | 'as long as' | 'none' }

/** The backoff ladder against the deadline: "0m30s + 1m00s + … = 31m30s against a 30m00s deadline: longer". */
export function ladderLine(l: SessionResult['ladder'] | undefined): LadderLine {
  if (!l || !l.ladder_s?.length) return { text: 'No backoff ladder: the first error ends the session.', verdict: 'none' };
  const sum = `${l.ladder_s.map(fmtDur).join(' + ')} = ${fmtDur(l.total_s)}`;
  if (!(l.deadline_s > 0)) return { text: `Backoff ladder ${sum}; no deadline.`, verdict: 'none' };
  const verdict = l.exceeds_deadline ?? l.total_s > l.deadline_s ? 'longer' : l.total_s === l.deadline_s ? 'as long as' : 'shorter';
  // With deadline-aware backoff the rule cuts the ladder: sessions fail fast, none sleeps into its deadline.
  const cut = l.deadline_aware === true && l.total_s > l.deadline_s;
  if (cut) {
    return {
      text: `Backoff ladder ${sum} against a ${fmtDur(l.deadline_s)} deadline: longer, cut by the deadline-aware rule: a session fails fast instead of sleeping into its deadline.`,
      verdict: 'longer',
    };
  }
  const tail = verdict === 'longer'
    ? 'longer: a session that meets errors at once sleeps into its deadline'
    : verdict === 'shorter' ? 'shorter: the ladder ends before the deadline' : 'as long as the deadline';
  return { text: `Backoff ladder ${sum} against a ${fmtDur(l.deadline_s)} deadline: ${tail}.`, verdict };
}

/** Widths (percent of `scale`) of the working, blocked and asleep parts of an hour's mini-bar. */
export function occupancyShares(h: Pick<SessionHour, 'working' | 'blocked' | 'asleep'>, scale: number): [number, number, number] {
  if (!(scale > 0)) return [0, 0, 0];
  const p = (v: number) => Math.max(0, Math.min(100, (100 * (v || 0)) / scale));
  return [p(h.working), p(h.blocked), p(h.asleep)];
}

/** The largest time-average occupancy of the hours (the mini-bars' full width). */
export function occupancyScale(hours: Pick<SessionHour, 'working' | 'blocked' | 'asleep'>[]): number {
  let m = 0;
  for (const h of hours) m = Math.max(m, (h.working || 0) + (h.blocked || 0) + (h.asleep || 0));
  return m;
}
