import { Type, type Static } from '@sinclair/typebox';
import { PageQuery } from '../../api/pagination.js';
import { BankAccountSchema } from '../bank-accounts/schema.js';

const NullableString = Type.Union([Type.String(), Type.Null()]);
const Time = Type.String({ format: 'date-time' });
const NullableTime = Type.Union([Time, Type.Null()]);

/** gaps.md: amounts above 100,000,000 cents are refused with 400. */
export const MAX_AMOUNT_IN_CENTS = 100_000_000;
const Amount = Type.Integer({ minimum: 1, maximum: MAX_AMOUNT_IN_CENTS });
const Currency = Type.Union([Type.Literal('GTQ'), Type.Literal('USD')]);

export const TRANSFER_STATUSES = ['succeeded', 'in_review', 'cancelled', 'pending', 'in_transit', 'paid', 'failed'] as const;
/** As answered: a peer transfer's `succeeded` is named `completed`, as hosted (views.ts answeredStatus). */
const Status = Type.Union([...TRANSFER_STATUSES, 'completed' as const].map((s) => Type.Literal(s)));
const Party = Type.Object({
  id: Type.String(),
  name: NullableString,
  type: Type.Union([Type.Literal('account'), Type.Literal('bank_account')]),
});
const WithdrawalStatus = Type.Union([Type.Literal('pending'), Type.Literal('in_transit'), Type.Literal('paid'), Type.Literal('failed')]);

/**
 * The unified transfer form (GET /transfers/{id}, and the `transfer` key of withdrawal events): one
 * shape for money that left an account, to another account of the installation (`peer`) or to a
 * bank account (`withdrawal`), seen from the reading account (`direction`, `balance_transaction_id`).
 */
export const TransferSchema = Type.Object({
  id: Type.String(),
  object: Type.Literal('transfer'),
  kind: Type.Union([Type.Literal('peer'), Type.Literal('withdrawal')]),
  direction: Type.Union([Type.Literal('outgoing'), Type.Literal('incoming')]),
  status: Status,
  amount_in_cents: Type.Integer(),
  currency: Type.String(),
  account_id: Type.String(),
  sender_id: Type.String(),
  recipient_id: NullableString,
  sender: Party,
  recipient: Type.Union([Party, Type.Null()]),
  bank_account: Type.Union([BankAccountSchema, Type.Null()]),
  note: NullableString,
  balance_transaction_id: Type.String(),
  return_balance_transaction_id: NullableString,
  failure_reason: NullableString,
  live_mode: Type.Boolean(),
  created_at: Time,
  updated_at: Time,
});
export type TransferView = Static<typeof TransferSchema>;

export const WithdrawalSchema = Type.Object({
  id: Type.String(),
  object: Type.Literal('withdrawal'),
  account_id: Type.String(),
  amount_in_cents: Type.Integer(),
  currency: Type.String(),
  status: WithdrawalStatus,
  bank_account_id: Type.String(),
  bank_account: Type.Union([BankAccountSchema, Type.Null()]),
  balance_transaction_id: Type.String(),
  return_balance_transaction_id: NullableString,
  failure_reason: NullableString,
  live_mode: Type.Boolean(),
  created_at: Time,
  updated_at: Time,
  in_transit_at: NullableTime,
  paid_at: NullableTime,
  failed_at: NullableTime,
});
export type WithdrawalView = Static<typeof WithdrawalSchema>;

export const CreateTransferBody = Type.Object({
  amount_in_cents: Amount,
  currency: Currency,
  recipient_id: Type.String({ minLength: 1, maxLength: 64 }),
  note: Type.Optional(Type.Union([Type.String({ maxLength: 500 }), Type.Null()])),
});
export type CreateTransferInput = Static<typeof CreateTransferBody>;

export const CreateWithdrawalBody = Type.Object({
  amount_in_cents: Amount,
  currency: Currency,
  bank_account_id: Type.String({ minLength: 1, maxLength: 64 }),
});
export type CreateWithdrawalInput = Static<typeof CreateWithdrawalBody>;

export const AdvanceWithdrawalBody = Type.Object({
  outcome: Type.Union([Type.Literal('in_transit'), Type.Literal('paid'), Type.Literal('failed')]),
  failure_reason: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
});

/** The reviewer's decision on a held transfer (sandbox helper, `posd transfers review`). */
export const ReviewTransferBody = Type.Object({
  outcome: Type.Union([Type.Literal('succeeded'), Type.Literal('cancelled')]),
  /** Why it was cancelled (shown as `failure_reason`); default `rejected_in_review`. */
  reason: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
});

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });
export const TransferListQuery = Type.Object({
  ...PageQuery,
  kind: Type.Optional(Type.Union([Type.Literal('peer'), Type.Literal('withdrawal')])),
});
export const WithdrawalListQuery = Type.Object({ ...PageQuery, status: Type.Optional(WithdrawalStatus) });
