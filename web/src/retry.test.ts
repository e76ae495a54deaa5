import { describe, expect, it } from 'vitest';
import { adviceErrorText, askAgainIn, askingStoppedText, BUSY_TRIES, busyWaitS, isBusy, ladderErrorText } from './retry';

// As api.ts's ApiError carries them (api.ts needs a page to load).
const busy = (retryAfterS: number | null) => Object.assign(new Error('busy: 2 requests under way'), { status: 503, busy: true, retryAfterS });
const refused = Object.assign(new Error('client.retries: must be at most 10'), { status: 400, busy: false, retryAfterS: null });

describe('busy answers to the views after the chart', () => {
  it('are asked again after the Retry-After, a bounded number of times', () => {
    expect(isBusy(busy(3))).toBe(true);
    expect(isBusy(refused)).toBe(false);
    expect(isBusy(new TypeError('Failed to fetch'))).toBe(false);
    expect(askAgainIn(busy(3), 0)).toBe(3);
    const waits: (number | null)[] = [];
    for (let tries = 0; tries <= BUSY_TRIES; tries++) waits.push(askAgainIn(busy(1), tries));
    expect(waits).toEqual([...Array(BUSY_TRIES).fill(1), null]);
    expect(askAgainIn(refused, 0)).toBeNull();
    expect(askAgainIn(new TypeError('Failed to fetch'), 0)).toBeNull();
  });

  it('wait as the server says, within reason', () => {
    expect(busyWaitS(null)).toBe(2);
    expect(busyWaitS(undefined)).toBe(2);
    expect(busyWaitS(0)).toBe(1);
    expect(busyWaitS(5)).toBe(5);
    expect(busyWaitS(600)).toBe(30);
    expect(askAgainIn(busy(null), 0)).toBe(2);
  });

  it('replace the advice placeholder with what happened', () => {
    expect(adviceErrorText(busy(2), 2)).toBe('The server is busy; asking for advice again in 2 s.');
    expect(adviceErrorText(busy(2), null)).toBe('No advice: the server stayed busy. Change any input to ask again.');
    expect(adviceErrorText(refused, null)).toBe('No advice for this run: client.retries: must be at most 10');
    expect(adviceErrorText('odd', null)).toBe('No advice for this run: the server did not answer');
    for (const e of [busy(2), refused]) for (const w of [2, null]) expect(adviceErrorText(e, w)).not.toMatch(/Working out/);
  });

  it('say a busy server is busy, not that it refused the ladder', () => {
    expect(ladderErrorText(busy(4), 4)).toBe('The server is busy; asking for the ladder again in 4 s.');
    expect(ladderErrorText(busy(4), null)).toBe('No ladder: the server stayed busy. Change any input to ask again.');
    expect(ladderErrorText(busy(4), 4)).not.toMatch(/refused/);
    expect(ladderErrorText(refused, null)).toBe('The server refused the ladder for these inputs: client.retries: must be at most 10');
  });
});

describe('asking again cancelled by a newer run that then failed', () => {
  it('promises nothing still coming for the result on screen', () => {
    for (const view of ['advice', 'ladder'] as const) {
      const text = askingStoppedText(view);
      expect(text).toContain(`No ${view}`);
      expect(text).toContain('Change any input to ask again');
      expect(text).not.toMatch(/again in \d/);
    }
  });
});
