import { UNIFIED_API_VERSION } from '../../events/formats.js';
import type { SwapView } from './schema.js';
import type { SwapRow } from './store.js';

export function swapView(row: SwapRow): SwapView {
  return {
    id: row.id,
    object: 'swap',
    status: row.status,
    amount_in_cents: row.amount_in_cents,
    currency: row.from_currency,
    to_amount_in_cents: row.to_amount_in_cents,
    to_currency: row.to_currency,
    network: row.network,
    transaction_hash: row.transaction_hash,
    failure_reason: row.failure_reason,
    balance_transaction_id: row.balance_transaction_id,
    to_balance_transaction_id: row.to_balance_transaction_id,
    return_balance_transaction_id: row.return_balance_transaction_id,
    account_id: row.account_id,
    live_mode: row.live_mode === 1,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/**
 * The swap as money that left a balance, in the unified transfer form of `GET /transfers/{id}`
 * (spec 6.2: swap events carry `transfer`), with `kind: "swap"`: the same keys as a peer transfer
 * or a withdrawal (docs/transfers.md), the source side (debit row, return row when it failed).
 */
export function swapTransfer(row: SwapRow): Record<string, unknown> {
  return {
    id: row.id,
    object: 'transfer',
    kind: 'swap',
    direction: 'outgoing',
    status: row.status,
    amount_in_cents: row.amount_in_cents,
    currency: row.from_currency,
    account_id: row.account_id,
    sender_id: row.account_id,
    recipient_id: null,
    bank_account: null,
    note: null,
    balance_transaction_id: row.balance_transaction_id,
    return_balance_transaction_id: row.return_balance_transaction_id,
    failure_reason: row.failure_reason,
    live_mode: row.live_mode === 1,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** `swap.create` and `swap.update`: the swap, the status it left (null on create), and `transfer`. */
export function swapEventPayload(row: SwapRow, type: 'swap.create' | 'swap.update', previousStatus: string | null): Record<string, unknown> {
  return {
    ...swapView(row),
    event_type: type,
    api_version: UNIFIED_API_VERSION,
    previous_status: previousStatus,
    transfer: swapTransfer(row),
  };
}
