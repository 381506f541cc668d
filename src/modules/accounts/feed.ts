import type { FeedApplier } from '../../sync/shared/registry.js';
import { accountsOf, type Account } from '../../accounts/service.js';

// An account made or changed at the central (a connected child and its sandbox made after this box
// joined, new settings): made here with the central's ids, or its settings and tax details updated,
// so keys made for it (the next `api_key` changes) work at the box. No events: the central emitted
// the account's own (`account_connection.create` to its platform).
export const accountFeed: FeedApplier = (ctx, change) => {
  const p = change.payload as { account?: Account; sandbox?: Account };
  if (!p.account?.id) return;
  const made = accountsOf(ctx).applyCentralAccount(p.account, p.sandbox);
  if (!made) ctx.log.warn({ account_id: p.account.id }, 'sync: an account from the central cannot be made at this box; skipped');
};
