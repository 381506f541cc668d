import type { FeedApplier } from '../../../sync/shared/registry.js';
import { accountsOf } from '../../../accounts/service.js';
import { applyCentralClassSession, type FeedClassSession } from './service.js';

// A class session scheduled or cancelled at the central: held here with the central's id, and the
// staff and resource time it holds. No events.
export const classSessionFeed: FeedApplier = (ctx, change) => {
  const p = change.payload as unknown as FeedClassSession;
  if (typeof p.session?.id !== 'string' || !Array.isArray(p.occupancy)) return;
  const account = accountsOf(ctx).account(p.session.account_id);
  if (!account || account.live_mode !== (p.session.live_mode === 1)) return;
  applyCentralClassSession(ctx, p);
};
