import type { AppContext } from '../../context.js';
import { UNIFIED_API_VERSION } from '../../events/formats.js';
import { bankAccountById, bankAccountView } from '../bank-accounts/service.js';
import type { BankAccountView } from '../bank-accounts/schema.js';
import type { TransferRow } from './store.js';
import { accountsOf } from '../../accounts/service.js';
import type { TransferView, WithdrawalView } from './schema.js';
import type { WithdrawalStatus } from './machine.js';

/** `api_version` of these events: they belong to the current family, whose date they share (spec 9, docs/events.md). */
const TRANSFER_EVENTS_API_VERSION = UNIFIED_API_VERSION;

type Bank = BankAccountView | null;

export function bankAccountOf(ctx: AppContext, row: TransferRow): Bank {
  if (!row.bank_account_id) return null;
  const bank = bankAccountById(ctx, row.bank_account_id, row.live_mode === 1);
  return bank ? bankAccountView(bank) : null;
}

/**
 * The unified transfer form, from the side of `viewerIds`: the sender sees an outgoing transfer and
 * its debit row, the recipient an incoming one and its credit row.
 */
export function transferView(ctx: AppContext, row: TransferRow, viewerIds: readonly string[], names = accountNames(ctx)): TransferView {
  return transferViewOf(row, viewerIds, bankAccountOf(ctx, row), names);
}

/** An account's name for a transfer's `sender`/`recipient` (null when this box does not know it). */
export type AccountNames = (accountId: string) => string | null;
/**
 * Names read from the accounts table, each once per function made, after those of `known`: a new
 * transfer's two accounts are at hand, and its two events and its answer name them six times
 * (decision 0246).
 */
export function accountNames(ctx: AppContext, known: ReadonlyArray<{ id: string; name: string }> = []): AccountNames {
  const names = new Map<string, string | null>(known.map((a) => [a.id, a.name]));
  return (id) => {
    let name = names.get(id);
    if (name === undefined) names.set(id, (name = accountsOf(ctx).account(id)?.name ?? null));
    return name;
  };
}

/**
 * The hosted service's name of a peer transfer that reached its recipient is `completed` (hosted
 * section 12); posd's machine calls that state `succeeded` (docs/compatibility.md). Other states as stored.
 */
export function answeredStatus(row: Pick<TransferRow, 'kind' | 'status'>): TransferView['status'] {
  return row.kind === 'peer' && row.status === 'succeeded' ? 'completed' : row.status;
}

/** `transferView` with its bank account given: pure, for the events' builders and their examples. */
export function transferViewOf(row: TransferRow, viewerIds: readonly string[], bank: Bank, names: AccountNames = () => null): TransferView {
  const incoming = row.kind === 'peer' && !viewerIds.includes(row.account_id) && viewerIds.includes(row.recipient_account_id!);
  return {
    id: row.id,
    object: 'transfer',
    kind: row.kind,
    direction: incoming ? 'incoming' : 'outgoing',
    status: answeredStatus(row),
    // Hosted section 12: who sent and who received, as objects; a withdrawal's recipient is its bank account.
    sender: { id: row.account_id, name: names(row.account_id), type: 'account' },
    recipient: row.recipient_account_id
      ? { id: row.recipient_account_id, name: names(row.recipient_account_id), type: 'account' }
      : row.bank_account_id
        ? { id: row.bank_account_id, name: bank?.holder_name ?? null, type: 'bank_account' }
        : null,
    amount_in_cents: row.amount_in_cents,
    currency: row.currency,
    account_id: incoming ? row.recipient_account_id! : row.account_id,
    sender_id: row.account_id,
    recipient_id: row.recipient_account_id,
    bank_account: bank,
    note: row.note,
    balance_transaction_id: incoming ? row.recipient_balance_transaction_id! : row.balance_transaction_id,
    return_balance_transaction_id: row.return_balance_transaction_id,
    failure_reason: row.failure_reason,
    live_mode: row.live_mode === 1,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export function withdrawalView(ctx: AppContext, row: TransferRow): WithdrawalView {
  return withdrawalViewOf(row, bankAccountOf(ctx, row));
}

function withdrawalViewOf(row: TransferRow, bank: Bank): WithdrawalView {
  return {
    id: row.id,
    object: 'withdrawal',
    account_id: row.account_id,
    amount_in_cents: row.amount_in_cents,
    currency: row.currency,
    status: row.status as WithdrawalStatus,
    bank_account_id: row.bank_account_id!,
    bank_account: bank,
    balance_transaction_id: row.balance_transaction_id,
    return_balance_transaction_id: row.return_balance_transaction_id,
    failure_reason: row.failure_reason,
    live_mode: row.live_mode === 1,
    created_at: row.created_at,
    updated_at: row.updated_at,
    in_transit_at: row.in_transit_at,
    paid_at: row.paid_at,
    failed_at: row.failed_at,
  };
}

/** The payload of `withdrawal.create` / `withdrawal.update`: the withdrawal plus its unified transfer. */
export function withdrawalEventPayload(row: TransferRow, bank: Bank, eventType: string, previousStatus: string | null, names?: AccountNames) {
  return {
    event_type: eventType,
    api_version: TRANSFER_EVENTS_API_VERSION,
    ...withdrawalViewOf(row, bank),
    previous_status: previousStatus,
    transfer: transferViewOf(row, [row.account_id], bank, names),
  };
}

/** The payload of `transfer.*` seen by `viewerId`: the sender's (`sent`, ...) or the recipient's (`received`). */
export function transferEventPayload(row: TransferRow, eventType: string, viewerId: string, names?: AccountNames) {
  return { event_type: eventType, api_version: TRANSFER_EVENTS_API_VERSION, ...transferViewOf(row, [viewerId], null, names) };
}

/** The fact central applies (by id): the row itself, with the ledger rows it posted. */
export function syncPayload(row: TransferRow, change: string, ledgerRows: unknown[]): Record<string, unknown> {
  return { change, transfer: { ...row, live_mode: row.live_mode === 1 }, balance_transactions: ledgerRows };
}
