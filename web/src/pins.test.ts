import { describe, expect, it } from 'vitest';
import { MAX_PINS, onTimeLine, pinName, pinRows, removePin, type Pin } from './pins';
import type { RunResult, SchemaKey } from './types';

const keys: SchemaKey[] = [{ path: 'client.retries', type: 'integer', label: 'Retries' }, { path: 'client.timeout_s', type: 'number', label: 'Timeout' }];

describe('pins', () => {
  it('are named after their preset and changes, never twice the same', () => {
    expect(pinName('order-status', [], keys, [])).toBe('order-status');
    expect(pinName('order-status', [['client.retries', 0]], keys, [])).toBe('order-status: Retries 0');
    expect(pinName('order-status', [['client.retries', 0], ['client.timeout_s', 2], ['seed', 3]], keys, [])).toBe('order-status: Retries 0, Timeout 2 +1');
    expect(pinName('order-status', [], keys, ['order-status', 'order-status (2)'])).toBe('order-status (3)');
    expect(MAX_PINS).toBe(3);
  });

  it('put a pin on the time line of the run on screen', () => {
    // A pin stepped at 1 s over 0..3 s, drawn on a 0.5 s grid over 0..5 s.
    expect(onTimeLine([0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 5], [0, 1, 2, 3], [10, 20, 30, 40])).toEqual([10, 10, 20, 20, 30, 30, 40, 40, null, null]);
    expect(onTimeLine([0, 1], [], [])).toEqual([null, null]);
  });

  it('compare the run on screen with each pin, a pin being run again shown as such', () => {
    const run = (failed: number, recovery: number | null) => ({
      scenario: { engine: 'agent', horizon_s: 120, incident: { start_s: 10, duration_s: 10 }, recovery: { criterion: 'goodput' } },
      metrics: { failed_fraction: failed, wasted_fraction: 0.1, peak_amplification: 2.5, goodput_recovery_s: recovery, failure_recovery_s: recovery, latency_s: { p99: 1.25 } },
    }) as unknown as RunResult;
    const pins: Pin[] = [{ name: 'a', preset: 'p', set: [], result: run(0.5, null) }, { name: 'b', preset: 'p', set: [], result: null }];
    const rows = pinRows(run(0.012, 19), pins);
    expect(rows.find((r) => r[0] === 'Failed requests')).toEqual(['Failed requests', '1.2%', '50.0%', '…']);
    expect(rows.find((r) => r[0] === 'Goodput back after')).toEqual(['Goodput back after', '19 s', 'never', '…']);
    expect(rows.find((r) => r[0] === 'Verdict')).toEqual(['Verdict', 'Recovered +19 s', 'Not recovered by 120 s', '…']);
    expect(rows.find((r) => r[0] === 'Latency p99')?.[1]).toBe('1.25 s');
  });

  it('are removed only if still there: a pin removed meanwhile takes no other with it', () => {
    const pin = (name: string): Pin => ({ name, preset: 'p', set: [], result: null });
    const [a, b, c] = [pin('a'), pin('b'), pin('c')];
    const pins = [a, b, c];
    expect(removePin(pins, b)).toBe(true);
    expect(pins).toEqual([a, c]);
    // b's run fails after the user removed it: c (the last) stays.
    expect(removePin(pins, b)).toBe(false);
    expect(pins).toEqual([a, c]);
    expect(removePin([], a)).toBe(false);
  });
});
