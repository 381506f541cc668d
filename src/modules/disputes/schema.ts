import { Type, type Static } from '@sinclair/typebox';

const NullableString = Type.Union([Type.String(), Type.Null()]);
const Time = Type.String({ format: 'date-time' });

/** The card networks' reason codes, grouped as processors report them. */
export const DISPUTE_REASONS = [
  'fraudulent',
  'product_not_received',
  'product_unacceptable',
  'duplicate',
  'subscription_canceled',
  'credit_not_processed',
  'general',
] as const;
const Reason = Type.Union(DISPUTE_REASONS.map((r) => Type.Literal(r)));
export const DISPUTE_STATUSES = ['needs_response', 'under_review', 'won', 'lost'] as const;
const Status = Type.Union(DISPUTE_STATUSES.map((s) => Type.Literal(s)));

/** A dispute as the test helpers answer it and the `dispute.*` events carry it (docs/events.md). */
export const DisputeSchema = Type.Object({
  id: Type.String(),
  object: Type.Literal('dispute'),
  account_id: Type.String(),
  live_mode: Type.Boolean(),
  payment_intent_id: Type.String(),
  intent_id: Type.String(),
  status: Status,
  reason: Type.String(),
  amount_in_cents: Type.Integer(),
  currency: Type.String(),
  balance_transaction_id: Type.String(),
  reversal_balance_transaction_id: NullableString,
  created_at: Time,
  updated_at: Time,
  closed_at: Type.Union([Time, Type.Null()]),
});
export type DisputeView = Static<typeof DisputeSchema>;

/** What the card network's notice of a new dispute says (sandbox: the test helper's body). */
export const OpenDisputeBody = Type.Object({
  reason: Type.Optional(Reason),
  /** Part of the payment (a partial chargeback); the whole payment when left out. */
  amount_in_cents: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000_000 })),
});
export type OpenDisputeInput = Static<typeof OpenDisputeBody>;

export const AdvanceDisputeBody = Type.Object({
  outcome: Type.Union([Type.Literal('under_review'), Type.Literal('won'), Type.Literal('lost')]),
});
