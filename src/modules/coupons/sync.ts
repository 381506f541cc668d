import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import type { MoneyField, PushKind, SyncOrigin } from '../../sync/shared/registry.js';
import { checkoutForPage } from '../checkouts/service.js';
import { ownerRefusal, payloadTimeRefusal, type CheckRefusal, type CheckedRecord } from '../../sync/shared/record-checks.js';
import { isoTime } from '../../clock.js';
import type { Coupon } from './schema.js';
import { CouponsService, codeKey } from './service.js';
import { couponsStore } from './store.js';

/** The fields of a `coupon` record (the coupon as the API answers it, after a creation or an update) the central relies on. */
export const CouponPayload = Type.Object({
  id: Type.String(),
  name: Type.String(),
  // The table's own values: anything else would stop the applier at a constraint, not at a check.
  discount_mode: Type.Union([Type.Literal('code'), Type.Literal('bank'), Type.Literal('custom_bins')]),
  duration: Type.Union([Type.Literal('once'), Type.Literal('repeating'), Type.Literal('forever')]),
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

/**
 * What the central's state must allow for a pushed coupon (issue 32, at projection): a coupon the
 * central holds under that id is the record's account's, and the coupon's creation is neither after
 * its record nor before the store. What it takes off is checked at receipt (`money`), as the API does.
 */
function checkStoreCoupon(ctx: AppContext, rec: CheckedRecord & { payload: Coupon }, origin: SyncOrigin): CheckRefusal {
  if (origin.restoring) return null;
  const held = couponsStore(ctx.db).get(rec.payload.id, isoTime(ctx.clock.now()));
  if (held) return ownerRefusal(rec, held, 'payload.id', `coupon ${held.id}`);
  return payloadTimeRefusal(ctx, rec, origin, 'payload.created_at', rec.payload.created_at);
}

/**
 * What the central's state must allow for a pushed redemption: its coupon exists under the
 * record's account and environment, in the redemption's currency when the coupon takes an amount
 * off; its checkout, when the central holds it, is the account's; its time is neither after its
 * record nor before the store. A redemption the central holds already passes (counted once).
 */
function checkStoreRedemption(ctx: AppContext, rec: CheckedRecord & { id: string; payload: RedemptionRecord }, origin: SyncOrigin): CheckRefusal {
  if (origin.restoring) return null;
  const r = rec.payload;
  const store = couponsStore(ctx.db);
  if (store.hasRedemption(r.id ?? `coupred_${rec.id}`)) return null;
  const coupon = store.get(r.coupon_id, isoTime(ctx.clock.now()));
  if (!coupon || coupon.account_id !== rec.account_id || (coupon.live_mode === 1) !== rec.live_mode) {
    return {
      code: 'unknown_reference',
      field: 'payload.coupon_id',
      reason: `coupon ${r.coupon_id} is not a coupon of account ${rec.account_id} at the central`,
    };
  }
  if (coupon.currency && r.currency !== undefined && r.currency !== coupon.currency) {
    return { code: 'invalid_currency', field: 'payload.currency', reason: `redemption in ${r.currency} of coupon ${coupon.id} in ${coupon.currency}` };
  }
  const checkout = checkoutForPage(ctx, r.checkout_id);
  const foreign = checkout && ownerRefusal(rec, checkout, 'payload.checkout_id', `checkout ${checkout.id}`);
  if (foreign) return foreign;
  return payloadTimeRefusal(ctx, rec, origin, 'payload.created_at', r.created_at);
}

/** A coupon's amounts as the API checks them: what it takes off (in its currency) and its minimum. */
function couponMoney(p: Coupon): MoneyField[] {
  const m: MoneyField[] = [];
  if (p.amount_off_in_cents !== null && p.amount_off_in_cents !== undefined)
    m.push({ field: 'amount_off_in_cents', amount: p.amount_off_in_cents, currency: p.currency ?? undefined });
  if (p.minimum_amount_in_cents !== null && p.minimum_amount_in_cents !== undefined)
    m.push({ field: 'minimum_amount_in_cents', amount: p.minimum_amount_in_cents, zero: true });
  return m;
}

/** Coupons made at the store keep their ids (`coupon`). Counted only. */
export const couponPush: PushKind<Coupon> = {
  payload: CouponPayload,
  // A coupon takes an amount or a percentage off, never both.
  consistent: (p) => (typeof p.amount_off_in_cents === 'number') !== (typeof p.percent_off === 'number'),
  malformed: 'coupon record without id, name, discount or status',
  money: couponMoney,
  check: (ctx, record, origin) => checkStoreCoupon(ctx, record, origin),
  apply: (ctx, record) => applyStoreCoupon(ctx, record.account_id, record.live_mode, record.payload, record.created_at),
  totals: () => null,
};

/** A redemption (`coupon_redemption`) counts once by its id, even past the central's limit (the sale happened), and weighs its discount. */
export const redemptionPush: PushKind<RedemptionRecord> = {
  payload: RedemptionPayload,
  malformed: 'coupon_redemption record without coupon_id, checkout_id or amount_off_in_cents',
  // What a sale took off: 0 for a percentage of nothing; its currency, when carried, among the account's.
  money: (p) => [{ field: 'amount_off_in_cents', amount: p.amount_off_in_cents, currency: p.currency, zero: true }],
  check: (ctx, record, origin) => checkStoreRedemption(ctx, record, origin),
  apply: (ctx, record) => applyStoreRedemption(ctx, record.account_id, record.live_mode, record.payload, record.id, record.created_at),
  totals: (p) =>
    typeof p.currency === 'string' && typeof p.amount_off_in_cents === 'number' ? { currency: p.currency, amount_in_cents: p.amount_off_in_cents } : null,
};
