import { describe, expect, it } from 'vitest';
import { age, localizeTimes, localText, localTime, when, zoneName } from '../../src/modules/ops/time.js';

// The status page's times: the box's local time and an age, the exact ISO time kept in attributes.
// Asserted against the Date methods of this process's zone, so they hold in any TZ the suite runs in.

const p = (n: number) => String(n).padStart(2, '0');
const hm = (d: Date) => `${p(d.getHours())}:${p(d.getMinutes())}`;

describe('status page times', () => {
  const now = new Date(2026, 10, 27, 14, 3, 30).getTime(); // local 27 Nov 2026 14:03:30

  it('ages are short: seconds, minutes, hours, days', () => {
    expect(age(40_000)).toBe('40 s');
    expect(age(5 * 60_000)).toBe('5 min');
    expect(age(119 * 60_000)).toBe('119 min');
    expect(age(3 * 3600_000)).toBe('3 h');
    expect(age(3 * 86_400_000)).toBe('3 d');
  });

  it('today: the local clock time and how long ago; the future says "in"', () => {
    const then = new Date(now - 5 * 60_000);
    expect(localText(then.toISOString(), now)).toBe(`${hm(then)}, 5 min ago`);
    expect(localText(new Date(now).toISOString(), now)).toBe(`${hm(new Date(now))}, just now`);
    const later = new Date(now + 2 * 3600_000);
    expect(localText(later.toISOString(), now)).toBe(`${hm(later)}, in 2 h`);
  });

  it('another day adds the date, another year the year', () => {
    const yesterday = new Date(2026, 10, 26, 9, 15).getTime();
    expect(localTime(yesterday, now)).toBe('26 Nov 09:15');
    expect(localText(new Date(yesterday).toISOString(), now)).toMatch(/^26 Nov 09:15, \d+ h ago$/);
    expect(localTime(new Date(2025, 0, 2, 8, 0).getTime(), now)).toBe('2 Jan 2025 08:00');
  });

  it('a <time> element keeps the exact ISO time in datetime and title; nothing shows "never"', () => {
    const iso = new Date(now - 90_000).toISOString();
    expect(when(iso, now)).toBe(`<time datetime="${iso}" title="${iso}">${hm(new Date(now - 90_000))}, 2 min ago</time>`);
    expect(when(null, now)).toBe('never');
    expect(when(undefined, now, '-')).toBe('-');
    // Not a time: shown as given, escaped.
    expect(when('<soon>', now)).toContain('&lt;soon&gt;');
  });

  it('names the zone with its offset', () => {
    const off = -new Date(now).getTimezoneOffset();
    const sign = off < 0 ? '-' : '+';
    expect(zoneName(now)).toBe(`${Intl.DateTimeFormat().resolvedOptions().timeZone} (UTC${sign}${p(Math.floor(Math.abs(off) / 60))}:${p(Math.abs(off) % 60)})`);
  });

  it("doctor's ISO times in a verdict line read as local times", () => {
    const a = new Date(now - 3 * 3600_000).toISOString();
    const b = new Date(now - 30_000).toISOString().replace('.000Z', 'Z');
    expect(localizeTimes(`the last good backup is 27 hours old (${a}); checked ${b}`, now)).toBe(
      `the last good backup is 27 hours old (${localText(a, now)}); checked ${localText(b, now)}`,
    );
    expect(localizeTimes('nothing to change 2026-01-01', now)).toBe('nothing to change 2026-01-01');
  });
});
