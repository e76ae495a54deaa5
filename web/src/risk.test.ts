import { describe, expect, it } from 'vitest';
import { budgetValues, leaveTone, randomIncidents, riskBase, retryValues, RISK_KNOBS, riskCell, riskScenario, riskTable, riskVary, roughTime, stepDownColumns, stepDownSummary, timeoutValues } from './risk';
import type { RiskLevel, Scenario } from './types';

const share = (k: number, n: number, p: number) => ({ k, n, p, low: p / 2, high: Math.min(1, p * 2) });
const wait = (mean: number | null, low: number) => ({ events: mean ? 1 : 0, exposure_s: 100, mean_s: mean, low_s: low, high_s: mean ? mean * 2 : null, within_hour: share(0, 0, 0.1), within_day: share(0, 0, 0.75) });

describe('risk view', () => {
  it('writes waiting times to two digits in the largest unit above 2', () => {
    expect(roughTime(41.2)).toBe('41 s');
    expect(roughTime(4680)).toBe('78 min');
    expect(roughTime(28440)).toBe('7.9 h');
    expect(roughTime(3 * 86400)).toBe('3 days');
  });
  it('a cell says the day chance and the way back, or a lower bound', () => {
    const level: RiskLevel = { load: 1, demand_per_s: 9.5, tipped_within_horizon: share(3, 20, 0.15), time_to_tip: wait(600, 300), stuck_to_leave: share(20, 20, 1), left_within_horizon: share(0, 20, 0), time_to_leave: wait(null, 9000), leave: 'never' };
    const c = riskCell(level, true);
    expect(c.text).toBe('75% · > 2.5 h');
    expect(c.here).toBe(true);
    expect(c.title).toContain('3 of 20 runs tipped');
    expect(c.title).toContain('none came back within the run (> 2.5 h)');
    const calm = riskCell({ ...level, stuck_to_leave: share(0, 20, 0), leave: 'none' }, false);
    expect(calm.text).toBe('75% · –');
    expect(calm.title).toContain('Mean time back after being stuck: none stuck.');
  });
  it('timeouts are halves and doubles of the own, in whole steps', () => {
    expect(timeoutValues(3, 1)).toEqual([1, 2, 3, 6, 12]);
    expect(timeoutValues(0.5, 0.05)).toEqual([0.15, 0.25, 0.5, 1, 2]);
  });
  it('budget ratios include the own', () => {
    expect(budgetValues(0.1)).toEqual([0.05, 0.1, 0.2, 0.5, 1]);
    expect(budgetValues(0.3)).toEqual([0.05, 0.1, 0.2, 0.3, 0.5, 1]);
  });
  it('offers the budget ratio only with a budget, and says the knob in --vary', () => {
    const sc = { step_s: 1, client: { retries: 2, timeout_s: 3, budget: { kind: 'none', ratio: 0.1 } } } as unknown as Scenario;
    expect(RISK_KNOBS.filter((k) => k.applies(sc)).map((k) => k.path)).toEqual(['client.retries', 'client.timeout_s']);
    const budgeted = { ...sc, client: { retries: 2, timeout_s: 3, budget: { kind: 'token', ratio: 0.1 } } } as unknown as Scenario;
    expect(RISK_KNOBS.filter((k) => k.applies(budgeted)).length).toBe(3);
    expect(riskVary(RISK_KNOBS[1], sc)).toBe('client.timeout_s=1,2,3,6,12');
  });
  it('the time back shades from a minute to a day; a bound of an hour or more is the darkest', () => {
    const level = (k: number, mean: number | null, low: number): RiskLevel => ({ load: 1, demand_per_s: 1, tipped_within_horizon: share(0, 20, 0), time_to_tip: wait(null, 100), stuck_to_leave: share(k, 20, k / 20), left_within_horizon: share(0, 20, 0), time_to_leave: wait(mean, low), leave: k === 0 ? 'none' : mean === null ? 'never' : 'measured' });
    expect(leaveTone(level(0, null, 0))).toBe(0);
    expect(leaveTone(level(5, 60, 30))).toBe(0);
    expect(leaveTone(level(5, 86400, 30))).toBe(1);
    expect(leaveTone(level(5, 3600, 30))).toBeCloseTo(Math.log10(60) / Math.log10(1440));
    expect(leaveTone(level(5, null, 4000))).toBe(1);
    const m = { knob: 'client.timeout_s', operating_value: 3, rows: [{ value: 3, levels: [level(5, 86400, 30)] }] };
    const t = riskTable(m, 'leave');
    expect(t.head[0]).toBe('Timeout (s) ↓ · load →');
    expect(t.rows[0].cells[0].tone).toBe(1);
    expect(riskTable(m, 'tip').rows[0].cells[0].tone).toBe(0.75);
  });
  it('rows of retries include the scenario own value', () => {
    expect(retryValues(3)).toEqual([0, 1, 2, 3, 4]);
    expect(retryValues(7)).toEqual([0, 1, 2, 3, 4, 7]);
  });
  it('fixed arrivals are made Poisson, random ones kept', () => {
    const sc = { engine: 'fluid', demand: { process: 'deterministic' }, server: { service: 'deterministic' } } as unknown as Scenario;
    const r = riskScenario(sc);
    expect((r.scenario as unknown as { engine: string }).engine).toBe('agent');
    expect((r.scenario as unknown as { demand: { process: string } }).demand.process).toBe('poisson');
    expect(r.note).not.toBe('');
    const random = { engine: 'agent', demand: { process: 'deterministic' }, server: { service: 'exponential' } } as unknown as Scenario;
    expect(riskScenario(random).note).toBe('');
  });
});

const stairs = (tip: number | null, back: number | null, stuckAtTop = true) => ({
  loads: [0.5, 1, 1.5, 1, 0.5], hold_s: 2, horizon_s: 10, engine: 'agent',
  stuck_rule: { backlog_above: 30, goodput_below: 0.9, window_s: 3, text: '' },
  tipping_load: tip, recovery_load: back,
  runs: [{ seed: 1, tipped_s: tip ? 3 : null, tipped_load: tip, stuck_at_top: stuckAtTop, recovered_s: back ? 9 : null, recovered_load: back },
         { seed: 2, tipped_s: null, tipped_load: null, stuck_at_top: false, recovered_s: null, recovered_load: null }],
  series: { t_s: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], backlog: [0, 0, 5, 40, 60, 70, 50, 40, 20, 0] },
});

describe('step-down view', () => {
  it('says where it tips and where it comes back, from the run itself', () => {
    expect(stepDownSummary(stairs(1, 0.5))).toBe('It tips at 1× going up and comes back only at 0.5× coming down (the medians of 2 runs): between the two, it stays as it was.');
    expect(stepDownSummary(stairs(1, null))).toBe('It tips at 1× going up and does not come back, even at 0.5× (the medians of 2 runs).');
    expect(stepDownSummary(stairs(null, null))).toBe('It never became stuck, even at 1.5×: the load alone does not tip it here.');
    expect(stepDownSummary(stairs(1.5, 1.5))).toContain('no loop at these steps');
    expect(stepDownSummary(stairs(1, null, false))).toContain('healthy again before the top');
  });
  it('draws the demand step by step beside the backlog', () => {
    const [t, load, backlog] = stepDownColumns(stairs(1, 0.5));
    expect(t.length).toBe(10);
    expect(load).toEqual([0.5, 0.5, 1, 1, 1.5, 1.5, 1, 1, 0.5, 0.5]);
    expect(backlog[5]).toBe(70);
  });
});

describe('riskBase', () => {
  it('assesses the edited scenario when its incidents come at random, else the one on screen', () => {
    const onScreen = { incident: { random_per_h: 0 } } as never;
    const random = { incident: { random_per_h: 0.5 } } as never;
    const edited = { incident: { random_per_h: 0, duration_s: 9 } } as never;
    expect(randomIncidents(random)).toBe(true);
    expect(randomIncidents(null)).toBe(false);
    expect(riskBase(onScreen, random)).toBe(random);
    expect(riskBase(onScreen, edited)).toBe(onScreen);
    expect(riskBase(null, random)).toBe(random);
  });
});
