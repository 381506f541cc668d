import type { AppContext } from '../../context.js';
import type { Config } from '../../config.js';
import { isoTime } from '../../clock.js';
import { newId } from '../../ids.js';
import { accountsOf, type Account } from '../../accounts/service.js';
import { ledgerStore, type BalanceTransactionRow, type LedgerFilter, type LedgerTotalRow } from './store.js';
import { appendFeedChange } from '../../outbox/feed-changes.js';
import { rowOrigin } from '../../outbox/origins.js';

export type BalanceTransactionType = 'charge' | 'refund' | 'payout' | 'dispute' | 'transfer' | 'adjustment' | 'payment' | 'swap';

export interface FeeDetails {
  commission_in_cents: number;
  vat_withheld_in_cents: number;
}

/** A ledger row as the API shows it (gaps.md "Money movements"). */
export interface BalanceTransaction {
  id: string;
  account_id: string;
  live_mode: boolean;
  type: BalanceTransactionType;
  amount_in_cents: number;
  fee_in_cents: number;
  net_amount_in_cents: number;
  currency: string;
  balance_after_in_cents: number;
  fee_details: FeeDetails;
  source_id: string;
  source_type: string;
  description: string | null;
  created_at: string;
}

export interface PostBalanceTransactionInput {
  accountId: string;
  liveMode: boolean;
  type: BalanceTransactionType;
  /** Signed gross: positive credits the balance, negative debits it. */
  amountInCents: number;
  /** Signed fee (usually <= 0); net = amount + fee. */
  feeInCents: number;
  feeDetails?: FeeDetails;
  currency: string;
  sourceId: string;
  sourceType: string;
  description?: string | null;
  /** A row made at a store keeps its id and time at the central (sync); the balance after it is the central's. */
  id?: string;
  createdAt?: string;
}

export function toBalanceTransaction(r: BalanceTransactionRow): BalanceTransaction {
  return {
    id: r.id,
    account_id: r.account_id,
    live_mode: r.live_mode === 1,
    type: r.type as BalanceTransactionType,
    amount_in_cents: r.amount_in_cents,
    fee_in_cents: r.fee_in_cents,
    net_amount_in_cents: r.net_amount_in_cents,
    currency: r.currency,
    balance_after_in_cents: r.balance_after_in_cents,
    fee_details: { commission_in_cents: r.commission_in_cents, vat_withheld_in_cents: r.vat_withheld_in_cents },
    source_id: r.source_id,
    source_type: r.source_type,
    description: r.description,
    created_at: r.created_at,
  };
}

/**
 * Appends one ledger row. Must run inside the caller's transaction (the movement, its row and its
 * events commit together); the IMMEDIATE transaction holds the write lock, so reading the previous
 * balance and appending after it cannot interleave with another writer.
 */
export function postBalanceTransaction(ctx: AppContext, input: PostBalanceTransactionInput): BalanceTransaction {
  if (!ctx.db.inTransaction) throw new Error('postBalanceTransaction() outside a transaction');
  for (const [name, v] of [
    ['amountInCents', input.amountInCents],
    ['feeInCents', input.feeInCents],
  ] as const) {
    if (!Number.isSafeInteger(v)) throw new Error(`postBalanceTransaction: ${name} must be an integer, got ${v}`);
  }
  const store = ledgerStore(ctx.db);
  const net = input.amountInCents + input.feeInCents;
  const row = {
    id: input.id ?? newId('txn'),
    account_id: input.accountId,
    live_mode: input.liveMode ? 1 : 0,
    type: input.type,
    amount_in_cents: input.amountInCents,
    fee_in_cents: input.feeInCents,
    net_amount_in_cents: net,
    currency: input.currency,
    balance_after_in_cents: store.lastBalance(input.accountId, input.currency) + net,
    commission_in_cents: input.feeDetails?.commission_in_cents ?? 0,
    vat_withheld_in_cents: input.feeDetails?.vat_withheld_in_cents ?? 0,
    source_id: input.sourceId,
    source_type: input.sourceType,
    description: input.description ?? null,
    created_at: input.createdAt ?? isoTime(ctx.clock.now()),
  };
  store.insert(row, rowOrigin(ctx.db));
  const txn = toBalanceTransaction({ ...row, seq: 0 });
  // At a central every row reaches the account's boxes (so their ledgers mirror the central's):
  // rows it made itself (online payments, payouts, fee adjustments) and rows a box pushed (to the
  // other boxes of the account; never back to the box it came from).
  appendFeedChange(ctx.db, {
    kind: 'balance_transaction',
    accountId: row.account_id,
    liveMode: input.liveMode,
    objectId: row.id,
    payload: { ...txn },
    createdAt: row.created_at,
  });
  return txn;
}

/** Whether a ledger row with this id exists (sync appliers post a store's row once). */
export function hasBalanceTransaction(ctx: AppContext, id: string): boolean {
  return ledgerStore(ctx.db).byId(id) !== undefined;
}

export interface Balance {
  account_id: string;
  currency: string;
  available_in_cents: number;
  pending_in_cents: number;
}

/**
 * One spendable amount per currency: the running balance of the ledger. Withdrawals in progress
 * are already deducted because a withdrawal posts its payout row when it is created. Charges are
 * available at once (spec 6.1: on `intent.succeeded` "funds are in the balance"), so nothing is
 * pending. Every currency the account holds appears, at zero when it has no rows.
 */
export function balancesFor(ctx: AppContext, accountIds: string[], liveMode: boolean): Balance[] {
  const accounts = accountsOf(ctx);
  const rows = ledgerStore(ctx.db).balances(accountIds, liveMode);
  const out: Balance[] = [];
  for (const id of accountIds) {
    const held = accounts.account(id)?.currencies ?? [];
    const mine = rows.filter((r) => r.account_id === id);
    const currencies = [
      ...held,
      ...mine
        .map((r) => r.currency)
        .filter((c) => !held.includes(c))
        .sort(),
    ];
    for (const currency of currencies) {
      const balance = mine.find((r) => r.currency === currency)?.balance ?? 0;
      out.push({ account_id: id, currency, available_in_cents: balance, pending_in_cents: 0 });
    }
  }
  return out;
}

export interface Fee extends FeeDetails {
  /** Negative: what the charge costs the merchant (commission + withheld VAT). */
  fee_in_cents: number;
}

export type FeeDefaults = Pick<Config['money'], 'fee_percent' | 'fee_fixed_in_cents' | 'vat_percent'>;

export const DEFAULT_FEES: FeeDefaults = { fee_percent: 4.5, fee_fixed_in_cents: 0, vat_percent: 12 };

function settingNumber(settings: Record<string, unknown>, key: string): number | undefined {
  const v = settings[key];
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined;
}

/**
 * The fee of a charge: percent of the gross plus a fixed amount, from the account's settings
 * (`fee_percent`, `fee_fixed_in_cents`), else the configured defaults. The configured percent is
 * the whole fee, VAT included (gaps.md's example: 10000 with fee -450 nets 9550), so the withheld
 * VAT is the part of it that makes it 12% of the commission: vat = fee * 12 / 112.
 */
export function feeFor(account: Pick<Account, 'settings'>, amountInCents: number, defaults: FeeDefaults = DEFAULT_FEES): Fee {
  const percent = settingNumber(account.settings, 'fee_percent') ?? defaults.fee_percent;
  const fixed = settingNumber(account.settings, 'fee_fixed_in_cents') ?? defaults.fee_fixed_in_cents;
  const vatPercent = defaults.vat_percent;
  const total = Math.min(Math.abs(amountInCents), Math.round((Math.abs(amountInCents) * percent) / 100) + Math.round(fixed));
  const vat = Math.round((total * vatPercent) / (100 + vatPercent));
  return { fee_in_cents: -total, commission_in_cents: total - vat, vat_withheld_in_cents: vat };
}

export function getBalanceTransaction(ctx: AppContext, accountIds: string[], liveMode: boolean, id: string): BalanceTransaction | undefined {
  const row = ledgerStore(ctx.db).byId(id);
  if (!row || !accountIds.includes(row.account_id) || (row.live_mode === 1) !== liveMode) return undefined;
  return toBalanceTransaction(row);
}

export function listBalanceTransactions(ctx: AppContext, filter: LedgerFilter, limit: number, offset: number): { rows: BalanceTransaction[]; total: number } {
  const { rows, total } = ledgerStore(ctx.db).list(filter, limit, offset);
  return { rows: rows.map(toBalanceTransaction), total };
}

/**
 * A statement walk (report runs): rows oldest first after `cursor`, bounded by a high-water mark
 * taken once (`ledgerHighWater`), so rows posted while a report is written never shift or join it.
 */
export function balanceTransactionsAfter(
  ctx: AppContext,
  filter: LedgerFilter,
  cursor: number,
  highWater: number,
  limit: number,
): { rows: BalanceTransaction[]; cursor: number } {
  const rows = ledgerStore(ctx.db).after(filter, cursor, highWater, limit);
  return { rows: rows.map(toBalanceTransaction), cursor: rows.length ? rows[rows.length - 1].seq : cursor };
}

export function ledgerHighWater(ctx: AppContext): number {
  return ledgerStore(ctx.db).highWater();
}

/**
 * Counts and sums (amount and fee) of the ledger rows created in [from, until), per account,
 * environment, currency and type, of one origin: `null` for rows written on this box, a store id at
 * the central for the rows that store's pushed records wrote, `'central'` at a store for rows its
 * feed brought. Sync reconciliation compares these between a store and its central.
 */
export function ledgerTotals(ctx: Pick<AppContext, 'db'>, from: string, until: string, origin: string | null): LedgerTotalRow[] {
  return ledgerStore(ctx.db).totals(origin, from, until);
}
