import { describe, expect, it } from 'vitest';
import { isoTime } from '../src/clock.js';

// isoTime keeps the last instant it formatted (decision 0246): the same instant again, another one,
// and back, each answer as Date's own.
describe('isoTime', () => {
  it('formats each instant as Date does, the same one twice and others between', () => {
    const instants = [0, 1_765_000_000_000, 1_765_000_000_000, 1_765_000_000_001, 1_765_000_000_000, -1];
    for (const ms of instants) expect(isoTime(ms)).toBe(new Date(ms).toISOString());
  });

  it('refuses an instant that is not one, every time', () => {
    expect(() => isoTime(Number.NaN)).toThrow(RangeError);
    expect(() => isoTime(Number.NaN)).toThrow(RangeError);
    expect(isoTime(5)).toBe('1970-01-01T00:00:00.005Z');
  });
});
