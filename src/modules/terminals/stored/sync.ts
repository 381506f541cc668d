import { Type } from '@sinclair/typebox';
import type { PushKind } from '../../../sync/shared/registry.js';
import { storedPaymentsStore } from './store.js';
import { centralStoredStore } from './central-store.js';
import { checkPolicyChange, checkStoredPayment } from './central-checks.js';

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
  // What the till gave with the charge, for the central's to-collect list (absent from older boxes).
  external_id: Type.Optional(Nullable(Type.String({ maxLength: 255 }))),
  description: Type.Optional(Nullable(Type.String({ maxLength: 255 }))),
  tax_id: Type.Optional(Nullable(Type.String({ maxLength: 64 }))),
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
  // Checked as the API checks an amount; counted in reconciliation, it moves no money itself.
  money: (p) => [{ field: 'amount_in_cents', amount: p.amount_in_cents, currency: p.currency }],
  check: (ctx, record, origin) => checkStoredPayment(ctx, record, origin),
  apply(ctx, record, origin) {
    const p = record.payload;
    const store = storedPaymentsStore(ctx.db);
    if (origin.restoring) {
      // The box takes back its own past after a restore from an older backup: its row, if the backup
      // still had it waiting, becomes what it was (the payment's own record restores the money).
      const row = store.byId(p.id);
      if (row && row.final === 0) {
        store.move({
          id: row.id,
          from: row.status,
          status: p.status,
          final: 1,
          forwarded_at: p.forwarded_at,
          settled_at: p.settled_at,
          authorization_code: null,
          processor_reference: null,
          reason: p.reason,
          card_network: p.card_network,
          card_last4: p.card_last4,
          updated_at: p.settled_at,
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
      external_id: p.external_id ?? null,
      description: p.description ?? null,
      tax_id: p.tax_id ?? null,
    });
  },
};

// Value.Check knows no `format` here (no format registry): the shape of posd's own times instead.
const ISO_TIME = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?Z$';

const CapsObject = Type.Object(
  {
    allowed: Type.Optional(Nullable(Type.Boolean())),
    max_payment_in_cents: Type.Optional(Nullable(Type.Integer({ minimum: 0 }))),
    max_total_in_cents: Type.Optional(Nullable(Type.Integer({ minimum: 0 }))),
    max_count: Type.Optional(Nullable(Type.Integer({ minimum: 0 }))),
    max_age_hours: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 168 }))),
    until: Type.Optional(Type.String({ pattern: ISO_TIME })),
  },
  { additionalProperties: false },
);

/** The fields of an `offline_policy_change` record (stored/changes.ts): one audited change, as the audit shows it. */
export const OfflinePolicyChangePayload = Type.Object({
  id: Type.String({ pattern: '^oa_', maxLength: 64 }),
  terminal_id: Nullable(Type.String({ minLength: 1, maxLength: 64 })),
  action: Type.Union([Type.Literal('caps_set'), Type.Literal('terminal_caps_set'), Type.Literal('override_allow'), Type.Literal('override_revoke')]),
  // Every change names a person and a reason: a change without them is no fact the central keeps.
  actor: Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' }),
  reason: Type.String({ minLength: 1, maxLength: 500, pattern: '\\S' }),
  before: CapsObject,
  after: CapsObject,
  at: Type.String({ pattern: ISO_TIME }),
});

type ChangePayload = (typeof OfflinePolicyChangePayload)['static'];

/**
 * A store's change of its offline policy (a cap, a terminal's cap, a manager's override or its end),
 * checked like every pushed fact: at receipt (the schema above, and a terminal's change names its
 * terminal), then at projection (stored/central-checks.ts: dated as its record, whole, an override's
 * end within 7 days, a revoke only of an override in force, the terminal this store's), and kept at the central once per id (`central_offline_audit`), with the store it came
 * from: the central's `/offline_audit` and `/offline_policy` read these. Moves no money.
 */
export const offlinePolicyChangePush: PushKind<ChangePayload> = {
  payload: OfflinePolicyChangePayload,
  consistent: (p) => (p.action === 'terminal_caps_set') === (p.terminal_id !== null),
  malformed: 'offline_policy_change record without its id, a person, a reason, a known action, valid caps, or with a terminal only where a terminal changed',
  totals: () => null,
  check: (ctx, record, origin) => checkPolicyChange(ctx, record, origin),
  apply(ctx, record, origin) {
    // A box taking back its own past after a restore has the audit row already, or lost it with the backup: nothing to redo.
    if (origin.restoring) return;
    const p = record.payload;
    centralStoredStore(ctx.db).insertAudit({
      id: p.id,
      origin_store_id: origin.storeId,
      account_id: record.account_id,
      live_mode: record.live_mode ? 1 : 0,
      terminal_id: p.terminal_id,
      action: p.action,
      actor: p.actor,
      reason: p.reason,
      before: JSON.stringify(p.before),
      after: JSON.stringify(p.after),
      at: p.at,
    });
  },
};
