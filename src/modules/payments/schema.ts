import { Type } from '@sinclair/typebox';

const NS = Type.Union([Type.String(), Type.Null()]);

export const PaymentIntentSchema = Type.Object({
  id: Type.String(),
  account_id: Type.String(),
  live_mode: Type.Boolean(),
  status: Type.String(),
  method: Type.String(),
  amount_in_cents: Type.Integer(),
  currency: Type.String(),
  fee_in_cents: Type.Integer(),
  vat_withheld_in_cents: Type.Integer(),
  checkout_id: Type.String(),
  intent_id: Type.String(),
  customer_id: NS,
  failure_reason: NS,
  card: Type.Union([Type.Object({ network: NS, last4: Type.String() }), Type.Null()]),
  authorization_code: NS,
  processor_reference: NS,
  installments: Type.Union([Type.Integer(), Type.Null()]),
  channel: NS,
  balance_transaction_id: NS,
  tax_invoice_url: NS,
  /** Set when a terminal approved the card offline (a stored payment): when it stored it, when it forwarded it. Stays after the outcome. */
  offline: Type.Union([Type.Object({ stored_at: Type.String(), forwarded_at: NS }), Type.Null()]),
  created_at: Type.String(),
  updated_at: Type.String(),
});

export const PaymentIntentPatch = Type.Object({
  tax_invoice_url: Type.Union([Type.String({ format: 'uri', maxLength: 2000 }), Type.Null()]),
});

export const PayBody = Type.Object({
  method: Type.Union([Type.Literal('card'), Type.Literal('bank_transfer')]),
  outcome: Type.Union([Type.Literal('succeeded'), Type.Literal('failed')]),
  failure_reason: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
});

/** A sandbox payment that waits: payer authentication (card) or a transfer on its way. */
export const PendingBody = Type.Object({
  method: Type.Union([Type.Literal('card'), Type.Literal('bank_transfer'), Type.Literal('crypto')]),
});

/** A checkout paid from another account's balance (sandbox helper): who pays. */
export const PayWithBalanceBody = Type.Object({
  payer_account_id: Type.String({ minLength: 1, maxLength: 64 }),
});

/** The network's confirmation of a crypto payment (sandbox helper): what arrived, the transaction, reverted or not. */
export const CryptoConfirmationBody = Type.Object({
  amount_in_cents: Type.Integer({ minimum: 1, maximum: 100_000_000_000 }),
  transaction_hash: Type.Optional(Type.String({ pattern: '^0x[0-9a-fA-F]{64}$' })),
  outcome: Type.Optional(Type.Union([Type.Literal('confirmed'), Type.Literal('reverted')])),
});

export const PayResult = Type.Object({
  status: Type.String(),
  intent_id: Type.String(),
  payment_intent_id: Type.String(),
  balance_transaction_id: NS,
  checkout_id: Type.String(),
});

/** A bank's notice of a transfer that arrived (sandbox helper): how much, its reference, the sender's comment. */
export const TransferArrivalBody = Type.Object({
  amount_in_cents: Type.Integer({ minimum: 1, maximum: 100_000_000_000 }),
  bank_reference: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  sender_comment: Type.Optional(Type.String({ maxLength: 500 })),
  automated: Type.Optional(
    Type.Boolean({
      description:
        "The bank's automated notice matched the transfer to its checkout (emits automated_bank_transfer_intent.succeeded too when it settles the payment).",
    }),
  ),
});
