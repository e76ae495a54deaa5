import { describe, expect, it } from 'vitest';
import {
  attemptsPerRequest, boundSentence, criterionOf, layerRetries, fmtAmp, fmtNum, fmtPct, fmtTime, plural, ladderCells, recoveryOf, recoverySentence, shortVerdict, tippingDetail, tippingText,
} from './format';
import type { GraphResult, LadderRow, Metrics, Scenario } from './types';

const sc = (criterion: 'goodput' | 'failures', horizon = 120) => ({
  horizon_s: horizon, step_s: 0.05,
  demand: { rate_per_s: 600 }, server: { capacity_per_s: 1000, queue_limit: 0, shed_abandoned: false },
  incident: { start_s: 10, duration_s: 15, capacity_factor: 0, demand_factor: 1 },
  client: { timeout_s: 1, layers: 1, retries: 2, backoff: { base_s: 0.1, multiplier: 2, cap_s: 2, jitter: 'full' }, budget: { kind: 'none', ratio: 0.1, window_s: 10 } },
  recovery: { criterion },
}) as unknown as Scenario;

const m = (over: Partial<Metrics> = {}): Metrics => ({
  user_requests: 72000, failed: 64170, failed_fraction: 0.89125, wasted_fraction: 0.9406, peak_amplification: 3,
  goodput_recovery_s: null, failure_recovery_s: null, backlog_growing: true,
  bound: { max_amplification: 3, safe_load_below: 1 / 3, load: 0.6 }, ...over,
});

describe('numbers', () => {
  it('formats', () => {
    expect(fmtNum(64170)).toBe('64,170');
    expect(fmtNum(21.05)).toBe('21.05');
    expect(fmtNum(21.050000000000004)).toBe('21.05');
    expect(fmtNum(null)).toBe('–');
    // Instants keep their fraction past 100 s: steps of 0.5 s stay apart.
    expect(fmtTime(100.5)).toBe('100.5');
    expect(fmtTime(101)).toBe('101');
    expect(fmtTime(299.5)).toBe('299.5');
    expect(fmtTime(2.05)).toBe('2.05');
    expect(fmtTime(null)).toBe('–');
    expect(plural(1.0011, 'attempt', fmtNum(1.0011, 2))).toBe('1 attempt');
    expect(plural(2, 'attempt')).toBe('2 attempts');
    expect(fmtPct(0.89125)).toBe('89.1%');
    expect(fmtPct(0.2922222)).toBe('29.2%');
    expect(fmtAmp(3.000000000000348)).toBe('3×');
    expect(fmtAmp(1.1)).toBe('1.1×');
    expect(attemptsPerRequest(2, 2)).toBe(9);
  });
});

describe('the retry stack', () => {
  it('reads client.stack_retries as the server does, else retries at each layer', () => {
    const one = sc('failures');
    expect(layerRetries(one)).toEqual([2]);
    const two = { ...one, client: { ...one.client, layers: 2 } } as Scenario;
    expect(layerRetries(two)).toEqual([2, 2]);
    // stack_retries overrides layers and retries: (3 + 1) x (1 + 1) = 8, not (2 + 1)^2 = 9.
    const stacked = { ...one, client: { ...one.client, layers: 2, stack_retries: '3, 1' } } as Scenario;
    expect(layerRetries(stacked)).toEqual([3, 1]);
    expect(layerRetries(stacked).reduce((a, k) => a * (k + 1), 1)).toBe(8);
  });
});

describe('verdicts', () => {
  it('uses the scenario criterion', () => {
    expect(criterionOf(sc('goodput'))).toBe('goodput');
    expect(criterionOf(sc('failures'))).toBe('failures');
    expect(criterionOf(undefined)).toBe('failures');
    expect(recoveryOf(m({ goodput_recovery_s: 19, failure_recovery_s: null }), 'goodput')).toBe(19);
    expect(recoveryOf(m({ goodput_recovery_s: 19, failure_recovery_s: null }), 'failures')).toBeNull();
  });

  it('says recovered or stuck', () => {
    expect(shortVerdict(m({ failure_recovery_s: 21.050000000000004 }), sc('failures'))).toBe('Recovered +21.05 s');
    expect(shortVerdict(m(), sc('failures'))).toBe('Not recovered by 120 s');
    expect(recoverySentence(m({ goodput_recovery_s: 19 }), sc('goodput', 300))).toBe('Goodput recovers 19 s after the incident ends.');
    expect(recoverySentence(m(), sc('goodput', 300))).toMatch(/never returns.*300 s/);
    expect(recoverySentence(m({ failure_recovery_s: 0 }), sc('failures'))).toMatch(/0 s/);
  });

  it('formats ladder rows like the published table', () => {
    const row: LadderRow = { name: '+ 10% retry budget', change: 'window budget', metrics: m({ failure_recovery_s: 28.650000000000006, failed_fraction: 0.3546527777777751, peak_amplification: 2.000000000000071 }) };
    expect(ladderCells(row, sc('failures'))).toEqual({ verdict: 'Recovered +28.65 s', recovered: true, failed: '35.5%', peak: '2×' });
    const stuck: LadderRow = { name: '+ Backoff', change: '', metrics: m() };
    expect(ladderCells(stuck, sc('failures'))).toEqual({ verdict: 'Not recovered by 120 s', recovered: false, failed: '89.1%', peak: '3×' });
  });

  it('uses the row scenario criterion when the row carries one', () => {
    const row: LadderRow = { name: 'x', change: '', scenario: sc('goodput', 300), metrics: m({ goodput_recovery_s: 40, failure_recovery_s: null }) };
    expect(ladderCells(row, sc('failures')).verdict).toBe('Recovered +40 s');
  });

  it('states the tipping point and the bound', () => {
    expect(tippingText({ grid_s: 0.5, on_grid_s: 1.5, exact_s: 1.3 })).toBe('1.5 s');
    expect(tippingDetail({ grid_s: 0.5, on_grid_s: 1.5, exact_s: 1.3 })).toContain('exactly 1.3 s');
    expect(tippingText({ grid_s: 0.5, on_grid_s: 1.5, exact_s: null })).toBe('1.5 s');
    expect(tippingText({ grid_s: 0.5, on_grid_s: null, exact_s: null })).toBe('none');
    expect(tippingText(null)).toBe('…');
    const b = boundSentence(m(), sc('failures'));
    expect(b).toContain('3×');
    expect(b).toContain('180%');
    expect(b).toContain('33.3%');
    expect(b).toContain('60%');
    expect(boundSentence(m({ bound: { max_amplification: 3, safe_load_below: 1 / 3, load: 0.2 } }), sc('failures'))).toContain('always safe');
  });

  it("words a graph's bound per user request at its incident service", () => {
    // shared-database: 200 users/s, two calls per request reach db (670/s), 7 attempts per call.
    const g = {
      ...sc('failures'),
      demand: { rate_per_s: 200 },
      incident: { start_s: 30, duration_s: 20, capacity_factor: 0.5, demand_factor: 1, service: 'db' },
      services: { gateway: {}, orders: { capacity_per_s: 1000 }, db: { capacity_per_s: 670 } },
      calls: [{ from: 'user', to: 'gateway' }, { from: 'gateway', to: 'orders' }, { from: 'orders', to: 'db', count: 2 }],
    } as unknown as Scenario;
    const gm = m({ peak_amplification: 3, bound: { max_amplification: 7, safe_load_below: 1 / 7, load: 400 / 670 } });
    // The run names the service (graph.incident_service); its worst case per user request
    // is the run's own, else worked out from the bound.
    const named = { services: [], edges: [], incident_service: 'db' } as unknown as GraphResult;
    const b = boundSentence(gm, g, named);
    expect(b).toContain('each user request can cost up to 14 attempts at db');
    expect(b).toContain('418% of its capacity');
    expect(b).not.toContain('turn into 7 attempts');
    const graph = { services: [{ name: 'db', serves: true, totals: { worst_case_per_request: 14 }, series: {} }], edges: [], incident_service: 'db' } as unknown as GraphResult;
    expect(boundSentence(gm, g, graph)).toContain('up to 14 attempts at db');
    // A single service: unchanged.
    expect(boundSentence(m(), sc('failures'))).toContain('each request can turn into 3 attempts, so demand at the server can climb to 3× normal: 180% of capacity.');
  });
});
