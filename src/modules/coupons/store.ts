import type { Db } from '../../db/database.js';
import { perDb } from '../../db/per-db.js';

export interface CouponRow {
  id: string;
  account_id: string;
  live_mode: number;
  name: string;
  code_key: string;
  discount_mode: 'code' | 'bank' | 'custom_bins';
  display_name: string | null;
  amount_off_in_cents: number | null;
  percent_off: number | null;
  currency: string | null;
  automatically_applies: number;
  max_redemptions: number | null;
  times_redeemed: number;
  duration: 'once' | 'repeating' | 'forever';
  duration_in_payments: number | null;
  minimum_amount_in_cents: number | null;
  once_per_customer: number;
  product_ids: string;
  starts_at: string | null;
  expires_at: string | null;
  archived: number;
  created_at: string;
  updated_at: string;
  /** Computed against the clock by every read (see STATUS). */
  status: string;
}

export type NewCouponRow = Omit<CouponRow, 'status' | 'times_redeemed' | 'archived'>;

/** Status is derived, never stored, so a coupon expires by the clock without a job rewriting rows. */
const STATUS = `CASE
  WHEN archived = 1 THEN 'archived'
  WHEN starts_at IS NOT NULL AND starts_at > @now THEN 'scheduled'
  WHEN expires_at IS NOT NULL AND expires_at <= @now THEN 'expired'
  WHEN max_redemptions IS NOT NULL AND times_redeemed >= max_redemptions THEN 'exhausted'
  ELSE 'active' END`;

/** All SQL of coupons and their redemptions. */
export class CouponsStore {
  private readonly s;

  constructor(db: Db) {
    const scoped = `SELECT * FROM (SELECT *, rowid AS seq, ${STATUS} AS status FROM coupons
        WHERE account_id IN (SELECT value FROM json_each(@ids)) AND live_mode = @live)
      WHERE (@status = 'all' OR status = @status)`;
    this.s = {
      insert: db.prepare(
        `INSERT INTO coupons (id, account_id, live_mode, name, code_key, discount_mode, display_name, amount_off_in_cents,
           percent_off, currency, automatically_applies, max_redemptions, duration, duration_in_payments,
           minimum_amount_in_cents, once_per_customer, product_ids, starts_at, expires_at, archived, created_at, updated_at)
         VALUES (@id, @account_id, @live_mode, @name, @code_key, @discount_mode, @display_name, @amount_off_in_cents,
           @percent_off, @currency, @automatically_applies, @max_redemptions, @duration, @duration_in_payments,
           @minimum_amount_in_cents, @once_per_customer, @product_ids, @starts_at, @expires_at, @archived, @created_at, @updated_at)`,
      ),
      update: db.prepare(
        `UPDATE coupons SET name = @name, code_key = @code_key, display_name = @display_name,
           automatically_applies = @automatically_applies, max_redemptions = @max_redemptions,
           minimum_amount_in_cents = @minimum_amount_in_cents, once_per_customer = @once_per_customer,
           product_ids = @product_ids, starts_at = @starts_at, expires_at = @expires_at, archived = @archived,
           updated_at = @updated_at
         WHERE id = @id`,
      ),
      get: db.prepare(`SELECT *, ${STATUS} AS status FROM coupons WHERE id = @id`),
      byCode: db.prepare(`SELECT *, ${STATUS} AS status FROM coupons WHERE account_id = @account AND code_key = @code AND archived = 0`),
      // Read by every checkout made. `+@account`: compiled once, not again on every run (decision 0308,
      // src/modules/terminals/commands/store.ts).
      automatic: db.prepare(
        `SELECT *, ${STATUS} AS status FROM coupons
         WHERE account_id = +@account AND automatically_applies = 1 AND archived = 0 ORDER BY created_at, rowid`,
      ),
      list: db.prepare(`${scoped} ORDER BY created_at DESC, seq DESC LIMIT @limit OFFSET @offset`),
      count: db.prepare(`SELECT count(*) AS n FROM (${scoped})`),
      redeemedBy: db.prepare('SELECT 1 FROM coupon_redemptions WHERE coupon_id = ? AND customer_id = ? LIMIT 1'),
      insertRedemption: db.prepare(
        `INSERT INTO coupon_redemptions (id, account_id, live_mode, coupon_id, checkout_id, customer_id, amount_off_in_cents, created_at)
         VALUES (@id, @account_id, @live_mode, @coupon_id, @checkout_id, @customer_id, @amount_off_in_cents, @created_at)
         ON CONFLICT (coupon_id, checkout_id) DO NOTHING`,
      ),
      bump: db.prepare('UPDATE coupons SET times_redeemed = times_redeemed + 1 WHERE id = ?'),
      redemption: db.prepare('SELECT id FROM coupon_redemptions WHERE id = ?'),
      raiseRedeemed: db.prepare('UPDATE coupons SET times_redeemed = max(times_redeemed, ?) WHERE id = ?'),
    };
  }

  insert(row: NewCouponRow): void {
    this.s.insert.run({ ...row, archived: 0 });
  }

  /** A coupon made elsewhere (a store's, at its central), archived or not. */
  insertWithState(row: NewCouponRow & { archived: number }): void {
    this.s.insert.run(row);
  }

  hasRedemption(id: string): boolean {
    return this.s.redemption.get(id) !== undefined;
  }

  update(
    row: Omit<
      CouponRow,
      | 'status'
      | 'times_redeemed'
      | 'account_id'
      | 'live_mode'
      | 'discount_mode'
      | 'amount_off_in_cents'
      | 'percent_off'
      | 'currency'
      | 'duration'
      | 'duration_in_payments'
      | 'created_at'
    >,
  ): void {
    this.s.update.run(row);
  }

  get(id: string, now: string): CouponRow | undefined {
    return this.s.get.get({ id, now }) as CouponRow | undefined;
  }

  byCode(accountId: string, code: string, now: string): CouponRow | undefined {
    return this.s.byCode.get({ account: accountId, code, now }) as CouponRow | undefined;
  }

  automatic(accountId: string, now: string): CouponRow[] {
    return this.s.automatic.all({ account: accountId, now }) as CouponRow[];
  }

  list(q: { ids: string[]; live: boolean; status: string; now: string; limit: number; offset: number }): { rows: CouponRow[]; total: number } {
    const params = { ids: JSON.stringify(q.ids), live: q.live ? 1 : 0, status: q.status, now: q.now };
    const rows = this.s.list.all({ ...params, limit: q.limit, offset: q.offset }) as CouponRow[];
    const { n } = this.s.count.get(params) as { n: number };
    return { rows, total: n };
  }

  redeemedBy(couponId: string, customerId: string): boolean {
    return this.s.redeemedBy.get(couponId, customerId) !== undefined;
  }

  /** The central counts every box's redemptions: a box takes its count when it is higher. */
  raiseRedeemed(id: string, n: number): void {
    this.s.raiseRedeemed.run(n, id);
  }

  /** True when this checkout's redemption is new (a repeated settlement counts once). */
  redeem(row: {
    id: string;
    account_id: string;
    live_mode: number;
    coupon_id: string;
    checkout_id: string;
    customer_id: string | null;
    amount_off_in_cents: number;
    created_at: string;
  }): boolean {
    const inserted = this.s.insertRedemption.run(row).changes === 1;
    if (inserted) this.s.bump.run(row.coupon_id);
    return inserted;
  }
}

/** The coupons store of a database, its statements prepared once (checkout pricing calls it on every checkout). */
export const couponsStore = perDb((db) => new CouponsStore(db));
