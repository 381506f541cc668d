import ICAL from 'ical.js';
import type { BlockInput } from './store.js';

const DAY = 86_400_000;
/** A runaway rule (FREQ=SECONDLY, no end) must not hang the worker. */
const MAX_STEPS_PER_EVENT = 20_000;

function dayOf(t: ICAL.Time): string {
  return `${String(t.year).padStart(4, '0')}-${String(t.month).padStart(2, '0')}-${String(t.day).padStart(2, '0')}`;
}

function addDays(day: string, n: number): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) + n * DAY).toISOString().slice(0, 10);
}

/**
 * The nights an event occupies, as [startOn, endOn) dates. All-day events (VALUE=DATE) block their
 * dates with DTEND exclusive, as every booking platform exports them. Timed events block from the
 * night of their start to the night before their end, read in the event's own time zone (its
 * TZID and VTIMEZONE) because that is the property's wall clock: 15:00 on the 5th to 11:00 on the
 * 8th is the nights of the 5th, 6th and 7th. An event that starts and ends on one day blocks it.
 */
function nights(start: ICAL.Time, end: ICAL.Time | null): { startOn: string; endOn: string } {
  const startOn = dayOf(start);
  let endOn = end ? dayOf(end) : addDays(startOn, 1);
  if (endOn <= startOn) endOn = addDays(startOn, 1);
  return { startOn, endOn };
}

function daysBetween(a: string, b: string): number {
  return Math.round((Date.parse(`${b}T00:00:00Z`) - Date.parse(`${a}T00:00:00Z`)) / DAY);
}

/**
 * Moves the start of an endless recurring event (no COUNT) forward by whole periods of its rule, to
 * a year before the window, so a block that repeats daily since 1970 is not walked day by day on the
 * event loop. Whole periods keep the rule's phase (the weekday of a weekly rule, the day of a
 * monthly one); EXDATE, RDATE and overridden occurrences are absolute and unaffected. Rules it
 * cannot move safely (COUNT, several RRULEs, sub-daily, a month day past 28) are left as they are.
 */
function fastForward(ev: ICAL.Event, fromOn: string): void {
  const rules = ev.component.getAllProperties('rrule');
  if (rules.length !== 1) return;
  const rule = rules[0].getFirstValue() as ICAL.Recur;
  if (rule.count) return;
  const start = ev.startDate;
  const lead = daysBetween(dayOf(start), fromOn) - 366;
  if (lead <= 0) return;
  const interval = rule.interval || 1;
  const duration = ev.duration;
  const moved = start.clone();
  if (rule.freq === 'DAILY' || rule.freq === 'WEEKLY') {
    const period = rule.freq === 'DAILY' ? interval : 7 * interval;
    moved.adjust(Math.floor(lead / period) * period, 0, 0, 0);
  } else if (rule.freq === 'MONTHLY' || rule.freq === 'YEARLY') {
    if (start.day > 28) return;
    const period = rule.freq === 'MONTHLY' ? interval : 12 * interval;
    const months = Math.floor(lead / 31 / period) * period;
    const total = start.month - 1 + months;
    moved.year = start.year + Math.floor(total / 12);
    moved.month = (total % 12) + 1;
  } else {
    return;
  }
  ev.startDate = moved;
  const end = moved.clone();
  end.addDuration(duration);
  ev.endDate = end;
}

/**
 * Parses an iCalendar text and lists the nights it blocks from `fromOn` (inclusive) up to
 * `untilOn`. Recurring events (RRULE, RDATE, EXDATE and overridden occurrences) are expanded in
 * that window. Cancelled and transparent (free) events block nothing. Throws on text that is not
 * iCalendar, so a broken download never replaces the last good blocks.
 */
export function blockedNights(text: string, fromOn: string, untilOn: string): BlockInput[] {
  const root = new ICAL.Component(ICAL.parse(text) as unknown as unknown[]);
  if (root.name !== 'vcalendar') throw new Error(`not an iCalendar file (top component ${root.name})`);
  const vevents = root.getAllSubcomponents('vevent');
  const blocks: BlockInput[] = [];
  const masters = new Map<string, ICAL.Event>();
  const exceptions: ICAL.Event[] = [];
  for (const v of vevents) {
    const ev = new ICAL.Event(v);
    if (ev.isRecurrenceException()) exceptions.push(ev);
    else masters.set(ev.uid ?? `#${masters.size}`, ev);
  }
  for (const ex of exceptions) {
    const master = masters.get(ex.uid);
    if (master) master.relateException(ex);
    else masters.set(`${ex.uid}#${ex.recurrenceId?.toString()}`, ex);
  }
  const push = (comp: ICAL.Component, uid: string | null, summary: string | null, start: ICAL.Time, end: ICAL.Time | null) => {
    const status = String(comp.getFirstPropertyValue('status') ?? '').toUpperCase();
    const transp = String(comp.getFirstPropertyValue('transp') ?? '').toUpperCase();
    if (status === 'CANCELLED' || transp === 'TRANSPARENT') return;
    const n = nights(start, end);
    if (n.endOn <= fromOn || n.startOn >= untilOn) return;
    blocks.push({ startOn: n.startOn < fromOn ? fromOn : n.startOn, endOn: n.endOn, uid, summary });
  };
  for (const ev of masters.values()) {
    if (!ev.startDate) continue;
    if (!ev.isRecurring()) {
      push(ev.component, ev.uid ?? null, ev.summary ?? null, ev.startDate, ev.endDate ?? null);
      continue;
    }
    fastForward(ev, fromOn);
    const it = ev.iterator();
    for (let steps = 0, next = it.next(); next && steps < MAX_STEPS_PER_EVENT; next = it.next(), steps++) {
      if (dayOf(next) >= untilOn) break;
      const d = ev.getOccurrenceDetails(next);
      push(d.item.component, ev.uid ?? null, d.item.summary ?? null, d.startDate, d.endDate ?? null);
    }
  }
  blocks.sort((a, b) => (a.startOn < b.startOn ? -1 : a.startOn > b.startOn ? 1 : 0));
  return blocks;
}

/** The public export of a unit: its booked nights as all-day events, without any guest's data. */
export function unitCalendar(opts: {
  unitId: string;
  unitName: string;
  nights: Array<{ owner_id: string; starts_at: string; ends_at: string }>;
  now: Date;
}): string {
  const cal = new ICAL.Component(['vcalendar', [], []]);
  cal.addPropertyWithValue('prodid', '-//posd//scheduling//EN');
  cal.addPropertyWithValue('version', '2.0');
  cal.addPropertyWithValue('calscale', 'GREGORIAN');
  cal.addPropertyWithValue('x-wr-calname', opts.unitName);
  const stamp = ICAL.Time.fromJSDate(opts.now, true);
  for (const n of opts.nights) {
    const ev = new ICAL.Component('vevent');
    ev.addPropertyWithValue('uid', `${n.owner_id}-${opts.unitId}@posd`);
    ev.addPropertyWithValue('dtstamp', stamp);
    ev.addPropertyWithValue('dtstart', ICAL.Time.fromDateString(n.starts_at));
    ev.addPropertyWithValue('dtend', ICAL.Time.fromDateString(n.ends_at));
    ev.addPropertyWithValue('summary', 'Reserved');
    ev.addPropertyWithValue('transp', 'OPAQUE');
    cal.addSubcomponent(ev);
  }
  // RFC 5545 lines end in CRLF; ical.js joins with its newLineChar, which defaults to CRLF.
  return `${cal.toString()}\r\n`;
}
