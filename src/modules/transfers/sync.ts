import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import type { PushKind } from '../../sync/shared/registry.js';
import { accountsOf } from '../../accounts/service.js';
import { syncedLedgerMoney } from '../ledger/schema.js';
import { hasBalanceTransaction, postBalanceTransaction, type BalanceTransaction } from '../ledger/service.js';
import { pathTo, reviewStep, type PeerTransferStatus, type WithdrawalStatus } from './machine.js';
import { transfersStore, type TransferRow } from './store.js';

/** The `transfer` / `withdrawal` record (`syncPayload`): the row as it is after the change, and the ledger rows that change posted. */
export interface TransferRecord {
  change: string;
  transfer: Omit<TransferRow, 'live_mode'> & { live_mode: boolean };
  balance_transactions: BalanceTransaction[];
}

/** The fields of a `transfer` / `withdrawal` record the central relies on. */
export const TransferPayload = Type.Object({
  change: Type.String(),
  transfer: Type.Object({
    id: Type.String(),
    kind: Type.Union([Type.Literal('peer'), Type.Literal('withdrawal')]),
    status: Type.String(),
    amount_in_cents: Type.Number(),
    currency: Type.String(),
    created_at: Type.String(),
    updated_at: Type.String(),
  }),
  balance_transactions: Type.Array(Type.Object({ id: Type.String(), account_id: Type.String(), amount_in_cents: Type.Number(), fee_in_cents: Type.Number() })),
});

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
    const recipient = accountsOf(ctx).account(row.recipient_account_id);
    if (!recipient || recipient.live_mode !== t.live_mode) return `recipient ${row.recipient_account_id} is unknown at the central`;
    allowed.add(recipient.id);
  }
  const stray = record.balance_transactions.find((b) => !allowed.has(b.account_id));
  if (stray) return `ledger row ${stray.id} names an account outside transfer ${row.id}`;

  if (existing) {
    if (existing.status === row.status) return null;
    if (row.kind === 'peer') {
      const step = row.status === 'succeeded' || row.status === 'cancelled' ? reviewStep(existing.status as PeerTransferStatus, row.status) : null;
      if (!step) return `transfer ${row.id} is ${existing.status} at the central; the store's ${row.status} does not follow`;
    } else {
      const plan = row.status !== 'pending' ? pathTo(existing.status as WithdrawalStatus, row.status as 'in_transit' | 'paid' | 'failed') : null;
      if (plan?.length !== 1) return `withdrawal ${row.id} is ${existing.status} at the central; the store's ${row.status} does not follow`;
    }
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
    recipient_balance_transaction_id: row.recipient_balance_transaction_id,
  });
  return null;
}

/**
 * A peer transfer or a withdrawal step made at the store (`transfer`, `withdrawal`): the row and the
 * ledger rows of that step with the store's ids. A step the central's state no longer allows is
 * refused. Only the creation weighs in the totals (a status step moves no new amount).
 */
function transferPush(kind: string): PushKind<TransferRecord> {
  return {
    payload: TransferPayload,
    malformed: `${kind} record without transfer or balance_transactions`,
    money: (p) => [
      { field: 'transfer.amount_in_cents', amount: p.transfer.amount_in_cents, currency: p.transfer.currency },
      ...p.balance_transactions.flatMap((t, i) => syncedLedgerMoney(`balance_transactions.${i}`, t)),
    ],
    apply: (ctx, record) => applyStoreTransfer(ctx, record.account_id, record.payload),
    movesMoney: true,
    totals: (p) => {
      const t = p.transfer as { currency?: unknown; amount_in_cents?: unknown } | undefined;
      return p.change === 'created' && typeof t?.currency === 'string' && typeof t.amount_in_cents === 'number'
        ? { currency: t.currency, amount_in_cents: t.amount_in_cents }
        : null;
    },
  };
}

export const transferPushKinds = { transfer: transferPush('transfer'), withdrawal: transferPush('withdrawal') };
