import { describe, expect, it } from 'vitest';
import { AMP_POLICIES, ampScenario, ampSeries, ampSummary } from './amplification';
import type { Scenario, SweepRow } from './types';

describe('amplification view', () => {
  it('runs each policy on the agent engine without the incident', () => {
    const sc = { engine: 'fluid', incident: { duration_s: 20 }, client: { retries: 3, budget: { kind: 'none', ratio: 0.2 } } } as unknown as Scenario;
    const bucket = ampScenario(sc, AMP_POLICIES[2]) as unknown as { engine: string; incident: { duration_s: number }; client: { budget: { kind: string; ratio: number } } };
    expect(bucket.engine).toBe('agent');
    expect(bucket.incident.duration_s).toBe(0);
    expect(bucket.client.budget).toEqual({ kind: 'token_bucket', ratio: 0.1 });
    expect((sc as unknown as { engine: string }).engine).toBe('fluid');  // the page's own is untouched
  });
  it('reads attempts per request from each row and says the widest point', () => {
    const row = (share: number, a?: number) => ({ values: { 'server.error_share': share }, metrics: { last_window: a === undefined ? undefined : { seconds: 60, goodput_per_s: 1, utilization: 0.2, attempts_per_request: a } } }) as unknown as SweepRow;
    const s = ampSeries([row(0, 1), row(0.5, 1.875), row(0.6)]);
    expect(s.shares).toEqual([0, 0.5, 0.6]);
    expect(s.attempts).toEqual([1, 1.875, null]);
    expect(ampSummary(['3 retries', 'No retries'], [[1, 1.875], [1, 1]], [0, 0.5])).toBe('With 50% of attempts failing: 3 retries 1.88×, No retries 1.00× attempts per request.');
  });
});
