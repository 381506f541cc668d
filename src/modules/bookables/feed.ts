import type { FeedApplier } from '../../sync/shared/registry.js';
import { accountsOf } from '../../accounts/service.js';
import { applyCentralBookable, type BookableType } from './service.js';
import type { ResourceRow, ServiceRow, StaffRow } from './store.js';

// A service, staff member or resource made or changed at the central: upserted here with the
// central's ids (a resource keeps the central's calendar token, so its .ics URL is the same at both).
// No events.
export const bookableFeed: FeedApplier = (ctx, change) => {
  const p = change.payload as { type?: BookableType; row?: ServiceRow | StaffRow | ResourceRow };
  if (!p.row?.id || (p.type !== 'service' && p.type !== 'staff_member' && p.type !== 'resource')) return;
  const account = accountsOf(ctx).account(p.row.account_id);
  if (!account || account.live_mode !== (p.row.live_mode === 1)) return;
  applyCentralBookable(ctx, p.type, p.row);
};
