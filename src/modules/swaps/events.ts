import type { EventExample, ExampleInput } from '../../events/catalogue.js';
import { newId } from '../../ids.js';
import { SWAP_NETWORK } from './service.js';
import type { SwapRow } from './store.js';
import { swapEventPayload } from './views.js';

/** The test-sends of `swap.*` (`PosdModule.events`): an example row through the emitters' builder. */
function exampleRow(i: ExampleInput, status: SwapRow['status']): SwapRow {
  const done = status === 'completed';
  return {
    id: newId('sw'),
    account_id: i.accountId,
    live_mode: i.liveMode ? 1 : 0,
    status,
    from_currency: 'USD',
    to_currency: 'USDC',
    amount_in_cents: 10000,
    to_amount_in_cents: 10000,
    network: SWAP_NETWORK,
    transaction_hash: done ? `0x${'ab'.repeat(32)}` : null,
    failure_reason: null,
    balance_transaction_id: newId('txn'),
    to_balance_transaction_id: done ? newId('txn') : null,
    return_balance_transaction_id: null,
    created_at: i.createdAt,
    updated_at: i.createdAt,
  };
}

export const swapEventExamples: Record<string, EventExample> = {
  'swap.create': (i) => swapEventPayload(exampleRow(i, 'pending'), 'swap.create', null),
  'swap.update': (i) => swapEventPayload(exampleRow(i, 'completed'), 'swap.update', 'pending'),
};
