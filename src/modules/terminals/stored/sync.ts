import { Type } from '@sinclair/typebox';
import type { PushKind } from '../../../sync/shared/registry.js';
import { storedPaymentsStore } from './store.js';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

/** The fields of a `stored_payment` record (stored/service.ts `storedPaymentRecord`) the central keeps. */
export const StoredPaymentPayload = Type.Object({
  id: Type.String(),
  terminal_id: Type.String(),
  command_id: Type.String(),
  checkout_id: Type.String(),
  payment_intent_id: Nullable(Type.String()),
  offline_reference: Type.String(),
  // Pushed once, when final: never `stored` or `forwarded`.
  status: Type.Union([Type.Literal('approved'), Type.Literal('declined'), Type.Literal('expired')]),
  amount_in_cents: Type.Integer(),
  currency: Type.String(),
  card_network: Nullable(Type.String()),
  card_last4: Nullable(Type.String()),
  over_cap: Nullable(Type.Array(Type.String())),
  reason: Nullable(Type.String()),
  stored_at: Type.String(),
  forward_by: Type.String(),
  forwarded_at: Nullable(Type.String()),
  settled_at: Type.String(),
});

type Payload = (typeof StoredPaymentPayload)['static'];

/**
 * A card a store's terminal stored offline, in its final state: kept at the central
 * (`central_stored_payments`, with the store it came from), once per id. The money itself travels
 * as the payment's `terminal_payment` record (its intent succeeded or failed) and the events as
 * `event` records; this one tells the central which sales were cards taken offline, and which were
 * declined or expired later (the sales the store must collect again). Counted in reconciliation as
 * `records.stored_payment` (count, amount per currency).
 */
export const storedPaymentPush: PushKind<Payload> = {
  payload: StoredPaymentPayload,
  malformed: 'stored_payment record without its id, references, final status, amount or times',
  apply(ctx, record, origin) {
    const p = record.payload;
    const store = storedPaymentsStore(ctx.db);
    if (origin.restoring) {
      // The box takes back its own past after a restore from an older backup: its row, if the backup
      // still had it waiting, becomes what it was (the payment's own record restores the money).
      const row = store.byId(p.id);
      if (row && row.final === 0) {
        store.move({
          id: row.id, from: row.status, status: p.status, final: 1, forwarded_at: p.forwarded_at, settled_at: p.settled_at,
          authorization_code: null, processor_reference: null, reason: p.reason, card_network: p.card_network, card_last4: p.card_last4, updated_at: p.settled_at,
        });
      }
      return;
    }
    store.insertCentral({
      id: p.id,
      origin_store_id: origin.storeId,
      account_id: record.account_id,
      live_mode: record.live_mode ? 1 : 0,
      terminal_id: p.terminal_id,
      command_id: p.command_id,
      checkout_id: p.checkout_id,
      payment_intent_id: p.payment_intent_id,
      offline_reference: p.offline_reference,
      status: p.status,
      amount_in_cents: p.amount_in_cents,
      currency: p.currency,
      card_network: p.card_network,
      card_last4: p.card_last4,
      over_cap: p.over_cap ? JSON.stringify(p.over_cap) : null,
      reason: p.reason,
      stored_at: p.stored_at,
      forward_by: p.forward_by,
      forwarded_at: p.forwarded_at,
      settled_at: p.settled_at,
    });
  },
};
