import type { FeedApplier } from '../../sync/shared/registry.js';
import { accountsOf } from '../../accounts/service.js';
import { applyCentralBooking, type FeedBooking } from './feed-apply.js';

// A booking made or changed at the central (online) or at another box of the account: held here
// with the central's id and state, and the time it holds, so the counter sees those slots taken.
// No events (the central emitted them), no sync record.
export const bookingFeed: FeedApplier = (ctx, change) => {
  const p = change.payload as unknown as FeedBooking;
  if (typeof p.booking?.id !== 'string' || !Array.isArray(p.occupancy)) return;
  const account = accountsOf(ctx).account(p.booking.account_id);
  if (!account || account.live_mode !== (p.booking.live_mode === 1)) return;
  applyCentralBooking(ctx, p);
};
