import { esc } from '../../api/html.js';

/**
 * Times on the status page: the box's local time (its TZ, as Intl resolves it) and how long ago,
 * "14:03, 5 min ago"; another day adds the date, "26 Nov 14:03, 2 d ago". The exact ISO time stays
 * in the `datetime` and `title` attributes, for tests and for a person who hovers.
 */

// Made at the first page that shows a time: the first Intl.DateTimeFormat loads ICU's locale data,
// about 30 ms that a start spent here before its first answer (issue 16).
let formats: { clock: Intl.DateTimeFormat; date: Intl.DateTimeFormat; fullDate: Intl.DateTimeFormat } | undefined;
const fmt = () =>
  (formats ??= {
    clock: new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }),
    date: new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short' }),
    fullDate: new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', year: 'numeric' }),
  });

/** The box's time zone as the page names it: "America/Guatemala (UTC-06:00)". */
export function zoneName(nowMs: number): string {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const off = -new Date(nowMs).getTimezoneOffset();
  const p = (n: number) => String(Math.floor(Math.abs(n))).padStart(2, '0');
  return `${zone} (UTC${off < 0 ? '-' : '+'}${p(off / 60)}:${p(off % 60)})`;
}

/**
 * For the command line: "2026-03-02 03:00" in the box's local time (its TZ), as the page shows
 * times; the output names the zone once (`zoneName`). Text that is not a time passes through.
 */
export function localStamp(iso: string): string {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return iso;
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`;
}

/** "40 s", "5 min", "3 h", "2 d": short enough for a phone's cell. */
export function age(ms: number): string {
  const s = Math.round(Math.abs(ms) / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.round(s / 60);
  if (m < 120) return `${m} min`;
  const h = Math.round(m / 60);
  return h < 48 ? `${h} h` : `${Math.round(h / 24)} d`;
}

const sameDay = (a: Date, b: Date) => a.getFullYear() === b.getFullYear() && a.getMonth() === b.getMonth() && a.getDate() === b.getDate();

/** The local wall time alone: "14:03", "26 Nov 14:03", or "26 Nov 2025 14:03" for another year. */
export function localTime(ms: number, nowMs: number): string {
  const d = new Date(ms);
  const now = new Date(nowMs);
  const { clock, date, fullDate } = fmt();
  if (sameDay(d, now)) return clock.format(d);
  return `${(d.getFullYear() === now.getFullYear() ? date : fullDate).format(d)} ${clock.format(d)}`;
}

/** The local date: "27 Nov 2026". */
export function localDate(ms: number): string {
  return fmt().fullDate.format(new Date(ms));
}

/** Plain text, for sentences (the verdict's lines, notices): "14:03, 5 min ago" or "18:00, in 4 h". */
export function localText(iso: string, nowMs: number): string {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return iso;
  const diff = nowMs - ms;
  return `${localTime(ms, nowMs)}, ${Math.abs(diff) < 1000 ? 'just now' : diff > 0 ? `${age(diff)} ago` : `in ${age(diff)}`}`;
}

/**
 * Sentences written for the command line (doctor's checks, sync alerts) name times in ISO UTC; on
 * the page each becomes the local form, "(since 14:03, 5 min ago)".
 */
export function localizeTimes(text: string, nowMs: number): string {
  return text.replace(/\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z\b/g, (iso) => localText(iso, nowMs));
}

/** A `<time>` element: local time and age, the exact ISO time in `datetime` and `title`. */
export function when(iso: string | null | undefined, nowMs: number, empty = 'never'): string {
  if (!iso) return esc(empty);
  return `<time datetime="${esc(iso)}" title="${esc(iso)}">${esc(localText(iso, nowMs))}</time>`;
}

/** A `<td>` holding `when(...)`. */
export function tdWhen(iso: string | null | undefined, nowMs: number, cls = 'muted', empty = 'never'): string {
  return `<td${cls ? ` class="${cls}"` : ''}>${when(iso, nowMs, empty)}</td>`;
}

/** "GTQ 12.50": an amount as the page and its verdict show it. */
export const money = (cents: number, currency: string) => `${currency} ${(cents / 100).toFixed(2)}`;
