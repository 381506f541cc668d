import { Type, type TSchema } from '@sinclair/typebox';

/** `/api/outage_reports` in the OpenAPI (ops/outage.ts and ops/outage-central.ts build what it says). */

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
const Link = Type.Union([Type.Literal('central'), Type.Literal('processor')]);
const MoneyCount = { currency: Type.String(), count: Type.Integer(), amount_in_cents: Type.Integer() };

const SaleToCollectSchema = Type.Object({
  stored_payment_id: Type.String(),
  store_id: Nullable(Type.String({ description: 'At a central, the store that reported it; null at the store itself' })),
  status: Type.String(),
  reason: Nullable(Type.String()),
  settled_at: Nullable(Type.String()),
  account_id: Type.String(),
  live_mode: Type.Boolean(),
  terminal_id: Type.String(),
  command_id: Type.String(),
  external_id: Nullable(Type.String()),
  description: Nullable(Type.String()),
  tax_id: Nullable(Type.String()),
  amount_in_cents: Type.Integer(),
  currency: Type.String(),
  card: Type.Object({ network: Nullable(Type.String()), last4: Nullable(Type.String()) }),
  checkout_id: Type.String(),
  checkout_status: Nullable(Type.String()),
  payment_intent_id: Nullable(Type.String()),
  customer: Nullable(
    Type.Object({
      id: Type.String(),
      full_name: Nullable(Type.String()),
      email: Nullable(Type.String()),
      phone: Nullable(Type.String()),
      tax_id: Nullable(Type.String()),
    }),
  ),
});

export const OutageReportSchema = Type.Object({
  store_id: Nullable(Type.String({ description: 'At a central, the store that reported the outage; null at the store itself' })),
  started_at: Type.String(),
  ended_at: Nullable(Type.String({ description: 'null: still going on' })),
  links: Type.Array(Type.Object({ link: Link, started_at: Type.String(), ended_at: Nullable(Type.String()) })),
  sales: Type.Array(Type.Object({ method: Type.String(), ...MoneyCount })),
  taken_offline: Type.Array(Type.Object({ terminal_id: Type.String(), account_id: Type.String(), live_mode: Type.Boolean(), ...MoneyCount }), {
    description: 'The cards stored offline during the outage, per terminal and currency',
  }),
  stored_payments: Type.Array(Type.Object({ status: Type.String(), ...MoneyCount })),
  to_collect: Type.Array(SaleToCollectSchema),
  open_checkouts: Nullable(
    Type.Object(
      {
        total: Type.Integer(),
        items: Type.Array(
          Type.Object({
            id: Type.String(),
            reference: Type.String(),
            account_id: Type.String(),
            live_mode: Type.Boolean(),
            status: Type.String(),
            amount_in_cents: Type.Integer(),
            currency: Type.String(),
            created_at: Type.String(),
          }),
        ),
      },
      { description: 'null at a central: a checkout there does not say which store opened it' },
    ),
  ),
  reconciliation: Type.Object({
    state: Type.Union(['ongoing', 'pushing', 'unchecked', 'equal', 'different', 'not_synced'].map((s) => Type.Literal(s))),
    records_waiting: Type.Integer(),
    checked_at: Nullable(Type.String()),
    differences: Type.Integer(),
  }),
});

/** At a store: its links now. */
const StoreOfflineNow = Type.Object({
  offline: Type.Boolean(),
  links: Type.Array(Type.Object({ link: Link, since: Type.String() })),
  since: Nullable(Type.String()),
  down_for_ms: Type.Integer(),
  stored: Type.Array(Type.Object({ status: Type.String(), ...MoneyCount })),
  records_waiting: Type.Integer(),
  next_deadline: Nullable(Type.String()),
  deadline_in_ms: Nullable(Type.Integer()),
});

/** At a central: the stores it has not heard from past `sync.store_silent_ms`. */
const CentralOfflineNow = Type.Object({
  offline: Type.Boolean(),
  silent_stores: Type.Array(Type.Object({ store_id: Type.String(), since: Type.String() })),
});

export const OutageReportsSchema = Type.Object({
  offline_now: Type.Union([StoreOfflineNow, CentralOfflineNow]),
  outages: Type.Array(OutageReportSchema),
});

export const OutageReportsQuery = Type.Object({
  since: Type.Optional(Type.String({ format: 'date-time', description: 'Only outages still going on at or after this time' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50 })),
  store_id: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: "At a central: one store's outages" })),
});
