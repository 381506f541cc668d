import type { AppContext } from '../../context.js';
import type { Db } from '../../db/database.js';
import type { Account } from '../../accounts/service.js';
import { applyCoupons, redeemCoupons, type AppliedCoupon, type CouponResult } from './apply.js';
import { codeKey, couponView } from './service.js';
import { couponsStore } from './store.js';
import { isoTime } from '../../clock.js';
import type { CheckoutHooks } from '../checkouts/schema.js';
import { perDb } from '../../db/per-db.js';

/**
 * The checkout hooks coupons declare (`checkout` in index.ts): which coupons a checkout carries (table
 * `checkout_coupons`, owned here), priced again when the checkout changes, redeemed when it is paid.
 */
interface Row {
  checkout_id: string;
  coupon_id: string;
  account_id: string;
  live_mode: number;
  code: string | null;
  automatic: number;
  amount_off_in_cents: number;
  position: number;
}

const sql = perDb(function prepare(db: Db) {
  return {
    del: db.prepare('DELETE FROM checkout_coupons WHERE checkout_id = ?'),
    ins: db.prepare(
      `INSERT INTO checkout_coupons (checkout_id, coupon_id, account_id, live_mode, code, automatic, amount_off_in_cents, position)
       VALUES (@checkout_id, @coupon_id, @account_id, @live_mode, @code, @automatic, @amount_off_in_cents, @position)`,
    ),
    // Ordered here, not by SQLite: an ORDER BY the key's index cannot give builds a temporary b-tree,
    // about 15 us even for no rows, and every paid checkout (a cash sale twice) asks (decision 0245).
    list: db.prepare('SELECT * FROM checkout_coupons WHERE checkout_id = ?'),
  };
});

/** Inside the checkout's transaction: what it carries now replaces what it carried. */
export function recordCheckoutCoupons(ctx: AppContext, account: Account, checkoutId: string, codes: string[], result: CouponResult): void {
  if (!ctx.db.inTransaction) throw new Error('recordCheckoutCoupons() outside the checkout transaction');
  const s = sql(ctx.db);
  s.del.run(checkoutId);
  result.applied.forEach((a, position) => {
    const typed = a.automatic ? undefined : codes.find((c) => codeKey(c) === codeKey(a.name));
    s.ins.run({
      checkout_id: checkoutId,
      coupon_id: a.coupon_id,
      account_id: account.id,
      live_mode: account.live_mode ? 1 : 0,
      code: typed ?? null,
      automatic: a.automatic ? 1 : 0,
      amount_off_in_cents: a.amount_off_in_cents,
      position,
    });
  });
}

/** A checkout's coupon rows in the order they were applied. */
function rowsOf(ctx: AppContext, checkoutId: string): Row[] {
  const rows = sql(ctx.db).list.all(checkoutId) as Row[];
  return rows.length > 1 ? rows.sort((a, b) => a.position - b.position) : rows;
}

export function checkoutCoupons(ctx: AppContext, checkoutId: string): AppliedCoupon[] {
  return rowsOf(ctx, checkoutId).map((r) => ({
    coupon_id: r.coupon_id,
    name: r.code ?? '',
    display_name: null,
    amount_off_in_cents: r.amount_off_in_cents,
    automatic: r.automatic === 1,
  }));
}

/** The codes typed for this checkout, to price it again after a change. */
export function checkoutCouponCodes(ctx: AppContext, checkoutId: string): string[] {
  return rowsOf(ctx, checkoutId)
    .filter((r) => r.code !== null)
    .map((r) => r.code!);
}

/** Prices a checkout's lines with its coupons: the amount to charge and what to record. */
export function priceWithCoupons(
  ctx: AppContext,
  account: Account,
  draft: {
    items: Array<{ amount_in_cents: number; quantity: number; product_id: string | null }>;
    currency: string;
    customer_id: string | null;
    coupon_codes: string[];
  },
): CouponResult {
  return applyCoupons(ctx, account, draft);
}

/** Inside the payment's transaction: count the paid checkout's coupons (once per checkout). */
export function redeemCheckoutCoupons(ctx: AppContext, account: Account, checkoutId: string, customerId: string | null): number {
  const applied = checkoutCoupons(ctx, checkoutId);
  if (applied.length === 0) return 0;
  return redeemCoupons(ctx, account, { checkout_id: checkoutId, customer_id: customerId, applied });
}

/** Spec 2.7: a checkout is priced with its coupons, and they count once it is paid. */
export const couponCheckoutHooks: CheckoutHooks = {
  price(ctx, account, draft) {
    const codes = draft.coupon_codes ?? (draft.checkoutId ? checkoutCouponCodes(ctx, draft.checkoutId) : []);
    const result = priceWithCoupons(ctx, account, { items: draft.items, currency: draft.currency, customer_id: draft.customer_id, coupon_codes: codes });
    return {
      discount_in_cents: result.discount_in_cents,
      total_in_cents: result.total_in_cents,
      record: (checkoutId) => recordCheckoutCoupons(ctx, account, checkoutId, codes, result),
    };
  },
  afterPay(ctx, account, checkout) {
    redeemCheckoutCoupons(ctx, account, checkout.id, checkout.customer_id);
  },
  // `discount.coupon` (hosted section 3.2): the coupon that took the most off, as GET /coupons/{id}.
  describe(ctx, checkout) {
    const applied = checkoutCoupons(ctx, checkout.id).sort((a, b) => b.amount_off_in_cents - a.amount_off_in_cents)[0];
    const row = applied ? couponsStore(ctx.db).get(applied.coupon_id, isoTime(ctx.clock.now())) : undefined;
    return row ? { coupon: couponView(row) } : {};
  },
};
