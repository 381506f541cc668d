import { Type, type Static } from '@sinclair/typebox';
import { AmountSchema, CurrencySchema } from '../../money.js';

const NullableText = (max: number) => Type.Union([Type.String({ maxLength: max }), Type.Null()]);

export const CashSaleBody = Type.Object({
  amount_in_cents: AmountSchema,
  currency: Type.Optional(CurrencySchema),
  description: Type.Optional(NullableText(500)),
  tax_id: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 32 }), Type.Null()])),
  customer_id: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 64 }), Type.Null()])),
});
export type CashSaleBody = Static<typeof CashSaleBody>;

export const CashSaleSchema = Type.Object({
  id: Type.String(),
  cash_intent_id: Type.String(),
  status: Type.Literal('succeeded'),
  amount_in_cents: Type.Integer(),
  currency: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  tax_id: Type.Union([Type.String(), Type.Null()]),
  tax_invoice_url: Type.Union([Type.String(), Type.Null()]),
  customer_id: Type.Union([Type.String(), Type.Null()]),
  checkout: Type.Object({ id: Type.String(), status: Type.String(), latest_intent: Type.Object({ id: Type.String() }) }),
  created_at: Type.String(),
});
export type CashSale = Static<typeof CashSaleSchema>;
