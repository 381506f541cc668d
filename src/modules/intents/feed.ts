import type { FeedApplier } from '../../sync/shared/registry.js';
import { accountsOf } from '../../accounts/service.js';
import { applyCentralIntent, type FeedIntent } from './service.js';

// An intent made or changed at the central (an online payment, a sale at the central): held here
// with the central's ids, so `GET /intents/:id` answers at the box too. No events (the central's).
export const intentFeed: FeedApplier = (ctx, change) => {
  const intent = change.payload as unknown as FeedIntent;
  if (typeof intent.id !== 'string') return;
  const account = accountsOf(ctx).account(intent.account_id);
  if (!account || account.live_mode !== intent.live_mode) return;
  applyCentralIntent(ctx, intent);
};
