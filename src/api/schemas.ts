import { Type, type TSchema } from '@sinclair/typebox';

/**
 * Schema pieces every area's routes share: the spec's error body, the `:id` path parameter, and a
 * nullable wrapper. One definition, so the OpenAPI document names the error body once.
 */
export const ErrorSchema = Type.Object(
  {
    message: Type.String(),
    code: Type.Optional(Type.String()),
    errors: Type.Optional(Type.Record(Type.String(), Type.Array(Type.String()))),
    refund_id: Type.Optional(Type.String()),
    endpoint: Type.Optional(Type.String()),
  },
  { $id: 'Error', additionalProperties: true },
);

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });

export const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

/** The error body under each status a route may answer with, for a route's `response` map. */
export function errorBodies<S extends number>(...statuses: S[]): Record<S, typeof ErrorSchema> {
  return Object.fromEntries(statuses.map((s) => [s, ErrorSchema])) as Record<S, typeof ErrorSchema>;
}

/** The errors of a route that validates, authenticates, scopes, finds, conflicts and is rate limited. */
export const ErrorResponses = errorBodies(400, 401, 403, 404, 409, 422, 429);
