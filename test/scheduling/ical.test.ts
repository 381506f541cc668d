import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { blockedNights, unitCalendar } from '../../src/modules/calendar-feeds/ical.js';

const fixture = (name: string) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');
const ranges = (text: string, from = '2026-03-01', until = '2026-12-31') => blockedNights(text, from, until).map((b) => [b.startOn, b.endOn]);

describe('reading the nights an iCalendar feed blocks', () => {
  it('all-day events (VALUE=DATE) as Airbnb exports them: DTEND is exclusive', () => {
    expect(ranges(fixture('airbnb.ics'))).toEqual([
      ['2026-03-12', '2026-03-15'],
      ['2026-03-20', '2026-03-21'],
    ]);
  });

  it('TZID times with their VTIMEZONE are read on the property wall clock; RRULE with EXDATE; free and cancelled events block nothing', () => {
    expect(ranges(fixture('google-tz-rrule.ics'))).toEqual([
      ['2026-03-02', '2026-03-03'],
      ['2026-03-09', '2026-03-10'],
      ['2026-03-23', '2026-03-24'],
      ['2026-03-25', '2026-03-27'],
      // 20:00 in Guatemala is 02:00 UTC the next day: the night blocked is the 30th, not the 31st.
      ['2026-03-30', '2026-03-31'],
      ['2026-03-30', '2026-03-31'],
      ['2026-04-06', '2026-04-07'],
      ['2026-04-13', '2026-04-14'],
      ['2026-04-20', '2026-04-21'],
    ]);
  });

  it('a daily RRULE across a DST change with one occurrence moved by RECURRENCE-ID (Booking.com style)', () => {
    expect(ranges(fixture('booking-com.ics'))).toEqual([
      ['2026-03-27', '2026-03-28'],
      ['2026-03-29', '2026-03-30'],
      ['2026-04-01', '2026-04-04'],
      ['2026-04-10', '2026-04-11'],
    ]);
  });

  it('endless rules that began decades ago keep their phase (daily since 1970, every other Monday since 1990, monthly since 1985)', () => {
    const cal = (rule: string, start: string) =>
      `BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:r\r\nDTSTART;VALUE=DATE:${start}\r\nRRULE:${rule}\r\nSUMMARY:Closed\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n`;
    expect(ranges(cal('FREQ=DAILY', '19700101'), '2026-03-01', '2026-03-04')).toEqual([
      ['2026-03-01', '2026-03-02'],
      ['2026-03-02', '2026-03-03'],
      ['2026-03-03', '2026-03-04'],
    ]);
    const fortnightly = ranges(cal('FREQ=WEEKLY;INTERVAL=2', '19900101'), '2026-03-01', '2026-05-01').map(([d]) => d);
    const expected: string[] = [];
    for (let t = Date.parse('1990-01-01T00:00:00Z'); t < Date.parse('2026-05-01T00:00:00Z'); t += 14 * 86_400_000) {
      const d = new Date(t).toISOString().slice(0, 10);
      if (d >= '2026-03-01') expected.push(d);
    }
    expect(fortnightly).toEqual(expected);
    expect(ranges(cal('FREQ=MONTHLY;BYDAY=1SU', '19850106'), '2026-03-01', '2026-06-01').map(([d]) => d)).toEqual(['2026-03-01', '2026-04-05', '2026-05-03']);
    expect(ranges(cal('FREQ=YEARLY', '19800315'), '2026-03-01', '2026-04-01')).toEqual([['2026-03-15', '2026-03-16']]);
  });

  it('keeps only the window asked for, clipping a stay in progress', () => {
    expect(ranges(fixture('airbnb.ics'), '2026-03-13', '2026-03-20')).toEqual([['2026-03-13', '2026-03-15']]);
  });

  it('throws on a file that is not iCalendar (the last good blocks are then kept)', () => {
    expect(() => blockedNights('<html>503 Service Unavailable</html>', '2026-03-01', '2026-12-31')).toThrow();
    expect(() => blockedNights('BEGIN:VCARD\r\nVERSION:3.0\r\nEND:VCARD\r\n', '2026-03-01', '2026-12-31')).toThrow();
  });

  it('the published unit calendar round-trips through the same parser', () => {
    const text = unitCalendar({
      unitId: 'res_x',
      unitName: 'Room 1',
      nights: [{ owner_id: 'bk_1', starts_at: '2026-05-01', ends_at: '2026-05-04' }],
      now: new Date('2026-03-02T00:00:00Z'),
    });
    expect(text).toContain('DTSTART;VALUE=DATE:20260501');
    expect(text).toContain('\r\n');
    expect(ranges(text)).toEqual([['2026-05-01', '2026-05-04']]);
  });
});
