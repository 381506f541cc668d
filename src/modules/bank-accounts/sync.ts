import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import type { PushKind } from '../../sync/shared/registry.js';
import { isoTime } from '../../clock.js';
import { bankAccountsStore, type BankAccountRow } from './store.js';
import { publishBankAccount } from './service.js';

/** The `bank_account` record the bank-accounts service appends (the whole row: central pays withdrawals). */
export interface BankAccountRecord {
  change: 'created' | 'preferred_changed' | 'archived';
  bank_account: Omit<BankAccountRow, 'live_mode' | 'is_preferred'> & { live_mode: boolean; is_preferred: boolean };
}

/** The fields of a `bank_account` record (pushed, or a feed change with `change` added) its appliers rely on. */
export const BankAccountPayload = Type.Object({
  change: Type.Union([Type.Literal('created'), Type.Literal('preferred_changed'), Type.Literal('archived')]),
  bank_account: Type.Object({
    id: Type.String(),
    number: Type.String(),
    holder_name: Type.String(),
    currency: Type.String(),
    is_preferred: Type.Boolean(),
    status: Type.Union([Type.Literal('active'), Type.Literal('archived')]),
    created_at: Type.String(),
  }),
});

/**
 * A bank account fact from a store, applied at the central (sync): the account is written with the
 * store's id when the central does not hold it yet, then it takes the record's state (preferred flag,
 * which clears the account's other preferred one in that currency as at the store; archived).
 */
export function applyStoreBankAccount(ctx: AppContext, accountId: string, record: BankAccountRecord): void {
  const row = applyBankAccountState(ctx, accountId, record.bank_account);
  // The other boxes of the account learn it through the feed (not the box that pushed it).
  if (row) publishBankAccount(ctx, row, isoTime(ctx.clock.now()));
}

/**
 * Brings a bank account to the given state, by id: inserted when absent, else archived or its
 * preferred flag set (an archived one stays archived). Used by the central for a box's fact and by a
 * box for the central's feed change (then with no sync record: the central has it). Returns the row
 * as it now is, or undefined when the id belongs to another account.
 */
export function applyBankAccountState(ctx: AppContext, accountId: string, b: BankAccountRecord['bank_account']): BankAccountRow | undefined {
  const store = bankAccountsStore(ctx.db);
  const row: BankAccountRow = { ...b, account_id: accountId, live_mode: b.live_mode ? 1 : 0, is_preferred: b.is_preferred ? 1 : 0 };
  const existing = store.get(row.id, b.live_mode);
  if (existing && existing.account_id !== accountId) return undefined;
  if (row.is_preferred === 1 && row.status === 'active') store.unsetOtherPreferred(row);
  if (!existing) store.insert(row);
  else if (row.status === 'archived') store.archive(row.id, row.archived_at ?? row.created_at);
  else if (existing.status === 'active') store.setPreferred(row.id, row.is_preferred === 1);
  return store.get(row.id, b.live_mode);
}

/** A bank account added, preferred or archived at the store (`bank_account`): the central pays withdrawals to it. */
export const bankAccountPush: PushKind<BankAccountRecord> = {
  payload: BankAccountPayload,
  malformed: 'bank_account record without bank_account',
  apply: (ctx, record) => applyStoreBankAccount(ctx, record.account_id, record.payload),
  totals: () => null,
};
