import type { AppContext } from '../../context.js';
import { AccountsService } from '../../accounts/service.js';
import { hasBalanceTransaction, postBalanceTransaction, type BalanceTransaction } from '../ledger/service.js';
import { pathTo, type WithdrawalStatus } from './machine.js';
import { transfersStore, type TransferRow } from './store.js';

/** The `transfer` / `withdrawal` record (`syncPayload`): the row as it is after the change, and the ledger rows that change posted. */
export interface TransferRecord {
  change: string;
  transfer: Omit<TransferRow, 'live_mode'> & { live_mode: boolean };
  balance_transactions: BalanceTransaction[];
}

export function isTransferRecord(p: Record<string, unknown>): p is Record<string, unknown> & TransferRecord {
  const t = p.transfer as Partial<TransferRecord['transfer']> | undefined;
  return (
    typeof p.change === 'string' &&
    typeof t?.id === 'string' &&
    (t.kind === 'peer' || t.kind === 'withdrawal') &&
    typeof t.status === 'string' &&
    typeof t.amount_in_cents === 'number' &&
    typeof t.currency === 'string' &&
    typeof t.created_at === 'string' &&
    typeof t.updated_at === 'string' &&
    Array.isArray(p.balance_transactions) &&
    (p.balance_transactions as Array<Partial<BalanceTransaction>>).every(
      (b) => typeof b?.id === 'string' && typeof b.account_id === 'string' && typeof b.amount_in_cents === 'number' && typeof b.fee_in_cents === 'number',
    )
  );
}

/**
 * A peer transfer or a withdrawal step made at a store, applied at the central (sync): the transfer
 * row with the store's id and the ledger rows that step posted (the sender's debit and recipient's
 * credit, a withdrawal's payout and, when it failed, its return), each under the store's id, posted
 * once. The central keeps its own running balances and does not re-check funds: the money moved at
 * the store. A withdrawal step the central's own state no longer allows (the central paid or failed
 * it meanwhile) is refused, nothing written. Returns the refusal reason, or null when applied.
 */
export function applyStoreTransfer(ctx: AppContext, accountId: string, record: TransferRecord): string | null {
  const t = record.transfer;
  const row: TransferRow = { ...t, account_id: accountId, live_mode: t.live_mode ? 1 : 0 };
  const store = transfersStore(ctx.db);
  const existing = store.get(row.id, t.live_mode);
  if (existing && existing.account_id !== accountId) return `transfer ${row.id} belongs to another account at the central`;

  // Ledger rows may only touch the sender and, for a peer transfer, its recipient.
  const allowed = new Set([accountId]);
  if (row.kind === 'peer' && row.recipient_account_id) {
    const recipient = new AccountsService(ctx.db, ctx.clock).account(row.recipient_account_id);
    if (!recipient || recipient.live_mode !== t.live_mode) return `recipient ${row.recipient_account_id} is unknown at the central`;
    allowed.add(recipient.id);
  }
  const stray = record.balance_transactions.find((b) => !allowed.has(b.account_id));
  if (stray) return `ledger row ${stray.id} names an account outside transfer ${row.id}`;

  if (existing) {
    if (existing.status === row.status) return null;
    const plan = row.kind === 'withdrawal' && row.status !== 'pending' ? pathTo(existing.status as WithdrawalStatus, row.status as 'in_transit' | 'paid' | 'failed') : null;
    if (!plan || plan.length !== 1) return `withdrawal ${row.id} is ${existing.status} at the central; the store's ${row.status} does not follow`;
  }
  for (const b of record.balance_transactions) {
    if (hasBalanceTransaction(ctx, b.id)) continue;
    postBalanceTransaction(ctx, {
      id: b.id,
      createdAt: b.created_at,
      accountId: b.account_id,
      liveMode: t.live_mode,
      type: b.type,
      amountInCents: b.amount_in_cents,
      feeInCents: b.fee_in_cents,
      feeDetails: b.fee_details,
      currency: b.currency,
      sourceId: b.source_id,
      sourceType: b.source_type,
      description: b.description,
    });
  }
  if (!existing) {
    store.insert(row);
    return null;
  }
  store.setStatus({
    id: row.id,
    from: existing.status,
    status: row.status,
    at: row.updated_at,
    failure_reason: row.failure_reason,
    return_balance_transaction_id: row.return_balance_transaction_id,
  });
  return null;
}
