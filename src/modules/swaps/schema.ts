import { Type, type Static } from '@sinclair/typebox';
import { PageQuery } from '../../api/pagination.js';

const NS = Type.Union([Type.String(), Type.Null()]);
const Currency = Type.Union([Type.Literal('USD'), Type.Literal('USDC')]);

/** `POST /swaps`: how much of which balance becomes the other (USD ↔ USDC, at par). */
export const CreateSwapBody = Type.Object({
  amount_in_cents: Type.Integer({ minimum: 1, maximum: 100_000_000_000 }),
  from_currency: Currency,
  to_currency: Currency,
});
export type CreateSwapInput = Static<typeof CreateSwapBody>;

/** The exchange's answer about a pending swap (sandbox helper). */
export const AdvanceSwapBody = Type.Object({
  outcome: Type.Union([Type.Literal('completed'), Type.Literal('failed')]),
  failure_reason: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
});

export const SwapSchema = Type.Object({
  id: Type.String(),
  object: Type.Literal('swap'),
  status: Type.Union([Type.Literal('pending'), Type.Literal('completed'), Type.Literal('failed')]),
  amount_in_cents: Type.Integer(),
  currency: Type.String(),
  to_amount_in_cents: Type.Integer(),
  to_currency: Type.String(),
  network: Type.String(),
  transaction_hash: NS,
  failure_reason: NS,
  balance_transaction_id: Type.String(),
  to_balance_transaction_id: NS,
  return_balance_transaction_id: NS,
  account_id: Type.String(),
  live_mode: Type.Boolean(),
  created_at: Type.String(),
  updated_at: Type.String(),
});
export type SwapView = Static<typeof SwapSchema>;

export const SwapListQuery = Type.Object({ ...PageQuery });
