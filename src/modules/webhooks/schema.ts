import { Type, type TSchema } from '@sinclair/typebox';
import { Nullable } from '../../api/schemas.js';

/** Nullable with a description for OpenAPI. */
const Described = <S extends TSchema>(t: S, description: string) => Type.Union([t, Type.Null()], { description });

export const EndpointSchema = Type.Object({
  id: Type.String(),
  account_id: Type.String(),
  live_mode: Type.Boolean(),
  url: Type.String(),
  description: Nullable(Type.String()),
  disabled: Type.Boolean(),
  disabled_reason: Nullable(Type.String()),
  filter_types: Described(Type.Array(Type.String()), 'The event types the endpoint receives (Svix: filterTypes); null: every type.'),
  failing_since: Described(Type.String({ format: 'date-time' }), 'Since when every automatic attempt to it has failed; null: not failing.'),
  rate_limit: Described(Type.Integer(), 'Messages per second at most (Svix: rateLimit); null: no limit.'),
  max_in_flight: Described(Type.Integer(), 'Attempts in flight at most, of webhooks.concurrency; null: no cap.'),
  fifo: Type.Boolean({ description: 'First-in-first-out delivery: one delivery at a time, in event order (Svix: FIFO endpoints).' }),
  previous_secret_expires_at: Described(
    Type.String({ format: 'date-time' }),
    'After a secret rotation: until when deliveries also carry the signature by the replaced secret.',
  ),
  metadata: Type.Record(Type.String(), Type.String(), { description: 'Strings the integrator keeps on the endpoint (hosted section 13).' }),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
  createdAt: Type.String({ format: 'date-time', description: 'created_at under the hosted (Svix) name.' }),
  updatedAt: Type.String({ format: 'date-time', description: 'updated_at under the hosted (Svix) name.' }),
});

export const CreatedEndpointSchema = Type.Composite([EndpointSchema, Type.Object({ signingSecret: Type.String() })]);
export const DeletedEndpointSchema = Type.Composite([EndpointSchema, Type.Object({ deleted: Type.Literal(true) })]);

const FilterTypes = Described(
  Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { minItems: 1, maxItems: 500 }),
  "Catalogue event types (docs/events.md) the endpoint receives; null or absent: every type (Svix's filterTypes).",
);

const RateLimit = Described(
  Type.Integer({ minimum: 1, maximum: 100_000 }),
  'Messages per second at most, over every 1-second window; null or absent: no limit.',
);
const MaxInFlight = Described(
  Type.Integer({ minimum: 1, maximum: 1000 }),
  "Attempts in flight at most: a slow receiver never holds more of the worker's slots; null or absent: webhooks.endpoint_max_in_flight (8 by default).",
);

/** Hosted section 13: a string map (≤50 keys, as checkouts' metadata). */
const EndpointMetadata = Type.Record(Type.String({ minLength: 1, maxLength: 40 }), Type.String({ maxLength: 500 }), { maxProperties: 50 });

const Fifo = Type.Boolean({
  description:
    'First-in-first-out delivery (default false): at most one delivery in flight, and the next is not sent until the earlier one succeeded or was given up after its retries (docs/webhooks.md).',
});

export const CreateEndpointBody = Type.Object({
  url: Type.String({ minLength: 1, maxLength: 2048 }),
  description: Type.Optional(Nullable(Type.String({ maxLength: 500 }))),
  filter_types: Type.Optional(FilterTypes),
  rate_limit: Type.Optional(RateLimit),
  max_in_flight: Type.Optional(MaxInFlight),
  fifo: Type.Optional(Fifo),
  metadata: Type.Optional(EndpointMetadata),
});

export const UpdateEndpointBody = Type.Object({
  url: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 2048,
      description:
        'Moves the endpoint (through the same URL checks as creation); its id, secret, filters and deliveries stay; the change is kept in its history.',
    }),
  ),
  description: Type.Optional(Nullable(Type.String({ maxLength: 500 }))),
  metadata: Type.Optional(EndpointMetadata),
  disabled: Type.Optional(Type.Boolean()),
  filter_types: Type.Optional(FilterTypes),
  rate_limit: Type.Optional(RateLimit),
  max_in_flight: Type.Optional(MaxInFlight),
  fifo: Type.Optional(Fifo),
  replay_missed: Type.Optional(
    Type.Boolean({
      description:
        'With disabled: false on a disabled endpoint: send again what its disabling canceled and the events it missed while disabled (a replay, in `replay`).',
    }),
  ),
});

const DeliveryStatus = Type.Union([Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed'), Type.Literal('canceled')]);

export const RotateSecretBody = Type.Object({
  overlap_seconds: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: 30 * 86_400,
      description: 'How long the replaced secret keeps signing beside the new one (default 86400: 24 hours).',
    }),
  ),
});

export const ReplayBody = Type.Object({
  since: Type.Optional(Type.String({ format: 'date-time', description: 'Deliveries made at or after this time (default: all kept).' })),
  until: Type.Optional(Type.String({ format: 'date-time', description: 'Deliveries made before this time (default: now).' })),
  event_types: Type.Optional(Nullable(Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { minItems: 1, maxItems: 500 }))),
  statuses: Type.Optional(Nullable(Type.Array(DeliveryStatus, { minItems: 1, maxItems: 4, description: 'e.g. ["failed", "canceled"]; null or absent: any.' }))),
});

export const ReplaySchema = Type.Object({
  id: Type.String(),
  endpoint_id: Type.String(),
  total: Type.Integer({ description: 'Deliveries the replay made: one per event, with the event id as webhook-id.' }),
  pending: Type.Integer(),
  succeeded: Type.Integer(),
  failed: Type.Integer(),
  canceled: Type.Integer(),
  filters: Type.Object({
    since: Type.String({ format: 'date-time' }),
    until: Type.String({ format: 'date-time' }),
    event_types: Nullable(Type.Array(Type.String())),
    statuses: Nullable(Type.Array(DeliveryStatus)),
    missed: Type.Optional(Type.Boolean()),
  }),
  created_at: Type.String({ format: 'date-time' }),
});

export const UpdatedEndpointSchema = Type.Composite([EndpointSchema, Type.Object({ replay: Type.Optional(ReplaySchema) })]);

export const ReplayParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 64 }),
  replay_id: Type.String({ minLength: 1, maxLength: 64 }),
});

export const TestBody = Type.Object({ event_type: Type.String({ minLength: 1, maxLength: 100 }) });

export const EndpointParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });
export const DeliveryParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 64 }),
  delivery_id: Type.String({ minLength: 1, maxLength: 64 }),
});

export const AttemptSchema = Type.Object({
  attempt: Type.Integer(),
  manual: Type.Boolean(),
  attempted_at: Type.String({ format: 'date-time' }),
  webhook_timestamp: Type.Integer(),
  duration_ms: Type.Integer(),
  response_code: Nullable(Type.Integer()),
  response_body: Described(Type.String(), "The first 1,024 bytes of the answer's body, as UTF-8 (null: none, or no answer)."),
  error: Nullable(Type.String()),
});

export const DeliverySchema = Type.Object({
  id: Type.String(),
  endpoint_id: Type.String(),
  event_id: Type.String(),
  event_type: Type.String(),
  account_id: Type.String(),
  connected: Type.Boolean(),
  test: Type.Boolean(),
  status: DeliveryStatus,
  attempt_count: Type.Integer(),
  response_code: Nullable(Type.Integer()),
  last_error: Nullable(Type.String()),
  next_attempt_at: Nullable(Type.String({ format: 'date-time' })),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
  attempts: Type.Array(AttemptSchema),
});

export const HistorySchema = Type.Object({
  field: Type.String({ description: 'What changed (url).' }),
  old_value: Nullable(Type.String()),
  new_value: Nullable(Type.String()),
  actor: Described(Type.String(), 'The id of the API key that made the change.'),
  changed_at: Type.String({ format: 'date-time' }),
});
