import type Database from 'better-sqlite3';
import type { AppContext } from '../../context.js';
import type { Config } from '../../config.js';
import { accountsOf } from '../../accounts/service.js';
import { nextForwardDeadline, openOverCapPayments, storedNearLimits, type NearCap } from '../terminals/stored/service.js';
import type { Check } from './doctor.js';
import { localText, money } from './time.js';

/** A red line of the verdict under the key the alerts send it by. */
export interface KeyedProblem {
  key: string;
  problem: string;
  fix: string;
}

function capText(c: NearCap, names: Map<string, string>): string {
  const whose = c.terminal_id ? `terminal ${c.terminal_id}` : (names.get(c.account_id) ?? c.account_id);
  const pct = Math.floor((c.used / c.value) * 100);
  return c.cap === 'max_total'
    ? `${whose}: ${money(c.used, c.currency)} of ${money(c.value, c.currency)} stored (${pct}% of max_total)`
    : `${whose}: ${c.used} of ${c.value} payments stored (${pct}% of max_count)`;
}

/**
 * Stored card payments near their caps or their window (`alerts.stored_near_fraction`, 80% by
 * default): two conditions, `stored:caps` and `stored:window`, red on the page and sent as alerts;
 * and a third, `stored:over_cap`, while a payment stored over a cap waits for its outcome.
 * Near a cap, the terminals soon refuse cards offline; near the window, the payment expires
 * unforwarded and the sale is owed again.
 */
export function storedNearProblems(ctx: AppContext, nowMs: number): KeyedProblem[] {
  const fraction = ctx.config.alerts.stored_near_fraction;
  const near = storedNearLimits(ctx, fraction);
  const out: KeyedProblem[] = [];
  if (near.caps.length) {
    const names = new Map<string, string>();
    for (const a of accountsOf(ctx).accounts()) names.set(a.id, a.name ? (a.live_mode ? a.name : `${a.name} (sandbox)`) : a.id);
    out.push({
      key: 'stored:caps',
      problem: `card payments stored offline are near their caps: ${near.caps.map((c) => capText(c, names)).join('; ')}`,
      fix: 'bring the internet link (or the card processor) back so they are forwarded; to store more meanwhile, raise a cap (posd payments offline caps, or Allow on this page)',
    });
  }
  if (near.window) {
    const w = near.window;
    out.push({
      key: 'stored:window',
      problem: `${w.count} card payment(s) stored offline used ${Math.round(fraction * 100)}% or more of their window to be forwarded; the oldest expires ${localText(w.forward_by, nowMs)} unless it reaches the processor`,
      fix: 'bring the internet link (or the card processor) back before then; an expired payment is owed again (the outage report lists them)',
    });
  }
  // A terminal that never hears posd's policy (nexo: its offline limits are set on the terminal)
  // can store a card over posd's caps. It is kept and flagged; the manager hears of it at once.
  const over = openOverCapPayments(ctx);
  if (over.length) {
    const list = over
      .slice(0, 5)
      .map((p) => `${p.id} on terminal ${p.terminal_id}, ${money(p.amount_in_cents, p.currency)} (over ${(JSON.parse(p.over_cap!) as string[]).join(', ')})`)
      .join('; ');
    out.push({
      key: 'stored:over_cap',
      problem: `${over.length} card payment(s) stored offline over posd's caps, still waiting for their outcome: ${list}${over.length > 5 ? '; …' : ''}`,
      fix: "the terminal decided alone: set its own offline limits to posd's caps (for a nexo terminal, in its vendor's settings); posd payments offline flagged lists them",
    });
  }
  return out;
}

/**
 * Doctor's check of stored card payments, over its read-only connection: what the page's verdict
 * says of them (near their caps or window, and one within an hour of its deadline).
 */
export function storedPaymentsCheck(config: Config, db: Database.Database, nowMs: number): Check | null {
  if (!db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'stored_payments'").get()) return null;
  // The reads need the database, the settings and the time alone.
  const ctx = { db, config, clock: { now: () => nowMs } } as unknown as AppContext;
  const problems: Array<{ problem: string; fix: string }> = storedNearProblems(ctx, nowMs);
  const deadline = nextForwardDeadline(ctx);
  if (deadline && Date.parse(deadline) - nowMs < 3_600_000) {
    const left = Date.parse(deadline) - nowMs;
    problems.push({
      problem: `a card payment stored offline ${left > 0 ? 'expires within the hour' : 'has passed its deadline'} (${deadline}) unless it reaches the processor`,
      fix: 'bring the internet link (or the card processor) back; an expired payment is owed again (posd outage report lists them)',
    });
  }
  if (!problems.length) return { name: 'stored payments', ok: true, detail: 'none near their caps, window or deadline' };
  return { name: 'stored payments', ok: false, detail: problems.map((p) => p.problem).join('; '), fix: problems.map((p) => p.fix).join('; ') };
}
