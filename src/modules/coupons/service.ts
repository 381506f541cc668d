import type { AppContext } from '../../context.js';
import { tx } from '../../db/database.js';
import { isoTime } from '../../clock.js';
import { invalid, notFound } from '../../errors.js';
import { newId } from '../../ids.js';
import { appendSyncRecord } from '../../outbox/sync-records.js';
import { appendFeedChange } from '../../outbox/feed-changes.js';
import type { Account } from '../../accounts/service.js';
import { couponsStore, type CouponsStore, type CouponRow } from './store.js';
import type { Coupon, CreateCouponInput, UpdateCouponInput } from './schema.js';

export function couponView(r: CouponRow): Coupon {
  return {
    id: r.id,
    account_id: r.account_id,
    name: r.name,
    discount_mode: r.discount_mode,
    display_name: r.display_name,
    amount_off_in_cents: r.amount_off_in_cents,
    percent_off: r.percent_off,
    automatically_applies: r.automatically_applies === 1,
    max_redemptions: r.max_redemptions,
    times_redeemed: r.times_redeemed,
    currency: r.currency,
    duration: r.duration,
    duration_in_payments: r.duration_in_payments,
    minimum_amount_in_cents: r.minimum_amount_in_cents,
    once_per_customer: r.once_per_customer === 1,
    product_ids: JSON.parse(r.product_ids),
    starts_at: r.starts_at,
    expires_at: r.expires_at,
    status: r.status,
    live_mode: r.live_mode === 1,
    created_at: r.created_at,
  };
}

/** The buyer types codes in any case and with stray spaces; one folded form identifies a coupon. */
export const codeKey = (name: string) => name.trim().toUpperCase();
const iso = (t: string | null | undefined) => (t ? new Date(t).toISOString() : null);

export class CouponsService {
  readonly store: CouponsStore;

  constructor(private readonly ctx: AppContext) {
    this.store = couponsStore(ctx.db);
  }

  now(): string {
    return isoTime(this.ctx.clock.now());
  }

  create(account: Account, input: CreateCouponInput): Coupon {
    const errors: Record<string, string[]> = {};
    const add = (f: string, m: string) => (errors[f] ??= []).push(m);
    const amount = input.amount_off_in_cents ?? null;
    const percent = input.percent_off ?? null;
    if ((amount === null) === (percent === null)) add('amount_off_in_cents', 'send exactly one of amount_off_in_cents or percent_off');
    const currency = input.currency ?? (amount !== null ? account.default_currency : null);
    if (percent !== null && input.currency) add('currency', 'only a fixed discount (amount_off_in_cents) has a currency');
    const duration = input.duration ?? 'once';
    const payments = input.duration_in_payments ?? null;
    if (duration === 'repeating' && payments === null) add('duration_in_payments', 'is required when duration is repeating');
    if (duration !== 'repeating' && payments !== null) add('duration_in_payments', 'is only allowed when duration is repeating');
    const mode = input.discount_mode ?? 'code';
    if (mode === 'custom_bins' && !input.display_name) add('display_name', 'is required when discount_mode is custom_bins');
    checkWindow(input.starts_at, input.expires_at, add);
    if (Object.keys(errors).length) throw invalid(errors);
    return tx(this.ctx.db, () => {
      const now = this.now();
      if (this.store.byCode(account.id, codeKey(input.name), now)) throw invalid({ name: 'is already used by another coupon' });
      const id = newId('coup');
      this.store.insert({
        id,
        account_id: account.id,
        live_mode: account.live_mode ? 1 : 0,
        name: input.name.trim(),
        code_key: codeKey(input.name),
        discount_mode: mode,
        display_name: input.display_name ?? null,
        amount_off_in_cents: amount,
        percent_off: percent,
        currency,
        automatically_applies: input.automatically_applies ? 1 : 0,
        max_redemptions: input.max_redemptions ?? null,
        duration,
        duration_in_payments: payments,
        minimum_amount_in_cents: input.minimum_amount_in_cents ?? null,
        once_per_customer: input.once_per_customer ? 1 : 0,
        product_ids: JSON.stringify(input.product_ids ?? []),
        starts_at: iso(input.starts_at),
        expires_at: iso(input.expires_at),
        created_at: now,
        updated_at: now,
      });
      const coupon = couponView(this.store.get(id, now)!);
      appendSyncRecord(this.ctx.db, { kind: 'coupon', accountId: account.id, liveMode: account.live_mode, payload: coupon, createdAt: now });
      this.publish(id);
      return coupon;
    });
  }

  /**
   * At a central, a coupon made or changed (here, or applied from a box's push) reaches the account's
   * boxes as its whole row (feed kind `coupon`). A no-op at a store.
   */
  publish(id: string): void {
    const { status: _status, ...row } = this.store.get(id, this.now())!;
    appendFeedChange(this.ctx.db, {
      kind: 'coupon',
      accountId: row.account_id,
      liveMode: row.live_mode === 1,
      objectId: id,
      payload: { coupon: row },
      createdAt: row.updated_at,
    });
  }

  /**
   * A coupon learnt from the central's feed, by id: inserted, or brought to the central's state when
   * that is not older than this box's; its redemption count rises to the central's (which counts every
   * box). A code another coupon of this box holds is not taken (false; logged by the caller).
   */
  applyCentral(row: Omit<CouponRow, 'status'>): boolean {
    return tx(this.ctx.db, () => {
      const now = this.now();
      const cur = this.store.get(row.id, now);
      const other = row.archived ? undefined : this.store.byCode(row.account_id, row.code_key, now);
      if (other && other.id !== row.id) return false;
      if (!cur) this.store.insert(row);
      if (!cur || row.updated_at >= cur.updated_at) this.store.update(row);
      this.store.raiseRedeemed(row.id, row.times_redeemed);
      return true;
    });
  }

  update(account: Account, id: string, input: UpdateCouponInput): Coupon {
    return tx(this.ctx.db, () => {
      const now = this.now();
      const cur = this.store.get(id, now);
      if (!cur || cur.account_id !== account.id) throw notFound('coupon', id);
      const startsAt = input.starts_at === undefined ? cur.starts_at : iso(input.starts_at);
      const expiresAt = input.expires_at === undefined ? cur.expires_at : iso(input.expires_at);
      const errors: Record<string, string[]> = {};
      checkWindow(startsAt, expiresAt, (f, m) => (errors[f] ??= []).push(m));
      if (Object.keys(errors).length) throw invalid(errors);
      const name = input.name?.trim() ?? cur.name;
      const archived = input.status === undefined ? cur.archived : input.status === 'archived' ? 1 : 0;
      if (archived === 0) {
        const other = this.store.byCode(account.id, codeKey(name), now);
        if (other && other.id !== id) throw invalid({ name: 'is already used by another coupon' });
      }
      this.store.update({
        id,
        name,
        code_key: codeKey(name),
        display_name: input.display_name === undefined ? cur.display_name : input.display_name,
        automatically_applies: input.automatically_applies === undefined ? cur.automatically_applies : input.automatically_applies ? 1 : 0,
        max_redemptions: input.max_redemptions === undefined ? cur.max_redemptions : input.max_redemptions,
        minimum_amount_in_cents: input.minimum_amount_in_cents === undefined ? cur.minimum_amount_in_cents : input.minimum_amount_in_cents,
        once_per_customer: input.once_per_customer === undefined ? cur.once_per_customer : input.once_per_customer ? 1 : 0,
        product_ids: input.product_ids === undefined ? cur.product_ids : JSON.stringify(input.product_ids),
        starts_at: startsAt,
        expires_at: expiresAt,
        archived,
        updated_at: now,
      });
      const coupon = couponView(this.store.get(id, now)!);
      appendSyncRecord(this.ctx.db, { kind: 'coupon', accountId: account.id, liveMode: account.live_mode, payload: coupon, createdAt: now });
      this.publish(id);
      return coupon;
    });
  }

  get(accountIds: string[], liveMode: boolean, id: string): Coupon {
    const row = this.store.get(id, this.now());
    if (!row || !accountIds.includes(row.account_id) || (row.live_mode === 1) !== liveMode) throw notFound('coupon', id);
    return couponView(row);
  }

  list(q: { accountIds: string[]; liveMode: boolean; status: string; limit: number; offset: number }) {
    const { rows, total } = this.store.list({ ids: q.accountIds, live: q.liveMode, status: q.status, now: this.now(), limit: q.limit, offset: q.offset });
    return { rows: rows.map(couponView), total };
  }
}

function checkWindow(startsAt: string | null | undefined, expiresAt: string | null | undefined, add: (f: string, m: string) => void): void {
  if (startsAt && expiresAt && Date.parse(expiresAt) <= Date.parse(startsAt)) add('expires_at', 'must be after starts_at');
}
