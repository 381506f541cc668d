import type { AppContext } from '../../context.js';
import { tx } from '../../db/database.js';
import { newId } from '../../ids.js';
import { isoTime } from '../../clock.js';
import { ApiError, invalid, notFound } from '../../errors.js';
import { appendSyncRecord } from '../../outbox/sync-records.js';
import { appendFeedChange } from '../../outbox/feed-changes.js';
import { BANKS, findBank } from './banks.js';
import { bankAccountsStore, type BankAccountRow } from './store.js';
import type { BankAccountView, CreateBankAccountInput } from './schema.js';

export type { BankAccountRow } from './store.js';

/** Who acts: the account and its environment. */
export interface Actor {
  id: string;
  live_mode: boolean;
}

/** What a read covers (an organization key reads across its accounts). */
export interface ReadScope {
  accountIds: string[];
  liveMode: boolean;
}

export function listBanks(): Array<{ name: string; code: string }> {
  return BANKS.map(({ name, code }) => ({ name, code }));
}

/** Every character but the last 4 becomes `*`, so the length still tells the number's shape. */
export function maskNumber(number: string): string {
  return number.length <= 4 ? number : '*'.repeat(number.length - 4) + number.slice(-4);
}

export function bankAccountView(row: BankAccountRow): BankAccountView {
  return {
    id: row.id,
    holder_name: row.holder_name,
    number: maskNumber(row.number),
    bank_name: row.bank_name,
    bank_code: row.bank_code,
    currency: row.currency,
    account_type: row.account_type,
    is_preferred: row.is_preferred === 1,
    status: row.status,
    live_mode: row.live_mode === 1,
    account_id: row.account_id,
    created_at: row.created_at,
    archived_at: row.archived_at,
  };
}

/**
 * At a central, a bank account's state after a change reaches the account's boxes (feed kind
 * `bank_account`, the whole row), so a withdrawal asked at any counter can name it. A no-op at a store.
 */
export function publishBankAccount(ctx: AppContext, row: BankAccountRow, at: string): void {
  appendFeedChange(ctx.db, {
    kind: 'bank_account',
    accountId: row.account_id,
    liveMode: row.live_mode === 1,
    objectId: row.id,
    payload: { bank_account: { ...row, live_mode: row.live_mode === 1, is_preferred: row.is_preferred === 1 } },
    createdAt: at,
  });
}

/** Central pays withdrawals, so it learns every bank account fact (with the whole number). */
function syncBankAccount(ctx: AppContext, row: BankAccountRow, change: 'created' | 'preferred_changed' | 'archived', at: string): void {
  publishBankAccount(ctx, row, at);
  appendSyncRecord(ctx.db, {
    kind: 'bank_account',
    accountId: row.account_id,
    liveMode: row.live_mode === 1,
    payload: { change, bank_account: { ...row, live_mode: row.live_mode === 1, is_preferred: row.is_preferred === 1 } },
    createdAt: at,
  });
}

export function createBankAccount(ctx: AppContext, actor: Actor, input: CreateBankAccountInput): BankAccountView {
  const errors: Record<string, string[]> = {};
  const number = input.number.replace(/[ -]/g, '');
  if (number.length < 4 || number.length > 34) errors.number = ['must have 4 to 34 digits'];
  const holder = input.holder_name.trim();
  const bank = findBank(input.bank_name);
  if (Object.keys(errors).length > 0) {
    // Say everything at once: an unknown bank beside another bad field is one more field error.
    if (!bank) errors.bank_name = ['is not a bank from GET /banks'];
    throw invalid(errors);
  }
  if (!bank) {
    throw new ApiError('unknown_bank', { errors: { bank_name: ['is not a bank from GET /banks'] } });
  }
  const store = bankAccountsStore(ctx.db);
  const at = isoTime(ctx.clock.now());
  const row: BankAccountRow = {
    id: newId('bacc'),
    account_id: actor.id,
    live_mode: actor.live_mode ? 1 : 0,
    holder_name: holder,
    number,
    bank_name: bank.name,
    bank_code: bank.code,
    currency: input.currency,
    account_type: input.account_type,
    is_preferred: input.is_preferred ? 1 : 0,
    status: 'active',
    created_at: at,
    archived_at: null,
  };
  return tx(ctx.db, () => {
    if (row.is_preferred) store.unsetOtherPreferred(row);
    store.insert(row);
    syncBankAccount(ctx, row, 'created', at);
    return bankAccountView(row);
  });
}

/** A bank account the scope may read, or 404 (another account's and another environment's alike). */
export function findBankAccount(ctx: AppContext, scope: ReadScope, id: string): BankAccountRow {
  const row = bankAccountsStore(ctx.db).get(id, scope.liveMode);
  if (!row || !scope.accountIds.includes(row.account_id)) throw notFound('bank account', id);
  return row;
}

export function getBankAccount(ctx: AppContext, scope: ReadScope, id: string): BankAccountView {
  return bankAccountView(findBankAccount(ctx, scope, id));
}

export function listBankAccounts(ctx: AppContext, scope: ReadScope, limit: number, offset: number): { rows: BankAccountView[]; total: number } {
  const { rows, total } = bankAccountsStore(ctx.db).listActive(scope.accountIds, scope.liveMode, limit, offset);
  return { rows: rows.map(bankAccountView), total };
}

const IMMUTABLE = ['holder_name', 'number', 'bank_name', 'currency', 'account_type', 'status'] as const;

/**
 * The one change a bank account allows. Naming another field is refused rather than ignored, so a
 * caller who meant to edit the number learns it must archive and create a new account.
 */
export function updateBankAccount(ctx: AppContext, actor: Actor, id: string, body: Record<string, unknown>): BankAccountView {
  const errors: Record<string, string[]> = {};
  for (const field of IMMUTABLE) {
    if (field in body) errors[field] = ['cannot be changed; archive this bank account and create a new one'];
  }
  if (Object.keys(errors).length > 0) throw invalid(errors);
  const preferred = body.is_preferred === true;
  const store = bankAccountsStore(ctx.db);
  return tx(ctx.db, () => {
    const row = findBankAccount(ctx, { accountIds: [actor.id], liveMode: actor.live_mode }, id);
    if (row.status !== 'active') throw new ApiError('bank_account_archived');
    if ((row.is_preferred === 1) === preferred) return bankAccountView(row);
    if (preferred) store.unsetOtherPreferred(row);
    store.setPreferred(row.id, preferred);
    const updated = store.get(row.id, actor.live_mode)!;
    syncBankAccount(ctx, updated, 'preferred_changed', isoTime(ctx.clock.now()));
    return bankAccountView(updated);
  });
}

/** Archiving is idempotent: an archived account answers as it is. */
export function archiveBankAccount(ctx: AppContext, actor: Actor, id: string): BankAccountView {
  const store = bankAccountsStore(ctx.db);
  return tx(ctx.db, () => {
    const row = findBankAccount(ctx, { accountIds: [actor.id], liveMode: actor.live_mode }, id);
    const at = isoTime(ctx.clock.now());
    if (store.archive(row.id, at)) {
      const archived = store.get(row.id, actor.live_mode)!;
      syncBankAccount(ctx, archived, 'archived', at);
      return bankAccountView(archived);
    }
    return bankAccountView(row);
  });
}

/** A bank account by id for other modules (withdrawals show their destination); no scope check. */
export function bankAccountById(ctx: AppContext, id: string, liveMode: boolean): BankAccountRow | undefined {
  return bankAccountsStore(ctx.db).get(id, liveMode);
}
