import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { ApiError } from '../../errors.js';
import { newId } from '../../ids.js';
import { appendSyncRecord } from '../../outbox/sync-records.js';
import type { Account } from '../../accounts/service.js';
import { getCheckout } from '../checkouts/service.js';
import { couponsStore, type CouponsStore, type CouponRow } from './store.js';
import { codeKey } from './service.js';

/** A checkout before it is stored: what coupons need to know of it. */
export interface CheckoutDraft {
  items: Array<{ name?: string; amount_in_cents: number; quantity?: number; product_id?: string | null; currency?: string }>;
  currency: string;
  customer_id?: string | null;
  /** Codes the buyer or the point of sale typed (any case). */
  coupon_codes?: string[];
  /** Never counted towards a coupon's minimum nor discounted (spec 2.7). */
  shipping_amount_in_cents?: number;
}

export interface AppliedCoupon {
  coupon_id: string;
  name: string;
  display_name: string | null;
  amount_off_in_cents: number;
  automatic: boolean;
}

export interface CouponResult {
  /** Items only, shipping excluded. */
  subtotal_in_cents: number;
  discount_in_cents: number;
  /** subtotal - discount + shipping. */
  total_in_cents: number;
  applied: AppliedCoupon[];
}

type Why = 'not_found' | 'not_active' | 'currency' | 'minimum' | 'products' | 'customer_required' | 'already_redeemed' | 'card_only';

const REASONS: Record<Why, string> = {
  not_found: 'no such coupon',
  not_active: 'is not active (not started, expired, exhausted or archived)',
  currency: 'is a fixed discount in another currency',
  minimum: 'needs a larger purchase of its products',
  products: 'applies to none of these products',
  customer_required: 'can be used once per customer: the checkout needs a customer',
  already_redeemed: 'was already used by this customer',
  card_only: 'applies by the card used at payment, not by code',
};

function lineTotal(i: CheckoutDraft['items'][number]): number {
  return i.amount_in_cents * (i.quantity ?? 1);
}

/** The discount this coupon gives the draft, or why it gives none. */
function evaluate(store: CouponsStore, c: CouponRow, draft: CheckoutDraft): { off: number } | { why: Why } {
  if (c.status !== 'active') return { why: 'not_active' };
  // Bank and BIN coupons depend on the card, which a checkout learns only at payment.
  if (c.discount_mode !== 'code') return { why: 'card_only' };
  if (c.amount_off_in_cents !== null && c.currency !== draft.currency) return { why: 'currency' };
  const products: string[] = JSON.parse(c.product_ids);
  const eligible = products.length === 0 ? draft.items : draft.items.filter((i) => i.product_id && products.includes(i.product_id));
  if (eligible.length === 0) return { why: 'products' };
  const base = eligible.reduce((s, i) => s + lineTotal(i), 0);
  if (c.minimum_amount_in_cents !== null && base < c.minimum_amount_in_cents) return { why: 'minimum' };
  if (c.once_per_customer === 1) {
    if (!draft.customer_id) return { why: 'customer_required' };
    if (store.redeemedBy(c.id, draft.customer_id)) return { why: 'already_redeemed' };
  }
  const off = c.amount_off_in_cents !== null ? c.amount_off_in_cents : Math.round((base * (c.percent_off ?? 0)) / 100);
  return { off: Math.min(off, base) };
}

/**
 * Spec 2.7 applied to a checkout being created: every code the draft names must apply (else 422
 * `coupon_not_applicable` naming each code and why), and every active automatic coupon that fits is
 * added. Discounts are computed on the eligible items (never shipping) and their sum never exceeds
 * the items' subtotal. Reads only: redemptions count when the checkout is paid (`redeemCoupons`).
 */
export function applyCoupons(ctx: AppContext, account: Account, draft: CheckoutDraft): CouponResult {
  const store = couponsStore(ctx.db);
  const now = isoTime(ctx.clock.now());
  const subtotal = draft.items.reduce((s, i) => s + lineTotal(i), 0);
  const shipping = draft.shipping_amount_in_cents ?? 0;
  const picked: Array<{ c: CouponRow; off: number; automatic: boolean }> = [];
  const errors: Record<string, string[]> = {};
  const seen = new Set<string>();
  for (const code of draft.coupon_codes ?? []) {
    const c = store.byCode(account.id, codeKey(code), now);
    if (!c) {
      (errors.coupon_codes ??= []).push(`${code}: ${REASONS.not_found}`);
      continue;
    }
    if (seen.has(c.id)) continue;
    seen.add(c.id);
    const r = evaluate(store, c, draft);
    if ('why' in r) (errors.coupon_codes ??= []).push(`${code}: ${REASONS[r.why]}`);
    else picked.push({ c, off: r.off, automatic: false });
  }
  if (Object.keys(errors).length) throw new ApiError('coupon_not_applicable', { errors });
  for (const c of store.automatic(account.id, now)) {
    if (seen.has(c.id)) continue;
    const r = evaluate(store, c, draft);
    if ('off' in r) picked.push({ c, off: r.off, automatic: true });
  }
  let left = subtotal;
  const applied: AppliedCoupon[] = [];
  for (const p of picked) {
    const off = Math.min(p.off, left);
    left -= off;
    applied.push({ coupon_id: p.c.id, name: p.c.name, display_name: p.c.display_name, amount_off_in_cents: off, automatic: p.automatic });
  }
  const discount = subtotal - left;
  return { subtotal_in_cents: subtotal, discount_in_cents: discount, total_in_cents: left + shipping, applied };
}

/**
 * Counts the coupons of a paid checkout: call it inside the payment's transaction. A repeated
 * settlement of the same checkout counts once. A limit reached between quote and payment does not
 * take back a discount the buyer already paid with; the count may then pass `max_redemptions`.
 */
export function redeemCoupons(
  ctx: AppContext,
  account: Account,
  input: { checkout_id: string; customer_id?: string | null; applied: Array<{ coupon_id: string; amount_off_in_cents: number }> },
): number {
  if (!ctx.db.inTransaction) throw new Error('redeemCoupons() outside the payment transaction');
  const store = couponsStore(ctx.db);
  const now = isoTime(ctx.clock.now());
  let counted = 0;
  for (const a of input.applied) {
    const redemptionId = newId('coupred');
    const fresh = store.redeem({
      id: redemptionId,
      account_id: account.id,
      live_mode: account.live_mode ? 1 : 0,
      coupon_id: a.coupon_id,
      checkout_id: input.checkout_id,
      customer_id: input.customer_id ?? null,
      amount_off_in_cents: a.amount_off_in_cents,
      created_at: now,
    });
    if (!fresh) continue;
    counted++;
    appendSyncRecord(ctx.db, {
      kind: 'coupon_redemption',
      accountId: account.id,
      liveMode: account.live_mode,
      payload: {
        id: redemptionId,
        coupon_id: a.coupon_id,
        checkout_id: input.checkout_id,
        customer_id: input.customer_id ?? null,
        amount_off_in_cents: a.amount_off_in_cents,
        currency: getCheckout(ctx, account, input.checkout_id)?.currency ?? account.default_currency,
        created_at: now,
      },
      createdAt: now,
    });
  }
  return counted;
}
