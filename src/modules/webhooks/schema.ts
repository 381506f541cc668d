import { Type } from '@sinclair/typebox';
import { Nullable } from '../../api/schemas.js';

export const EndpointSchema = Type.Object({
  id: Type.String(),
  account_id: Type.String(),
  live_mode: Type.Boolean(),
  url: Type.String(),
  description: Nullable(Type.String()),
  disabled: Type.Boolean(),
  disabled_reason: Nullable(Type.String()),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});

export const CreatedEndpointSchema = Type.Composite([EndpointSchema, Type.Object({ signingSecret: Type.String() })]);
export const DeletedEndpointSchema = Type.Composite([EndpointSchema, Type.Object({ deleted: Type.Literal(true) })]);

export const CreateEndpointBody = Type.Object({
  url: Type.String({ minLength: 1, maxLength: 2048 }),
  description: Type.Optional(Nullable(Type.String({ maxLength: 500 }))),
});

export const UpdateEndpointBody = Type.Object({
  description: Type.Optional(Nullable(Type.String({ maxLength: 500 }))),
  disabled: Type.Optional(Type.Boolean()),
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
  status: Type.Union([Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed'), Type.Literal('canceled')]),
  attempt_count: Type.Integer(),
  response_code: Nullable(Type.Integer()),
  last_error: Nullable(Type.String()),
  next_attempt_at: Nullable(Type.String({ format: 'date-time' })),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
  attempts: Type.Array(AttemptSchema),
});
