import type { AppContext } from '../context.js';
import type { PushRecord } from './wire.js';
import { reemitEvent } from '../events/reemit.js';
import { AccountsService } from '../accounts/service.js';
import { applyStoreCashSale, isCashSaleRecord } from '../modules/cash-sales/sync.js';
import { applyStorePayment, isPaymentRecord } from '../modules/payments/sync.js';
import { applyStoreRefund, isRefundRecord } from '../modules/refunds/sync.js';
import { applyStoreTransfer, isTransferRecord } from '../modules/transfers/sync.js';
import { applyStoreBankAccount, isBankAccountRecord } from '../modules/bank-accounts/sync.js';
import { applyStoreBooking, isBookingRecord } from '../modules/bookings/sync.js';
import { applyStoreCoupon, applyStoreRedemption, isCouponRecord, isRedemptionRecord } from '../modules/coupons/sync.js';
import { applyStoreContract, isContractRecord } from '../modules/contracts/sync.js';
import { applyStoreSubscription, isSubscriptionRecord } from '../modules/subscriptions/sync.js';
import { applyStoreConnectedAccount, applyStoreVerification, isConnectedAccountRecord, isVerificationRecord } from '../modules/connected/sync.js';

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
  /**
   * `code` (optional) names the decision for the store's rejection handler (say `slot_unavailable`:
   * the store cancels its booking); it travels in the feed's `record_rejected` change.
   */
  constructor(
    readonly reason: string,
    readonly code: string | null = null,
  ) {
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

/** Counted in reconciliation, never summed: the money of these facts travels in their payment records. */
const countOnly: SyncTotals = () => null;

/** Runs an applier that answers a refusal (or null) and turns the refusal into the central's decision. */
function refuseWith(refusal: string | null): void {
  if (refusal) throw new SyncRejection(refusal);
}

// A booking made or moved at the store: the bookings module writes it with the store's ids and, when
// it starts taking time at the central, refuses it if that time is already taken there (the store
// then cancels its booking: see its rejection handler).
registerSyncApplier(
  'booking',
  (ctx, record, origin) => {
    if (!isBookingRecord(record.payload)) throw new SyncRejection('booking record without row, occupancy or refs (written by an older posd?)');
    const refusal = applyStoreBooking(ctx, record.account_id, origin.storeId, record.payload);
    if (refusal) throw new SyncRejection(refusal.reason, refusal.code);
  },
  { totals: countOnly },
);

// Coupons made at the store keep their ids; a redemption counts once by its id, even past the
// central's limit (the sale happened), and weighs its discount in the totals.
registerSyncApplier(
  'coupon',
  (ctx, record) => {
    if (!isCouponRecord(record.payload)) throw new SyncRejection('coupon record without id, name, discount or status');
    refuseWith(applyStoreCoupon(ctx, record.account_id, record.live_mode, record.payload, record.created_at));
  },
  { totals: countOnly },
);
registerSyncApplier(
  'coupon_redemption',
  (ctx, record) => {
    if (!isRedemptionRecord(record.payload)) throw new SyncRejection('coupon_redemption record without coupon_id, checkout_id or amount_off_in_cents');
    refuseWith(applyStoreRedemption(ctx, record.account_id, record.live_mode, record.payload, record.id, record.created_at));
  },
  {
    totals: (p) => (typeof p.currency === 'string' && typeof p.amount_off_in_cents === 'number' ? { currency: p.currency, amount_in_cents: p.amount_off_in_cents } : null),
  },
);

// Contracts and subscriptions carry their state after the change: written with the store's ids,
// a newer state never overwritten by an older record; the store keeps running their timers.
registerSyncApplier(
  'contract',
  (ctx, record, origin) => {
    if (!isContractRecord(record.payload)) throw new SyncRejection('contract record without row or template (written by an older posd?)');
    refuseWith(applyStoreContract(ctx, record.account_id, origin.storeId, record.payload));
  },
  { totals: countOnly },
);
registerSyncApplier(
  'subscription',
  (ctx, record, origin) => {
    if (!isSubscriptionRecord(record.payload)) throw new SyncRejection('subscription record without row or items (written by an older posd?)');
    refuseWith(applyStoreSubscription(ctx, record.account_id, origin.storeId, record.payload));
  },
  { totals: countOnly },
);

// Connected accounts made at the store: the children exist at the central with the same ids (and
// enter the store key's scope at once), then their verification follows.
registerSyncApplier(
  'connected_account',
  (ctx, record) => {
    if (!isConnectedAccountRecord(record.payload)) throw new SyncRejection('connected_account record without account ids, parent or e-mail');
    refuseWith(applyStoreConnectedAccount(ctx, record.account_id, record.created_at, record.payload));
  },
  { totals: countOnly },
);
registerSyncApplier(
  'connected_account_verification',
  (ctx, record) => {
    if (!isVerificationRecord(record.payload)) throw new SyncRejection('connected_account_verification record without account_id or status');
    refuseWith(applyStoreVerification(ctx, record.account_id, record.created_at, record.payload));
  },
  { totals: countOnly },
);
