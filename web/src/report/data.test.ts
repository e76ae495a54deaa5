import { describe, expect, it } from 'vitest';
import { hourTick, occupancyStacks, type HourRow } from './data';

const row = (working: number | null, blocked: number | null, asleep: number | null): HourRow => ({
  hour: 0, label: '', launches: 0, in_flight: 0, little: null, completions: 0, failures: 0, working, blocked, asleep, errors: 0,
});

describe('report data', () => {
  it('labels hours by day', () => {
    expect(hourTick(0)).toBe('0d00:00');
    expect(hourTick(37)).toBe('1d13:00');
  });
  it('stacks working, blocked and asleep', () => {
    expect(occupancyStacks([row(0.5, 0.25, 2)])).toEqual({ working: [0.5], blocked: [0.75], asleep: [2.75] });
  });
  it('has no stack when any split is unknown', () => {
    expect(occupancyStacks([row(0.5, 0.25, 2), row(null, null, null)])).toBeNull();
  });
});
