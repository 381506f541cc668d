import { Type } from '@sinclair/typebox';
import { invalid } from './errors.js';

/** Currencies a charge may use. Balances may also hold USDC (spec 2.10) but nothing here charges it. */
export const CHARGE_CURRENCIES = ['GTQ', 'USD'] as const;
export type ChargeCurrency = (typeof CHARGE_CURRENCIES)[number];

export const CurrencySchema = Type.Union(
  CHARGE_CURRENCIES.map((c) => Type.Literal(c)),
  { description: 'GTQ or USD' },
);

/** gaps.md: amounts above 100,000,000 cents per line are refused with 400. */
export const MAX_LINE_CENTS = 100_000_000;

/** gaps.md: the smallest charge through a checkout or a terminal. */
export const MINIMUM_CHARGE_CENTS: Record<ChargeCurrency, number> = { GTQ: 500, USD: 100 };

export const AmountSchema = Type.Integer({ minimum: 1, maximum: MAX_LINE_CENTS });

/** 400 unless `amount` reaches the currency's minimum charge. */
export function assertMinimumCharge(amount: number, currency: string, field = 'amount_in_cents'): void {
  const min = MINIMUM_CHARGE_CENTS[currency as ChargeCurrency];
  if (min === undefined) throw invalid({ currency: `must be one of: ${CHARGE_CURRENCIES.join(', ')}` });
  if (amount < min) throw invalid({ [field]: `must be at least ${min} cents in ${currency}` });
}

/** 400 unless the account holds the currency. */
export function assertAccountCurrency(currencies: readonly string[], currency: string, field = 'currency'): void {
  if (!currencies.includes(currency)) throw invalid({ [field]: `must be one of: ${currencies.join(', ')}` });
}
