import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import type { PushKind } from '../../sync/shared/registry.js';
import { isoTime } from '../../clock.js';
import type { Coupon } from './schema.js';
import { CouponsService, codeKey } from './service.js';
import { couponsStore } from './store.js';

/** The fields of a `coupon` record (the coupon as the API answers it, after a creation or an update) the central relies on. */
export const CouponPayload = Type.Object({
  id: Type.String(),
  name: Type.String(),
  discount_mode: Type.String(),
  duration: Type.String(),
  status: Type.String(),
  created_at: Type.String(),
  product_ids: Type.Array(Type.Unknown()),
});

/**
 * A coupon created or changed at a store, applied at the central (sync): written with the store's
 * id and times when absent, else updated when the record is not older than the central's state
 * (`updatedAt`: the record's time, which is the coupon's `updated_at` at the store). The redemption
 * count is not copied: each `coupon_redemption` record counts once. A code already used by another
 * active coupon at the central keeps the central's: the store's coupon is written archived (its
 * redemptions still count against it). Returns a refusal, or null.
 */
export function applyStoreCoupon(ctx: AppContext, accountId: string, liveMode: boolean, c: Coupon, updatedAt: string): string | null {
  const store = couponsStore(ctx.db);
  const now = isoTime(ctx.clock.now());
  const existing = store.get(c.id, now);
  if (existing && (existing.account_id !== accountId || (existing.live_mode === 1) !== liveMode))
    return `coupon ${c.id} belongs to another account at the central`;
  if (existing && existing.updated_at > updatedAt) return null;
  const key = codeKey(c.name);
  const other = store.byCode(accountId, key, now);
  const archived = c.status === 'archived' || (other !== undefined && other.id !== c.id) ? 1 : 0;
  const row = {
    id: c.id,
    name: c.name,
    code_key: key,
    display_name: c.display_name,
    automatically_applies: c.automatically_applies ? 1 : 0,
    max_redemptions: c.max_redemptions,
    minimum_amount_in_cents: c.minimum_amount_in_cents,
    once_per_customer: c.once_per_customer ? 1 : 0,
    product_ids: JSON.stringify(c.product_ids),
    starts_at: c.starts_at,
    expires_at: c.expires_at,
    archived,
    updated_at: updatedAt,
  };
  if (existing) store.update(row);
  else {
    store.insertWithState({
      ...row,
      account_id: accountId,
      live_mode: liveMode ? 1 : 0,
      discount_mode: c.discount_mode,
      amount_off_in_cents: c.amount_off_in_cents,
      percent_off: c.percent_off,
      currency: c.currency,
      duration: c.duration,
      duration_in_payments: c.duration_in_payments,
      created_at: c.created_at,
    });
  }
  // The account's other boxes learn it through the feed (tagged with this store's origin: not echoed).
  new CouponsService(ctx).publish(c.id);
  return null;
}

/** The `coupon_redemption` record `redeemCoupons` appends when a checkout carrying coupons is paid. */
export interface RedemptionRecord {
  id?: string;
  coupon_id: string;
  checkout_id: string;
  customer_id: string | null;
  amount_off_in_cents: number;
  currency?: string;
  created_at?: string;
}

/** The fields of a `coupon_redemption` record the central relies on. */
export const RedemptionPayload = Type.Object({ coupon_id: Type.String(), checkout_id: Type.String(), amount_off_in_cents: Type.Number() });

/**
 * A redemption counted at a store, applied at the central (sync): written once by its id (and once
 * per coupon and checkout), bumping the coupon's count. It is recorded even when the central's count
 * has reached `max_redemptions`: the sale happened with the discount, and money facts are not
 * refused; the coupon then shows more redemptions than its limit (status `exhausted`). Records of
 * an older posd carry no id: the record's id stands in. Returns a refusal, or null.
 */
export function applyStoreRedemption(
  ctx: AppContext,
  accountId: string,
  liveMode: boolean,
  r: RedemptionRecord,
  recordId: string,
  recordAt: string,
): string | null {
  const store = couponsStore(ctx.db);
  const coupon = store.get(r.coupon_id, isoTime(ctx.clock.now()));
  if (!coupon || coupon.account_id !== accountId) return `coupon ${r.coupon_id} is unknown at the central for account ${accountId}`;
  const id = r.id ?? `coupred_${recordId}`;
  if (store.hasRedemption(id)) return null;
  store.redeem({
    id,
    account_id: accountId,
    live_mode: liveMode ? 1 : 0,
    coupon_id: r.coupon_id,
    checkout_id: r.checkout_id,
    customer_id: r.customer_id,
    amount_off_in_cents: r.amount_off_in_cents,
    created_at: r.created_at ?? recordAt,
  });
  return null;
}

/** Coupons made at the store keep their ids (`coupon`). Counted only. */
export const couponPush: PushKind<Coupon> = {
  payload: CouponPayload,
  // A coupon takes an amount or a percentage off, never both.
  consistent: (p) => (typeof p.amount_off_in_cents === 'number') !== (typeof p.percent_off === 'number'),
  malformed: 'coupon record without id, name, discount or status',
  apply: (ctx, record) => applyStoreCoupon(ctx, record.account_id, record.live_mode, record.payload, record.created_at),
  totals: () => null,
};

/** A redemption (`coupon_redemption`) counts once by its id, even past the central's limit (the sale happened), and weighs its discount. */
export const redemptionPush: PushKind<RedemptionRecord> = {
  payload: RedemptionPayload,
  malformed: 'coupon_redemption record without coupon_id, checkout_id or amount_off_in_cents',
  apply: (ctx, record) => applyStoreRedemption(ctx, record.account_id, record.live_mode, record.payload, record.id, record.created_at),
  totals: (p) =>
    typeof p.currency === 'string' && typeof p.amount_off_in_cents === 'number' ? { currency: p.currency, amount_in_cents: p.amount_off_in_cents } : null,
};
