import { isoTime } from '../../clock.js';
import type { SyncRegistry } from './registry.js';
import type { SummaryRow } from './wire.js';

/** A fact as reconciliation reads it, at either side (the store's outbox, the central's received log). */
export interface FactRow {
  account_id: string;
  live_mode: number;
  kind: string;
  payload: string;
}

export interface CountSum {
  account_id: string;
  live_mode: number;
  currency: string;
  measure: string;
  count: number;
  sum: number;
}

export function toSummary(r: { account_id: string; live_mode: number; currency: string; measure: string; count: number; sum: number }): SummaryRow {
  return { account_id: r.account_id, live_mode: r.live_mode === 1, currency: r.currency, measure: r.measure, count: r.count, sum: r.sum };
}

/** One day's span: [from, until) as ISO UTC instants. */
export interface DaySpan {
  from: string;
  until: string;
}

/** The UTC day: what a store that names no zone (and a central that knows none) compares. */
export function dayRange(day: string): DaySpan {
  const start = Date.parse(`${day}T00:00:00.000Z`);
  return { from: isoTime(start), until: isoTime(start + 86_400_000) };
}

/** The box's time zone (its `TZ`, else the system's, as Intl resolves it): the store's day is this zone's. */
export function boxZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

/** Whether Intl knows this zone name. */
export function knownZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

const formats = new Map<string, Intl.DateTimeFormat>();
function wallClock(ms: number, zone: string): { y: number; mo: number; d: number; h: number; mi: number; s: number } {
  let f = formats.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formats.set(zone, f);
  }
  const p: Record<string, number> = {};
  for (const part of f.formatToParts(new Date(ms))) if (part.type !== 'literal') p[part.type] = Number(part.value);
  return { y: p.year, mo: p.month, d: p.day, h: p.hour, mi: p.minute, s: p.second };
}

const pad = (n: number) => String(n).padStart(2, '0');

/** The calendar date ('YYYY-MM-DD') of an instant in a zone. */
export function dateIn(ms: number, zone: string): string {
  const w = wallClock(ms, zone);
  return `${w.y}-${pad(w.mo)}-${pad(w.d)}`;
}

/** The zone's offset from UTC at an instant, in ms (Pacific/Auckland in June: +12 h). */
function offsetAt(ms: number, zone: string): number {
  const w = wallClock(ms, zone);
  return Date.UTC(w.y, w.mo - 1, w.d, w.h, w.mi, w.s) - Math.floor(ms / 1000) * 1000;
}

/** The first instant of a local date in a zone: its midnight, or the first minute after a gap that swallows midnight. */
function startOf(day: string, zone: string): number {
  const wall = Date.parse(`${day}T00:00:00.000Z`);
  let t = wall - offsetAt(wall, zone);
  t = wall - offsetAt(t, zone);
  // A zone whose clocks jump over midnight: the day begins when its date first shows.
  for (let i = 0; i < 8 && dateIn(t, zone) < day; i++) t += 15 * 60_000;
  while (dateIn(t - 15 * 60_000, zone) === day) t -= 15 * 60_000;
  return t;
}

/** A local date's span in a zone, from its first instant to the next date's (23, 24 or 25 hours). */
export function localDayRange(day: string, zone: string): DaySpan {
  const next = new Date(Date.parse(`${day}T00:00:00.000Z`) + 86_400_000).toISOString().slice(0, 10);
  const from = startOf(day, zone);
  const until = startOf(next, zone);
  // A date the zone skipped (Samoa's 2011-12-30): an empty span.
  if (dateIn(from, zone) !== day) return { from: isoTime(until), until: isoTime(until) };
  return { from: isoTime(from), until: isoTime(until) };
}

/** Count and amount of facts per account, environment, currency and kind (`records.<kind>`), by each kind's rule. */
export function factTotals(registry: SyncRegistry, rows: FactRow[]): SummaryRow[] {
  const out = new Map<string, SummaryRow>();
  for (const r of rows) {
    const t = registry.totalsOf(r.kind, JSON.parse(r.payload));
    const currency = t?.currency ?? '';
    const key = `${r.account_id}|${r.live_mode}|${currency}|${r.kind}`;
    let row = out.get(key);
    if (!row) {
      row = { account_id: r.account_id, live_mode: r.live_mode === 1, currency, measure: `records.${r.kind}`, count: 0, sum: 0 };
      out.set(key, row);
    }
    row.count++;
    row.sum += t?.amount_in_cents ?? 0;
  }
  return [...out.values()];
}
