import type { FeedApplier } from '../../sync/shared/registry.js';
import { accountsOf } from '../../accounts/service.js';
import { CouponsService } from './service.js';
import type { CouponRow } from './store.js';

// A coupon made or changed at the central (or at another box of the account): upserted here by id,
// so the counter accepts its code. No events, no sync record.
export const couponFeed: FeedApplier = (ctx, change) => {
  const row = (change.payload as { coupon?: Omit<CouponRow, 'status'> }).coupon;
  if (typeof row?.id !== 'string') return;
  const account = accountsOf(ctx).account(row.account_id);
  if (!account || account.live_mode !== (row.live_mode === 1)) return;
  if (!new CouponsService(ctx).applyCentral(row)) {
    ctx.log.warn({ coupon_id: row.id, code: row.code_key }, 'sync: a coupon of the central uses a code a coupon of this box holds; skipped');
  }
};
