import type { EventExample } from '../../events/catalogue.js';
import { LEGACY_API_VERSION } from '../../events/formats.js';
import { newId } from '../../ids.js';
import type { RefundRow } from './store.js';

export interface Refund {
  id: string;
  account_id: string;
  live_mode: boolean;
  status: string;
  payment_intent_id: string;
  intent_id: string;
  amount_in_cents: number;
  fee_returned_in_cents: number;
  currency: string;
  reason: string | null;
  balance_transaction_id: string | null;
  created_at: string;
}

/** Who got the money back (hosted section 8), and the two sides of the refund. */
export interface RefundParties {
  customer: { id: string; email: string | null; full_name: string | null } | null;
  user_id: string | null;
}

/**
 * The refund as the API and `refund.create` answer it: posd's fields and the hosted ones (section 8):
 * `customer`, `user_id`, `customer_refunded_amount_in_cents` (what the buyer gets back: the whole
 * charge) and `account_refunded_amount_in_cents` (what left the account: the charge less the fee
 * given back). Sync carries the row's fields only (toRefund).
 */
export type RefundView = Refund &
  RefundParties & {
    account_refunded_amount_in_cents: number;
    customer_refunded_amount_in_cents: number;
  };

export function refundViewOf(r: RefundRow, parties: RefundParties): RefundView {
  return {
    ...toRefund(r),
    ...parties,
    account_refunded_amount_in_cents: r.amount_in_cents - r.fee_returned_in_cents,
    customer_refunded_amount_in_cents: r.amount_in_cents,
  };
}

export function toRefund(r: RefundRow): Refund {
  return {
    id: r.id,
    account_id: r.account_id,
    live_mode: r.live_mode === 1,
    status: r.status,
    payment_intent_id: r.payment_intent_id,
    intent_id: r.intent_id,
    amount_in_cents: r.amount_in_cents,
    fee_returned_in_cents: r.fee_returned_in_cents,
    currency: r.currency,
    reason: r.reason,
    balance_transaction_id: r.balance_transaction_id,
    created_at: r.created_at,
  };
}

/**
 * `refund.create`: the refund as the API shows it. refund.* has no unified replacement (spec 6.3):
 * every account gets this one shape, with the date of the events the change left alone.
 */
export function refundEventPayload(refund: RefundView) {
  return { ...refund, event_type: 'refund.create', api_version: LEGACY_API_VERSION };
}

/** The test-send payload (`PosdModule.events`): an example row through the emitter's builders. */
export const refundEventExamples: Record<string, EventExample> = {
  'refund.create': (i) =>
    refundEventPayload(
      refundViewOf(
        {
          id: newId('re'),
          account_id: i.accountId,
          live_mode: i.liveMode ? 1 : 0,
          payment_intent_id: newId('pa'),
          intent_id: newId('in'),
          status: 'succeeded',
          amount_in_cents: 10000,
          fee_returned_in_cents: 450,
          currency: 'GTQ',
          reason: 'requested_by_customer',
          balance_transaction_id: newId('txn'),
          created_at: i.createdAt,
        },
        { customer: { id: newId('cus'), email: 'ana@example.com', full_name: 'Ana López' }, user_id: null },
      ),
    ),
};
