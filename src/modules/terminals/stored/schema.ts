import { Type } from '@sinclair/typebox';
import { PageQuery } from '../../../api/pagination.js';

/** The API's shapes of stored (offline) card payments, their policy and its audit (docs/stored-payments.md). */

const NS = Type.Union([Type.String(), Type.Null()]);
const NI = (opts = {}) => Type.Union([Type.Integer(opts), Type.Null()]);
const Time = Type.String({ format: 'date-time' });

export const StoredStatus = Type.Union(['stored', 'forwarded', 'approved', 'declined', 'expired'].map((s) => Type.Literal(s)));

export const Caps = Type.Object({
  allowed: Type.Boolean(),
  max_payment_in_cents: Type.Integer(),
  max_total_in_cents: Type.Integer(),
  max_count: Type.Integer(),
  max_age_hours: Type.Integer(),
});

export const TerminalCapsSchema = Type.Object({
  allowed: Type.Union([Type.Boolean(), Type.Null()]),
  max_payment_in_cents: NI(),
  max_total_in_cents: NI(),
  max_count: NI(),
  max_age_hours: NI(),
});

/** What a terminal may store now: the body of terminal protocol 2's `offline_policy`. */
export const PolicyNow = Type.Object({
  allowed: Type.Boolean(),
  currency: Type.String(),
  max_payment_in_cents: Type.Integer(),
  remaining_amount_in_cents: Type.Integer(),
  remaining_count: Type.Integer(),
  max_age_seconds: Type.Integer(),
  forward_by: NS,
});

export const CapLimitSchema = Type.Object({
  cap: Type.String({ description: 'not_allowed, currency, max_payment, max_total, max_count or max_age' }),
  scope: Type.Union([Type.Literal('account'), Type.Literal('terminal')]),
  value: Type.Union([Type.Boolean(), Type.String(), Type.Integer()]),
  left: NI(),
  passed: Type.Boolean(),
});

export const Override = Type.Union([
  Type.Object({ id: Type.String(), until: Time, actor: Type.String(), reason: Type.String(), caps: Type.Record(Type.String(), Type.Integer()) }),
  Type.Null(),
]);

/** At a store: the policy in force. At a central: what each store last reported (`reported`). */
export const OfflinePolicySchema = Type.Object(
  {
    account_id: Type.String(),
    live_mode: Type.Boolean(),
    terminal_id: NS,
    currency: Type.Optional(Type.String()),
    standing_caps: Type.Optional(Caps),
    terminal_caps: Type.Optional(Type.Union([TerminalCapsSchema, Type.Null()])),
    caps: Type.Optional(Caps),
    override: Type.Optional(Override),
    policy: Type.Optional(PolicyNow),
    limits: Type.Optional(Type.Array(CapLimitSchema)),
    reported: Type.Optional(
      Type.Array(
        Type.Object({
          store_id: Type.String(),
          terminal_id: NS,
          action: Type.String(),
          actor: Type.String(),
          at: Time,
          caps: Type.Record(Type.String(), Type.Unknown()),
        }),
      ),
    ),
  },
  { $id: 'OfflinePolicy', description: 'The offline (stored card payment) policy: caps, override, and what a terminal may store now.' },
);

export const StoredPaymentSchema = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('stored_payment'),
    account_id: Type.String(),
    live_mode: Type.Boolean(),
    store_id: Type.Union([Type.String({ description: 'At a central: the store that reported it.' }), Type.Null()]),
    terminal_id: Type.String(),
    command_id: Type.String(),
    checkout_id: Type.String(),
    payment_intent_id: NS,
    offline_reference: Type.String(),
    status: StoredStatus,
    final: Type.Boolean(),
    amount_in_cents: Type.Integer(),
    currency: Type.String(),
    card: Type.Union([Type.Object({ network: NS, last4: Type.String() }), Type.Null()]),
    over_cap: Type.Union([Type.Array(Type.String()), Type.Null()]),
    reason: NS,
    late_outcome: NS,
    stored_at: Time,
    forward_by: Time,
    forwarded_at: NS,
    settled_at: NS,
  },
  { $id: 'StoredPayment', description: 'A card payment a terminal stored offline (store-and-forward), and every state after.' },
);

export const OfflineAuditSchema = Type.Object(
  {
    id: Type.String(),
    account_id: Type.String(),
    live_mode: Type.Boolean(),
    store_id: NS,
    terminal_id: NS,
    action: Type.String({ description: 'caps_set, terminal_caps_set, override_allow or override_revoke' }),
    actor: Type.String({ description: 'The named manager (or the shell user) who made the change.' }),
    reason: Type.String(),
    before: Type.Record(Type.String(), Type.Unknown()),
    after: Type.Record(Type.String(), Type.Unknown()),
    at: Time,
  },
  { $id: 'OfflineAuditEntry' },
);

export const ListStoredQuery = Type.Object({
  ...PageQuery,
  status: Type.Optional(StoredStatus),
  terminal_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
});

const CapFields = {
  max_payment_in_cents: Type.Optional(Type.Integer({ minimum: 0, maximum: 100_000_000 })),
  max_total_in_cents: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000_000 })),
  max_count: Type.Optional(Type.Integer({ minimum: 0, maximum: 100_000 })),
  max_age_hours: Type.Optional(Type.Integer({ minimum: 1, maximum: 168 })),
};
const Reason = Type.String({ minLength: 1, maxLength: 500, description: 'Why: kept in the audit with the manager who made the change.' });

export const AccountCapsBody = Type.Object({ ...CapFields, allowed: Type.Optional(Type.Boolean()), reason: Reason });
const NullableCap = (max: number, min = 0) => Type.Optional(Type.Union([Type.Integer({ minimum: min, maximum: max }), Type.Null()]));
export const TerminalCapsBody = Type.Object({
  allowed: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
  max_payment_in_cents: NullableCap(100_000_000),
  max_total_in_cents: NullableCap(1_000_000_000),
  max_count: NullableCap(100_000),
  max_age_hours: NullableCap(168, 1),
  reason: Reason,
});
export const OverrideBody = Type.Object({ ...CapFields, until: Type.String({ format: 'date-time' }), reason: Reason });
export const RevokeBody = Type.Object({ reason: Reason });

/** The 422 of `POST /terminal_session_commands` while the box is offline and the charge would pass a cap. */
export const OfflineCapReachedSchema = Type.Object(
  {
    message: Type.String(),
    code: Type.String({ description: 'offline_cap_reached (or another 422 code)' }),
    errors: Type.Optional(Type.Record(Type.String(), Type.Array(Type.String()))),
    reason: Type.Optional(Type.String({ description: 'offline_cap_reached: the first cap passed' })),
    caps: Type.Optional(Type.Array(Type.String(), { description: 'offline_cap_reached: every cap passed' })),
    limits: Type.Optional(Type.Array(CapLimitSchema, { description: 'offline_cap_reached: each cap in force, its value and what is left' })),
  },
  { additionalProperties: true, description: 'A 422; offline_cap_reached names each cap, its value and what is left.' },
);
