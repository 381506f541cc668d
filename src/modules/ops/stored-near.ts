import type { AppContext } from '../../context.js';
import { accountsOf } from '../../accounts/service.js';
import { storedNearLimits, type NearCap } from '../terminals/stored/service.js';
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
 * default): two conditions, `stored:caps` and `stored:window`, red on the page and sent as alerts.
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
  return out;
}
