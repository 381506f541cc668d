import type { AppContext } from '../context.js';
import type { PushRecord } from './wire.js';
import { reemitEvent } from '../events/reemit.js';
import { AccountsService } from '../modules/accounts/service.js';
import { applyStoreCashSale, isCashSaleRecord } from '../modules/cash-sales/sync.js';
import { applyStorePayment, isPaymentRecord } from '../modules/payments/sync.js';
import { applyStoreRefund, isRefundRecord } from '../modules/refunds/sync.js';
import { applyStoreTransfer, isTransferRecord } from '../modules/transfers/sync.js';
import { applyStoreBankAccount, isBankAccountRecord } from '../modules/bank-accounts/sync.js';

/** Where a record came from, for appliers that need it (the store box, the account whose key pushed). */
export interface SyncOrigin {
  storeId: string;
  keyAccountId: string;
}

/**
 * Thrown by an applier when the central refuses one fact on its merits (say, a slot booked online
 * while the store was offline). The record is kept as rejected, the stream goes on, and the store
 * learns the decision through its feed. Any other error rolls the whole batch back.
 */
export class SyncRejection extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'SyncRejection';
  }
}

/**
 * Applies one fact at the central, inside the batch's transaction. It must be a pure function of
 * the record (the record id is the idempotency key: it is called once per id) and must not emit
 * events of its own for the fact: the store's events arrive as `event` records and keep their ids.
 */
export type SyncApplier = (ctx: AppContext, record: PushRecord, origin: SyncOrigin) => void;

/** What a fact of a kind weighs in reconciliation: its currency and amount (null: counted only). */
export type SyncTotals = (payload: Record<string, unknown>) => { currency: string; amount_in_cents: number } | null;

const appliers = new Map<string, SyncApplier>();
const totals = new Map<string, SyncTotals>();

/**
 * Registers how the central applies one kind of fact. The owning module registers its kind from its
 * own code (its money rules stay in its service functions); sync only routes records to it.
 */
export function registerSyncApplier(kind: string, fn: SyncApplier, opts: { totals?: SyncTotals } = {}): void {
  if (appliers.has(kind) && appliers.get(kind) !== fn) throw new Error(`a sync applier for ${kind} is already registered`);
  appliers.set(kind, fn);
  if (opts.totals) totals.set(kind, opts.totals);
}

/** Default: a top-level `currency` and `amount_in_cents`, as most facts carry. */
function topLevelTotals(p: Record<string, unknown>): { currency: string; amount_in_cents: number } | null {
  return typeof p.currency === 'string' && typeof p.amount_in_cents === 'number' ? { currency: p.currency, amount_in_cents: p.amount_in_cents } : null;
}

export function syncTotalsOf(kind: string, payload: Record<string, unknown>): { currency: string; amount_in_cents: number } | null {
  return (totals.get(kind) ?? topLevelTotals)(payload);
}

export function syncApplier(kind: string): SyncApplier | undefined {
  return appliers.get(kind);
}

export function syncKinds(): string[] {
  return [...appliers.keys()].sort();
}

// An event made at the store: re-emitted at the central with the same id, so central operations'
// endpoints (which deduplicate by webhook-id) see it once however often it is pushed.
registerSyncApplier('event', (ctx, record) => {
  const p = record.payload as { id?: unknown; type?: unknown; object_id?: unknown; payload?: unknown; created_at?: unknown };
  if (typeof p.id !== 'string' || typeof p.type !== 'string' || typeof p.payload !== 'object' || p.payload === null) {
    throw new SyncRejection('event record without id, type or payload');
  }
  reemitEvent(ctx, {
    id: p.id,
    type: p.type,
    accountId: record.account_id,
    liveMode: record.live_mode,
    objectId: typeof p.object_id === 'string' ? p.object_id : null,
    payload: p.payload as Record<string, unknown>,
    createdAt: typeof p.created_at === 'string' ? p.created_at : record.created_at,
  });
});

// A store found its totals differ from the central's: central operations hear it as an event.
registerSyncApplier('reconciliation_report', (ctx, record, origin) => {
  ctx.outbox.emit({
    type: 'sync.reconciliation_difference',
    accountId: record.account_id,
    liveMode: record.live_mode,
    objectId: origin.storeId,
    payload: { store_id: origin.storeId, ...record.payload },
    createdAt: record.created_at,
  });
});

// A cash sale made at the store: the cash-sales module applies it with the store's ids.
registerSyncApplier(
  'cash_sale',
  (ctx, record) => {
    if (!isCashSaleRecord(record.payload)) throw new SyncRejection('cash_sale record without sale or cash_intent');
    const account = new AccountsService(ctx.db, ctx.clock).account(record.account_id)!;
    applyStoreCashSale(ctx, account, record.payload);
  },
  {
    totals: (p) => {
      const sale = p.sale as { currency?: unknown; amount_in_cents?: unknown } | undefined;
      return typeof sale?.currency === 'string' && typeof sale.amount_in_cents === 'number'
        ? { currency: sale.currency, amount_in_cents: sale.amount_in_cents }
        : null;
    },
  },
);

// A checkout paid at the store (terminal, card, bank transfer): the payments module applies it with
// the store's ids, its ledger `charge` row and fee included. Only a success weighs in the totals.
for (const kind of ['terminal_payment', 'checkout_payment']) {
  registerSyncApplier(
    kind,
    (ctx, record) => {
      if (!isPaymentRecord(record.payload)) throw new SyncRejection(`${kind} record without payment_intent, intent or checkout`);
      const account = new AccountsService(ctx.db, ctx.clock).account(record.account_id)!;
      applyStorePayment(ctx, account, record.payload);
    },
    {
      totals: (p) => {
        const pa = p.payment_intent as { status?: unknown; currency?: unknown; amount_in_cents?: unknown } | undefined;
        return pa?.status === 'succeeded' && typeof pa.currency === 'string' && typeof pa.amount_in_cents === 'number'
          ? { currency: pa.currency, amount_in_cents: pa.amount_in_cents }
          : null;
      },
    },
  );
}

// A refund made at the store: the refunds module applies it with the store's ids and its ledger
// `refund` row. A payment the central refunded itself meanwhile is refused (refunded once).
registerSyncApplier(
  'refund',
  (ctx, record) => {
    if (!isRefundRecord(record.payload)) throw new SyncRejection('refund record without refund');
    const account = new AccountsService(ctx.db, ctx.clock).account(record.account_id)!;
    const conflict = applyStoreRefund(ctx, account, record.payload);
    if (conflict) throw new SyncRejection(`payment ${record.payload.refund.payment_intent_id} was already refunded at the central by ${conflict.conflictingRefundId}`);
  },
  {
    totals: (p) => {
      const r = p.refund as { currency?: unknown; amount_in_cents?: unknown } | undefined;
      return typeof r?.currency === 'string' && typeof r.amount_in_cents === 'number' ? { currency: r.currency, amount_in_cents: r.amount_in_cents } : null;
    },
  },
);

// A peer transfer or a withdrawal step made at the store: the transfers module applies the row and
// the ledger rows of that step with the store's ids. A step the central's state no longer allows is
// refused. Only the creation weighs in the totals (a status step moves no new amount).
for (const kind of ['transfer', 'withdrawal']) {
  registerSyncApplier(
    kind,
    (ctx, record) => {
      if (!isTransferRecord(record.payload)) throw new SyncRejection(`${kind} record without transfer or balance_transactions`);
      const refusal = applyStoreTransfer(ctx, record.account_id, record.payload);
      if (refusal) throw new SyncRejection(refusal);
    },
    {
      totals: (p) => {
        const t = p.transfer as { currency?: unknown; amount_in_cents?: unknown } | undefined;
        return p.change === 'created' && typeof t?.currency === 'string' && typeof t.amount_in_cents === 'number'
          ? { currency: t.currency, amount_in_cents: t.amount_in_cents }
          : null;
      },
    },
  );
}

// A bank account added, preferred or archived at the store: the central pays withdrawals to it.
registerSyncApplier(
  'bank_account',
  (ctx, record) => {
    if (!isBankAccountRecord(record.payload)) throw new SyncRejection('bank_account record without bank_account');
    applyStoreBankAccount(ctx, record.account_id, record.payload);
  },
  { totals: () => null },
);
