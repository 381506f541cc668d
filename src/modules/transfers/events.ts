import type { EventExample, ExampleInput } from '../../events/catalogue.js';
import { newId } from '../../ids.js';
import type { TransferRow } from './store.js';
import { transferEventPayload, withdrawalEventPayload } from './views.js';

/**
 * The test-send payloads of `transfer.*` and `withdrawal.*` (`PosdModule.events`): example rows
 * through the builders the emitters call (views.ts). The endpoint's account is the sender, except
 * for `transfer.received`, where it is the recipient.
 */
function exampleRow(i: ExampleInput, kind: TransferRow['kind'], status: TransferRow['status']): TransferRow {
  const at = i.createdAt;
  const peer = kind === 'peer';
  return {
    id: newId('tr'),
    account_id: i.accountId,
    live_mode: i.liveMode ? 1 : 0,
    kind,
    status,
    amount_in_cents: 25000,
    currency: 'GTQ',
    recipient_account_id: peer ? newId('ac') : null,
    bank_account_id: peer ? null : newId('bacc'),
    note: peer ? 'Pago a proveedor' : null,
    balance_transaction_id: newId('txn'),
    recipient_balance_transaction_id: peer && status === 'succeeded' ? newId('txn') : null,
    return_balance_transaction_id: status === 'failed' || status === 'cancelled' ? newId('txn') : null,
    failure_reason: status === 'failed' ? 'account_closed' : status === 'cancelled' ? 'rejected_in_review' : null,
    created_at: at,
    updated_at: at,
    in_transit_at: status === 'in_transit' || status === 'paid' ? at : null,
    paid_at: status === 'paid' ? at : null,
    failed_at: status === 'failed' ? at : null,
  };
}

const peer =
  (type: string, status: TransferRow['status']): EventExample =>
  (i) => {
    const row = exampleRow(i, 'peer', status);
    if (type !== 'transfer.received') return transferEventPayload(row, type, row.account_id, () => 'Tienda Ejemplo, S.A.');
    // The recipient's side: the endpoint's account received it from another.
    const received = { ...row, account_id: newId('ac'), recipient_account_id: i.accountId };
    return transferEventPayload(received, type, i.accountId, () => 'Tienda Ejemplo, S.A.');
  };

const withdrawal =
  (type: 'withdrawal.create' | 'withdrawal.update', status: TransferRow['status'], previous: string | null): EventExample =>
  (i) => {
    const row = exampleRow(i, 'withdrawal', status);
    const bank = {
      id: row.bank_account_id!,
      holder_name: 'Clínica Dental Sonrisa, S.A.',
      number: '******7890',
      bank_name: 'Banco Industrial',
      bank_code: 'BI',
      currency: 'GTQ' as const,
      account_type: 'monetaria' as const,
      is_preferred: true,
      status: 'active' as const,
      live_mode: i.liveMode,
      account_id: i.accountId,
      created_at: i.createdAt,
      archived_at: null,
    };
    return withdrawalEventPayload(row, bank, type, previous, () => 'Tienda Ejemplo, S.A.');
  };

export const transferEventExamples: Record<string, EventExample> = {
  'transfer.sent': peer('transfer.sent', 'succeeded'),
  'transfer.received': peer('transfer.received', 'succeeded'),
  // A transfer held for review, to its sender: evaluated, sent to a reviewer, cancelled by one.
  'transfer.pending': peer('transfer.pending', 'pending'),
  'transfer.in_review': peer('transfer.in_review', 'in_review'),
  'transfer.cancelled': peer('transfer.cancelled', 'cancelled'),
  'withdrawal.create': withdrawal('withdrawal.create', 'pending', null),
  'withdrawal.update': withdrawal('withdrawal.update', 'paid', 'in_transit'),
};
