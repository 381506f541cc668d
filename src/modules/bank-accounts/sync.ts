import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import type { PushKind, SyncOrigin } from '../../sync/shared/registry.js';
import { accountsOf } from '../../accounts/service.js';
import { ownerRefusal, payloadTimeRefusal, type CheckRefusal, type CheckedRecord } from '../../sync/shared/record-checks.js';
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

/**
 * What the central's state must allow for a pushed bank account fact (issue 32, at projection; the
 * central pays withdrawals to it): the account is in the record's environment and in one of the
 * account's currencies; an id the central holds is the record's account's, and one archived there
 * stays archived; a step other than the creation names an account the central holds, and an archiving says so; the creation's time is neither after its record nor before the store.
 */
function checkStoreBankAccount(ctx: AppContext, rec: CheckedRecord & { payload: BankAccountRecord }, origin: SyncOrigin): CheckRefusal {
  if (origin.restoring) return null;
  const { change, bank_account: b } = rec.payload;
  const field = 'payload.bank_account.id';
  if (b.live_mode !== rec.live_mode) {
    return {
      code: 'inconsistent_payload',
      field: 'payload.bank_account.live_mode',
      reason: `a ${rec.live_mode ? 'live' : 'test'} record carries a bank account of the other environment`,
    };
  }
  if (change === 'archived' && b.status !== 'archived') {
    return { code: 'inconsistent_payload', field: 'payload.bank_account.status', reason: `an archived bank account is not ${b.status}` };
  }
  const currencies = accountsOf(ctx).account(rec.account_id)?.currencies ?? [];
  if (!currencies.includes(b.currency)) {
    return {
      code: 'invalid_currency',
      field: 'payload.bank_account.currency',
      reason: `${b.currency} is not a currency of the account (${currencies.join(', ')})`,
    };
  }
  const store = bankAccountsStore(ctx.db);
  const existing = store.get(b.id, true) ?? store.get(b.id, false);
  if (existing) {
    const foreign = ownerRefusal(rec, existing, field, `bank account ${b.id}`);
    if (foreign) return foreign;
    if (existing.status === 'archived' && b.status !== 'archived') {
      return {
        code: 'transition_not_allowed',
        field: 'payload.bank_account.status',
        reason: `bank account ${b.id} is archived at the central; it stays archived`,
      };
    }
  } else if (change !== 'created') {
    return { code: 'unknown_reference', field, reason: `bank account ${b.id} is not a bank account of account ${rec.account_id} at the central` };
  }
  return payloadTimeRefusal(ctx, rec, origin, 'payload.bank_account.created_at', b.created_at);
}

/** A bank account added, preferred or archived at the store (`bank_account`): the central pays withdrawals to it. */
export const bankAccountPush: PushKind<BankAccountRecord> = {
  payload: BankAccountPayload,
  malformed: 'bank_account record without bank_account',
  check: (ctx, record, origin) => checkStoreBankAccount(ctx, record, origin),
  apply: (ctx, record) => applyStoreBankAccount(ctx, record.account_id, record.payload),
  totals: () => null,
};
