import type { EventExample } from '../../events/catalogue.js';
import { LEGACY_API_VERSION } from '../../events/formats.js';
import { newId } from '../../ids.js';
import type { BalanceTransaction } from '../ledger/service.js';
import type { DisputeStatus } from './machine.js';
import type { DisputeView } from './schema.js';
import type { DisputeRow } from './store.js';

export function disputeView(r: DisputeRow): DisputeView {
  return {
    id: r.id,
    object: 'dispute',
    account_id: r.account_id,
    live_mode: r.live_mode === 1,
    payment_intent_id: r.payment_intent_id,
    intent_id: r.intent_id,
    status: r.status,
    reason: r.reason,
    amount_in_cents: r.amount_in_cents,
    currency: r.currency,
    balance_transaction_id: r.balance_transaction_id,
    reversal_balance_transaction_id: r.reversal_balance_transaction_id,
    created_at: r.created_at,
    updated_at: r.updated_at,
    closed_at: r.closed_at,
  };
}

/**
 * `dispute.create` / `dispute.update`: the dispute as the helpers answer it, with the status it left
 * (`previous_status`, null on create). dispute.* has no unified replacement (spec 6.3): every account
 * gets this one shape, with the date of the events the change left alone.
 */
export function disputeEventPayload(row: DisputeRow, eventType: 'dispute.create' | 'dispute.update', previousStatus: DisputeStatus | null) {
  return { event_type: eventType, api_version: LEGACY_API_VERSION, ...disputeView(row), previous_status: previousStatus };
}

/** The fact central applies (by id): the row as it is after the change, and the ledger rows the change posted. */
export function disputeSyncPayload(row: DisputeRow, change: string, ledgerRows: BalanceTransaction[]): Record<string, unknown> {
  return { change, dispute: disputeView(row), balance_transactions: ledgerRows };
}

function exampleRow(i: Parameters<EventExample>[0], status: DisputeStatus): DisputeRow {
  const closed = status === 'won' || status === 'lost';
  return {
    id: newId('dp'),
    account_id: i.accountId,
    live_mode: i.liveMode ? 1 : 0,
    payment_intent_id: newId('pa'),
    intent_id: newId('in'),
    status,
    reason: 'fraudulent',
    amount_in_cents: 10000,
    currency: 'GTQ',
    balance_transaction_id: newId('txn'),
    reversal_balance_transaction_id: status === 'won' ? newId('txn') : null,
    created_at: i.createdAt,
    updated_at: i.createdAt,
    closed_at: closed ? i.createdAt : null,
  };
}

/** The test-send payloads (`PosdModule.events`): example rows through the emitter's builder. */
export const disputeEventExamples: Record<string, EventExample> = {
  'dispute.create': (i) => disputeEventPayload(exampleRow(i, 'needs_response'), 'dispute.create', null),
  'dispute.update': (i) => disputeEventPayload(exampleRow(i, 'under_review'), 'dispute.update', 'needs_response'),
};
