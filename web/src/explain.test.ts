// Issue 17: the page's own checks and words (validation, moments, trace units,
// phase-map ranges, plurals, clock times, descriptions).
import { describe, expect, it } from 'vitest';
import { stepValue } from './controls';
import { moments, nextMoment, placeLabel, overlaps, type Box } from './events';
import { clockOfDay, describeText, peakNote, plural, recoverySentence } from './format';
import { axisFromRange, defaultAxis } from './phaseaxes';
import { perSecondText } from './trace';
import type { Metrics, RunResult, Scenario, SchemaKey } from './types';
import { checkScenario, checkValue, errorPath, filterSet } from './validate';

const timeout: SchemaKey = { path: 'client.timeout_s', type: 'number', min: 0, min_exclusive: true, max: 3600, step: 0, multiple_of: 'step_s', unit: 's' };
const retries: SchemaKey = { path: 'client.retries', type: 'integer', min: 0, max: 100, step: 1 };
const demand: SchemaKey = { path: 'demand.rate_per_s', type: 'number', min: 0, max: 1e9, step: 0 };
const start: SchemaKey = { path: 'incident.start_s', type: 'number', min: 0, max: 1e7, step: 0 };
const queue: SchemaKey = { path: 'server.queue_limit', type: 'number', min: 0, max: 1e9, step: 0 };
const duration: SchemaKey = { path: 'incident.duration_s', type: 'number', min: 0, max: 1e7, step: 0 };

const sc = (over: Partial<Record<string, unknown>> = {}) => ({
  horizon_s: 300, step_s: 1, engine: 'fluid',
  demand: { rate_per_s: 80 }, server: { capacity_per_s: 100, queue_limit: 0, shed_abandoned: false },
  incident: { start_s: 60, duration_s: 20, capacity_factor: 0.4, demand_factor: 1 },
  client: { timeout_s: 5, layers: 1, retries: 3, backoff: { base_s: 0, multiplier: 2, cap_s: 0, jitter: 'none' }, budget: { kind: 'none', ratio: 0, window_s: 10 } },
  ...over,
}) as unknown as Scenario;

describe('inputs checked before sending (items 1-3, 5)', () => {
  it('steps keys counted in steps by step_s, onto the grid', () => {
    expect(stepValue(timeout, 5, 1, false, sc())).toBe(6);
    expect(stepValue(timeout, 5, -1, false, sc())).toBe(4);
    expect(stepValue(timeout, 0.5, 1, false, sc({ step_s: 0.25 }))).toBe(0.75);
    expect(stepValue(timeout, 5.1, 1, false, sc())).toBe(6); // off the grid: onto it
    expect(stepValue(timeout, 1, -1, false, sc())).toBe(1); // 0 is not allowed (min exclusive)
  });
  it('refuses values the server would refuse or round, with the limit in words', () => {
    expect(checkValue(retries, '101', null)).toEqual({ ok: false, error: '101 is too large: must be at most 100' });
    expect(checkValue(retries, '2.5', null)).toMatchObject({ ok: false, error: expect.stringMatching(/whole number/) });
    expect(checkValue(demand, '1e12', null)).toMatchObject({ ok: false, error: expect.stringMatching(/too large/) });
    expect(checkValue(timeout, '0', sc())).toMatchObject({ ok: false, error: expect.stringMatching(/above 0/) });
    expect(checkValue(timeout, '5.1', sc())).toMatchObject({ ok: false, error: expect.stringMatching(/whole number of steps/) });
    expect(checkValue(timeout, 'abc', sc())).toMatchObject({ ok: false });
    expect(checkValue(retries, '3', null)).toEqual({ ok: true, value: 3 });
  });
  it('refuses an incident that starts after the run', () => {
    const s = sc({ incident: { start_s: 400, duration_s: 20, capacity_factor: 0.4, demand_factor: 1 } });
    expect(checkScenario(s, [timeout, start]).get('incident.start_s')).toMatch(/after the run ends \(300 s\)/);
    expect(checkScenario(sc(), [timeout, start]).size).toBe(0);
  });
  it('sends no run for incidents at random: the risk panel reads them', () => {
    const s = sc({ incident: { start_s: 60, duration_s: 20, capacity_factor: 0.4, demand_factor: 1, random_per_h: 0.5 } });
    expect(checkScenario(s, [timeout, start]).get('incident.random_per_h')).toMatch(/Assess risk/);
    expect(checkScenario({ ...s, engine: 'sessions' } as never, [timeout, start]).has('incident.random_per_h')).toBe(false);
  });
  it('keeps the link entries it can apply and says why it drops the others', () => {
    const { kept, ignored } = filterSet([['client.retriez', 3], ['client.retries', 101], ['client.timeout_s', 0.5]], [retries, timeout], sc({ step_s: 0.5 }));
    expect(kept).toEqual([['client.timeout_s', 0.5]]);
    expect(ignored.map((i) => i.path)).toEqual(['client.retriez', 'client.retries']);
    expect(ignored[0].why).toBe('not a scenario key');
  });
  it('checks a link value counted in steps against the step the link sets', () => {
    const step: SchemaKey = { path: 'step_s', type: 'number', min: 0, min_exclusive: true, max: 60, step: 0 };
    const link: [string, number][] = [['step_s', 0.5], ['client.timeout_s', 5.5]];
    expect(filterSet(link, [step, timeout], sc()).kept).toEqual(link);
    // A step the page refuses is not the one the others are checked against.
    const bad = filterSet([['step_s', -1], ['client.timeout_s', 5.5]], [step, timeout], sc());
    expect(bad.ignored.map((i) => i.path)).toEqual(['step_s', 'client.timeout_s']);
  });
  it('finds the field a server error names', () => {
    expect(errorPath('client.retries: 101 is above 100', [retries])).toBe('client.retries');
    expect(errorPath('body: must be a JSON object', [retries])).toBeNull();
  });
});

describe('phase-map ranges (item 4)', () => {
  it('puts keys counted in steps on the step grid', () => {
    const a = defaultAxis(timeout, sc({ step_s: 0.5 }));
    expect(a.from % 0.5).toBe(0);
    expect(a.step % 0.5).toBe(0);
    expect(a.from).toBeGreaterThan(0);
  });
  it('gives the queue limit a range around one timeout of work, not 25 M to 1 G', () => {
    const a = defaultAxis(queue, sc());
    expect(a.to).toBeLessThanOrEqual(2000);
  });
  it('swaps a reversed range', () => {
    const a = axisFromRange(duration, 60, 5);
    expect(a.from).toBe(5);
    expect(a.step).toBeGreaterThan(0);
  });
});

const run = (metrics: Partial<Metrics>, series: Partial<RunResult['series']>, s = sc()): RunResult => ({
  scenario: s,
  metrics: { peak_amplification: 4, bound: { max_amplification: 4, safe_load_below: 0.25 }, goodput_recovery_s: null, failure_recovery_s: null, ...metrics } as Metrics,
  series: { t_s: [0, 60, 70, 80, 90, 299], ...series } as RunResult['series'],
});

describe('the moments of the story (items 8, 10)', () => {
  it('lists trigger, overload, first give-up, end and "never" in time order', () => {
    const r = run({}, { backlog: [0, 0, 600, 900, 900, 900], gave_up: [0, 0, 0, 0, 5, 5] });
    expect(moments(r).map((m) => m.kind)).toEqual(['incident', 'overload', 'incident-end', 'give-up', 'never']);
    expect(moments(r)[1].t).toBe(70); // 600 >= 100/s × 5 s
  });
  it('tells an attempt timing out (retried) from a request failing (out of attempts)', () => {
    const r = run({}, { gave_up: [0, 0, 3, 3, 3, 3], failed: [0, 0, 0, 0, 2, 2] });
    const list = moments(r);
    const timeout = list.find((m) => m.kind === 'give-up')!;
    const failure = list.find((m) => m.kind === 'failed')!;
    expect(timeout).toMatchObject({ t: 70, label: 'first timeouts' });
    expect(timeout.text).not.toMatch(/last retry/);
    expect(failure).toMatchObject({ t: 90, label: 'first failures' });
  });
  it('marks recovery after the end, and walks to the next moment', () => {
    const r = run({ failure_recovery_s: 19 }, {});
    const list = moments(r);
    expect(list.at(-1)).toMatchObject({ kind: 'recovery', t: 99 });
    expect(nextMoment(list, 60)?.kind).toBe('incident-end');
    expect(nextMoment(list, 99)).toBeNull();
  });
  it('places labels without overlap inside the plot', () => {
    const area: Box = { x: 0, y: 0, w: 300, h: 200 };
    const taken: Box[] = [{ x: 0, y: 8, w: 300, h: 6 }]; // the bound line
    const a = placeLabel(80, 15, 10, 2, area, taken); taken.push(a);
    const b = placeLabel(80, 15, 20, 2, area, taken);
    expect(overlaps(a, b)).toBe(false);
    expect(overlaps(a, taken[0])).toBe(false);
  });
});

describe('words (items 3, 10, 11, 13)', () => {
  it('writes trace amounts per second when the model steps in fractions', () => {
    expect(perSecondText('capacity 50; sent 30 new + 12 retries; served 25 on time, 5 late; backlog 1,200 (~12 s of work)', 0.5))
      .toBe('capacity 100/s; sent 60/s new + 24/s retries; served 50/s on time, 10/s late; backlog 1,200 (~12 s of work)');
    expect(perSecondText('capacity 100; sent 80 new', 1)).toBe('capacity 100; sent 80 new');
    // The server's other word orders (analysis/summary.cpp, decision_trace); a comma is no number.
    expect(perSecondText('capacity 5; sent 3 new; queue full, rejected 10; served 5 on time', 0.05))
      .toBe('capacity 100/s; sent 60/s new; queue full, rejected 200/s; served 100/s on time');
    expect(perSecondText('served 5 on time; 20 reached the 2 s timeout and gave up, shed 30 from the queue; backlog 400', 0.05))
      .toBe('served 100/s on time; 400/s reached the 2 s timeout and gave up, shed 600/s from the queue; backlog 400');
  });
  it('agrees nouns with numbers', () => {
    expect(plural(1, 'attempt')).toBe('1 attempt');
    expect(plural(4, 'attempt')).toBe('4 attempts');
    expect(plural(1, 'retry', undefined, 'retries')).toBe('1 retry');
  });
  it('shows seconds after midnight as a clock time', () => {
    expect(clockOfDay(23400)).toBe('06:30');
    expect(clockOfDay(80100)).toBe('22:15');
  });
  it('replaces key paths in descriptions by their labels', () => {
    expect(describeText('turn sessions.anchor_first on to compare', [{ path: 'sessions.anchor_first', label: 'Anchor first' }])).toBe('turn anchor first on to compare');
  });
  it('explains a peak above the bound, and says nothing under it', () => {
    const m = { peak_amplification: 4.5, bound: { max_amplification: 4, safe_load_below: 0.25 } } as Metrics;
    expect(peakNote(m, sc({ server: { capacity_per_s: 100, queue_limit: 200, shed_abandoned: false } }))).toMatch(/queue limit/);
    expect(peakNote({ ...m, peak_amplification: 3.9 }, sc())).toBe('');
  });
  it('says recovery cannot be measured when the incident outlasts the run', () => {
    const s = sc({ incident: { start_s: 200, duration_s: 220, capacity_factor: 0.4, demand_factor: 1 } });
    expect(recoverySentence({ failure_recovery_s: null } as Metrics, s)).toMatch(/past the end of the run/);
  });
});
