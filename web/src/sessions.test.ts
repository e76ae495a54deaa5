import { describe, expect, it } from 'vitest';
import {
  ciText, claimShareText, fmtClock, fmtDur, isWholeRun, ladderLine, occupancyScale, occupancyShares, outcomesText, pickWindow, spreadText,
  stackOccupancy, windowHours,
} from './sessions';
import { ciLine, sessionCards, spreadLine } from './sessionview';
import type { SessionHour, SessionResult } from './types';

const hour = (t_s: number, working = 0, blocked = 0, asleep = 0): SessionHour => ({
  t_s, launches: 0, completions: 0, failures: 0, working, blocked, asleep, peak_in_flight: 0,
  errors_429: 0, errors_401: 0, items_done: 0, arrivals: 0, queue_unread: 0,
});

function result(over: { window?: { from_s: number; to_s: number }; focus?: [number, number]; t?: number[] } = {}) {
  return {
    metrics: { window: over.window } as SessionResult['metrics'],
    scenario: { horizon_s: 259200, step_s: 60, sessions: { focus_from_s: over.focus?.[0] ?? 0, focus_to_s: over.focus?.[1] ?? 0 } },
    series: { t_s: over.t ?? [0, 60, 120] },
  } as unknown as SessionResult;
}

describe('fmtClock', () => {
  it('writes day and hour:minute from day 0 00:00', () => {
    expect(fmtClock(0)).toBe('0d00:00');
    expect(fmtClock(86400 + 13 * 3600 + 5 * 60)).toBe('1d13:05');
    expect(fmtClock(86400 + 13 * 3600 + 5 * 60 + 59.9)).toBe('1d13:05');
    expect(fmtClock(3 * 86400 - 60)).toBe('2d23:59');
    expect(fmtClock(259200)).toBe('3d00:00');
  });
  it('survives missing values', () => {
    expect(fmtClock(null)).toBe('–');
    expect(fmtClock(Number.NaN)).toBe('–');
  });
});

describe('fmtDur', () => {
  it('writes minutes and seconds like the server', () => {
    expect(fmtDur(30)).toBe('0m30s');
    expect(fmtDur(29.38)).toBe('0m29s');
    expect(fmtDur(1890)).toBe('31m30s');
    expect(fmtDur(1800)).toBe('30m00s');
    expect(fmtDur(7500)).toBe('2h05m00s');
    expect(fmtDur(null)).toBe('–');
  });
});

describe('pickWindow', () => {
  it('uses metrics.window first', () => {
    expect(pickWindow(result({ window: { from_s: 86400, to_s: 172800 }, focus: [1, 2] }))).toEqual({ from: 86400, to: 172800 });
  });
  it('falls back to the scenario focus, then to the whole run', () => {
    expect(pickWindow(result({ focus: [3600, 7200] }))).toEqual({ from: 3600, to: 7200 });
    expect(pickWindow(result({ window: { from_s: 0, to_s: 0 } }))).toEqual({ from: 0, to: 180 });
  });
  it('knows when the window is the whole run', () => {
    expect(isWholeRun({ from: 0, to: 180 }, [0, 60, 120], 60)).toBe(true);
    expect(isWholeRun({ from: 60, to: 180 }, [0, 60, 120], 60)).toBe(false);
  });
});

describe('windowHours', () => {
  it('keeps the hours that overlap the window', () => {
    const hs = [0, 3600, 7200, 10800].map((t) => hour(t));
    expect(windowHours(hs, { from: 3600, to: 10800 }).map((h) => h.t_s)).toEqual([3600, 7200]);
    // a window that starts mid-hour keeps that hour
    expect(windowHours(hs, { from: 4000, to: 7300 }).map((h) => h.t_s)).toEqual([3600, 7200]);
    expect(windowHours(undefined, { from: 0, to: 1 })).toEqual([]);
  });
});

describe('stackOccupancy', () => {
  it('stacks working, blocked and asleep bottom to top', () => {
    const s = stackOccupancy({ t_s: [0, 60, 120], working: [1, 0, 0.5], blocked: [0, 1, 0.25], asleep: [2, 3, 0] });
    expect(s.working).toEqual([1, 0, 0.5]);
    expect(s.blocked).toEqual([1, 1, 0.75]);
    expect(s.total).toEqual([3, 4, 0.75]);
  });
  it('treats a missing series as zero', () => {
    expect(stackOccupancy({ t_s: [0, 60], asleep: [1, 2] }).total).toEqual([1, 2]);
  });
});

describe('intervals and outcomes', () => {
  it('writes mean [low, high]', () => {
    expect(ciText({ mean: 2.6269, low: 2.5073, high: 2.7466, n: 8 })).toBe('2.63 [2.51, 2.75]');
    expect(ciText({ mean: null, low: null, high: null, n: 0 })).toBe('–');
    expect(ciText(undefined)).toBe('–');
  });
  it('lists the failed outcomes, largest first', () => {
    expect(outcomesText({ completed: 5, crashed: 10, failed_fast: 0, in_flight: 1, killed_asleep: 118, killed_working: 4 }))
      .toBe('118 killed asleep, 10 crashed, 4 killed working');
    expect(outcomesText({ completed: 3 })).toBe('');
  });
});

describe('ladderLine', () => {
  const ladder = { ladder_s: [30, 60, 120, 240, 480, 960], total_s: 1890, deadline_s: 1800, exceeds_deadline: true };
  it('sums the ladder against the deadline', () => {
    const l = ladderLine(ladder);
    expect(l.verdict).toBe('longer');
    expect(l.text).toMatch(/^Backoff ladder 0m30s \+ 1m00s \+ 2m00s \+ 4m00s \+ 8m00s \+ 16m00s = 31m30s against a 30m00s deadline: longer/);
  });
  it('says shorter, and handles no ladder', () => {
    expect(ladderLine({ ...ladder, deadline_s: 3600, exceeds_deadline: false }).verdict).toBe('shorter');
    expect(ladderLine({ ladder_s: [], total_s: 0, deadline_s: 1800, exceeds_deadline: false }).verdict).toBe('none');
    expect(ladderLine(undefined).verdict).toBe('none');
  });
  it('does not say sessions sleep into their deadline when deadline-aware backoff cuts the ladder', () => {
    const l = ladderLine({ ...ladder, exceeds_deadline: false, longer_than_deadline: true, deadline_aware: true });
    expect(l.verdict).toBe('longer');
    expect(l.text).toMatch(/cut by the deadline-aware rule: a session fails fast/);
    expect(l.text).not.toMatch(/a session that meets errors at once sleeps into its deadline/);
  });
});

describe('occupancy mini-bars', () => {
  it('scales each hour to the busiest one', () => {
    const hs = [hour(0, 1, 0, 3), hour(3600, 0.5, 0.5, 1)];
    const scale = occupancyScale(hs);
    expect(scale).toBe(4);
    expect(occupancyShares(hs[0], scale)).toEqual([25, 0, 75]);
    expect(occupancyShares(hs[1], scale)).toEqual([12.5, 12.5, 25]);
    expect(occupancyShares(hs[1], 0)).toEqual([0, 0, 0]);
  });
});

describe('session cards', () => {
  const r = {
    engine: 'sessions',
    scenario: { horizon_s: 259200, step_s: 60 },
    series: { t_s: [] },
    metrics: {
      launched: 137, completed: 5, failed: 132, in_flight: 0, median_success_s: 608.3, mean_failed_s: 1722.9, pinned_share: 0.924,
      errors_429: 858, errors_401: 0, lines_429_per_session: 7.1387, mean_in_flight: 2.658, mean_working: 0.202, mean_blocked: 0.009,
      mean_asleep: 2.447, asleep_share: 0.9206, peak_in_flight: 7, launches_429_correlation: 0.97, items_arrived: 139, items_done: 58,
      little_l: 2.658, little_lambda_w: 2.676, outcomes: { completed: 5, killed_asleep: 118, crashed: 10, killed_working: 4 },
      window: { from_s: 86400, to_s: 172800 },
    },
  } as unknown as SessionResult;
  it('fills the cards from the metrics', () => {
    const byId = Object.fromEntries(sessionCards(r).map((c) => [c.id, c]));
    expect(byId['in-flight'].v).toBe('2.66');
    expect(byId['in-flight'].s).toMatch(/^92\.1% asleep/);
    expect(byId.failed.s).toBe('118 killed asleep, 10 crashed, 4 killed working');
    expect(byId['median-success'].v).toBe('10m08s');
    expect(byId.little.v).toBe('2.66 vs 2.68');
  });
  it('writes the interval line of a card', () => {
    const m = { little_l: { mean: 2.63, low: 2.51, high: 2.75, n: 8 }, little_lambda_w: { mean: 2.62, low: 2.5, high: 2.74, n: 8 } };
    const f = (v: number) => v.toFixed(2);
    expect(ciLine(8, m, [['little_l', f, 'L'], ['little_lambda_w', f, 'λW']])).toBe('8 runs: L 2.63 [2.51, 2.75]; λW 2.62 [2.50, 2.74]');
    expect(ciLine(8, {}, [['launched', f]])).toBe('');
  });
});

// Issue 16: the interval of the mean hides the spread; the page shows each
// figure's min / median / max per seed and the share of seeds the headline's
// claim holds in.
describe('Monte Carlo spread and claim share', () => {
  const f = (v: number) => v.toFixed(0);
  it('writes min / median / max per seed', () => {
    expect(spreadText({ mean: 1.2, low: 0, high: 2.9, n: 40, min: 0, median: 1, max: 5 }, f)).toBe('0 / 1 / 5 per seed (min / median / max)');
    expect(spreadText({ mean: 1.2, low: 0, high: 2.9, n: 40 }, f)).toBe('');
    expect(spreadText({ mean: null, low: null, high: null, n: 0, min: null, median: null, max: null }, f)).toBe('');
    expect(spreadText(undefined)).toBe('');
  });
  it('takes the spread of the card\'s first figure', () => {
    const m = { launched: { mean: 221, low: 218, high: 224, n: 40, min: 205, median: 221, max: 236 } };
    expect(spreadLine(m, [['launched', f], ['completed', f]])).toBe('205 / 221 / 236 per seed (min / median / max)');
    expect(spreadLine(m, [['completed', f]])).toBe('');
  });
  it('says in how many seeds the headline\'s claim holds', () => {
    expect(claimShareText({ claim: 'a session launched in the 2d22:00 hour is killed working', seeds: 40, runs: 40 }))
      .toBe('The headline\'s claim "a session launched in the 2d22:00 hour is killed working" holds in 40/40 seeds.');
    expect(claimShareText({ claim: '', seeds: 0, runs: 40 })).toBe('');
    expect(claimShareText(undefined)).toBe('');
  });
  it('never shows an interval below zero for a count the server clamped', () => {
    expect(ciText({ mean: 0.125, low: 0, high: 0.44, n: 8 }, (v) => v.toFixed(2))).toBe('0.13 [0.00, 0.44]');
  });
});
