import { Type } from '@sinclair/typebox';
import { PageQuery } from '../../api/pagination.js';

export const BALANCE_TRANSACTION_TYPES = ['charge', 'refund', 'payout', 'dispute', 'transfer', 'adjustment', 'payment', 'swap'] as const;

export const BalanceTransactionSchema = Type.Object({
  id: Type.String(),
  account_id: Type.String(),
  live_mode: Type.Boolean(),
  type: Type.String(),
  amount_in_cents: Type.Integer(),
  fee_in_cents: Type.Integer(),
  net_amount_in_cents: Type.Integer(),
  currency: Type.String(),
  balance_after_in_cents: Type.Integer(),
  fee_details: Type.Object({ commission_in_cents: Type.Integer(), vat_withheld_in_cents: Type.Integer() }),
  source_id: Type.String(),
  source_type: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.String(),
});

export const BalanceTransactionQuery = Type.Object({
  ...PageQuery,
  from_time: Type.Optional(Type.String({ minLength: 1, maxLength: 40 })),
  until_time: Type.Optional(Type.String({ minLength: 1, maxLength: 40 })),
  currency: Type.Optional(Type.Union(['GTQ', 'USD', 'USDC'].map((c) => Type.Literal(c)))),
  type: Type.Optional(Type.Union(BALANCE_TRANSACTION_TYPES.map((t) => Type.Literal(t)))),
});

/**
 * A ledger row inside a pushed sync record (payment, refund, transfer): the fields the central's
 * appliers rely on, checked before they post it (src/sync/shared/registry.ts).
 */
export const SyncedLedgerRow = Type.Object({ id: Type.String(), amount_in_cents: Type.Number(), fee_in_cents: Type.Number() });

/**
 * A pushed ledger row's amounts, as the central checks them at receipt (`MoneyField` in
 * src/sync/registry.ts): a movement either way, its fee, and its net when carried (net = amount + fee).
 */
export function syncedLedgerMoney(
  field: string,
  row: unknown,
): Array<{ field: string; amount: unknown; currency?: unknown; fee?: unknown; net?: unknown; signed: true }> {
  if (!row || typeof row !== 'object') return [];
  const r = row as Record<string, unknown>;
  return [
    { field: `${field}.amount_in_cents`, amount: r.amount_in_cents, currency: r.currency, fee: r.fee_in_cents, net: r.net_amount_in_cents, signed: true },
  ];
}
