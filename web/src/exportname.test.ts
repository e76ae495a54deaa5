import { describe, expect, it } from 'vitest';
import { fileBase } from './exportname';

describe('export file names', () => {
  it('name the preset of the result on screen, not one picked since', () => {
    // A preset picked whose run has not come (or failed): the data is still the old result's.
    expect(fileBase({ sent: {}, sentPreset: { name: 'order-status' }, preset: { name: 'checkout' } })).toBe('retrystorm-order-status');
    expect(fileBase({ sent: {}, sentPreset: { name: 'checkout' }, preset: { name: 'checkout' } })).toBe('retrystorm-checkout');
  });

  it('name the inputs\' preset before any result, and a scenario without one', () => {
    expect(fileBase({ sent: null, sentPreset: null, preset: { name: 'checkout' } })).toBe('retrystorm-checkout');
    expect(fileBase({ sent: null, sentPreset: null, preset: null })).toBe('retrystorm-scenario');
  });
});
