import type { FeedApplier } from '../../sync/shared/registry.js';
import { accountsOf } from '../../accounts/service.js';
import { hasBalanceTransaction, postBalanceTransaction, type BalanceTransaction } from './service.js';

/**
 * A ledger row the central holds for an account of this box (a payment it took online, a payout, a
 * fee adjustment, a row another box of the account pushed): posted here once, by id, with the
 * central's id, amounts, fee and time. Ledger rows are immutable, so "the newer state" is the row
 * itself: a row already here is left as it is. `balance_after_in_cents` is this box's running
 * balance (its rows in the order it learnt them), as the central keeps its own: the two agree on the
 * balance once both hold the same rows, not row by row. No events: the central emitted them.
 */
export const balanceTransactionFeed: FeedApplier = (ctx, change) => {
  const t = change.payload as unknown as BalanceTransaction;
  if (typeof t.id !== 'string' || hasBalanceTransaction(ctx, t.id)) return;
  const account = accountsOf(ctx).account(t.account_id);
  if (!account || account.live_mode !== t.live_mode) return; // an account this box does not serve
  postBalanceTransaction(ctx, {
    id: t.id,
    createdAt: t.created_at,
    accountId: t.account_id,
    liveMode: t.live_mode,
    type: t.type,
    amountInCents: t.amount_in_cents,
    feeInCents: t.fee_in_cents,
    feeDetails: t.fee_details,
    currency: t.currency,
    sourceId: t.source_id,
    sourceType: t.source_type,
    description: t.description,
  });
};
