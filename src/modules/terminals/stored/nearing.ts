import type { AppContext } from '../../../context.js';
import { capsOf, terminalCapsOf } from './policy.js';
import { storedPaymentsStore, type StoredPaymentRow } from './store.js';

/** One cap that stored payments use most of: an account's or one terminal's. */
export interface NearCap {
  account_id: string;
  live_mode: boolean;
  /** null: the account's cap (all its terminals); else the terminal's own. */
  terminal_id: string | null;
  cap: 'max_total' | 'max_count';
  used: number;
  value: number;
  /** The currency of `max_total`'s amounts ('' for a count). */
  currency: string;
}

/** The stored payments (not forwarded yet) that have waited `fraction` of their window or more. */
export interface NearWindow {
  count: number;
  /** The oldest one's deadline: expired then unless forwarded. */
  forward_by: string;
  stored_at: string;
}

export interface NearLimits {
  caps: NearCap[];
  window: NearWindow | null;
}

const near = (used: number, value: number, fraction: number) => used > 0 && used >= value * fraction;

function totals(rows: StoredPaymentRow[]) {
  return { count: rows.length, amount: rows.reduce((n, r) => n + r.amount_in_cents, 0), currency: rows[0]?.currency ?? '' };
}

function groupBy(rows: StoredPaymentRow[], key: (r: StoredPaymentRow) => string): Map<string, StoredPaymentRow[]> {
  const out = new Map<string, StoredPaymentRow[]>();
  for (const r of rows) out.set(key(r), [...(out.get(key(r)) ?? []), r]);
  return out;
}

/**
 * Stored payments near their limits: each cap that counts them (`max_total`, `max_count`, an
 * account's and a terminal's own) used to `fraction` or more, and the payments that have waited
 * `fraction` of their window (`stored_at` to `forward_by`) without being forwarded. Read from the
 * open payments alone (at most the caps' counts), so the page can ask at every refresh.
 */
export function storedNearLimits(ctx: AppContext, fraction: number): NearLimits {
  const open = storedPaymentsStore(ctx.db).open();
  if (!open.length) return { caps: [], window: null };
  const caps: NearCap[] = [];
  for (const rows of groupBy(open, (r) => `${r.account_id}|${r.live_mode}`).values()) {
    const ref = { id: rows[0].account_id, live_mode: rows[0].live_mode === 1 };
    const c = capsOf(ctx, ref);
    const t = totals(rows);
    const base = { account_id: ref.id, live_mode: ref.live_mode, terminal_id: null };
    if (near(t.amount, c.max_total_in_cents, fraction))
      caps.push({ ...base, cap: 'max_total', used: t.amount, value: c.max_total_in_cents, currency: t.currency });
    if (near(t.count, c.max_count, fraction)) caps.push({ ...base, cap: 'max_count', used: t.count, value: c.max_count, currency: '' });
  }
  for (const rows of groupBy(open, (r) => r.terminal_id).values()) {
    const own = terminalCapsOf(ctx, rows[0].terminal_id);
    const t = totals(rows);
    const base = { account_id: rows[0].account_id, live_mode: rows[0].live_mode === 1, terminal_id: rows[0].terminal_id };
    if (own.max_total_in_cents !== null && near(t.amount, own.max_total_in_cents, fraction)) {
      caps.push({ ...base, cap: 'max_total', used: t.amount, value: own.max_total_in_cents, currency: t.currency });
    }
    if (own.max_count !== null && near(t.count, own.max_count, fraction))
      caps.push({ ...base, cap: 'max_count', used: t.count, value: own.max_count, currency: '' });
  }
  const now = ctx.clock.now();
  const late = open
    .filter((r) => r.status === 'stored')
    .filter((r) => {
      const from = Date.parse(r.stored_at);
      return now - from >= (Date.parse(r.forward_by) - from) * fraction;
    })
    .sort((a, b) => a.forward_by.localeCompare(b.forward_by));
  return { caps, window: late.length ? { count: late.length, forward_by: late[0].forward_by, stored_at: late[0].stored_at } : null };
}
