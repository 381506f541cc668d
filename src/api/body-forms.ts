import type { FastifyRequest, RouteOptions } from 'fastify';

/**
 * The request forms the hosted service accepts, normalised once before validation so no route
 * knows about them (issue 14, parts 4 and 5):
 *
 * - A body wrapped in the resource's singular name (`{"product": {...}}`, `{"payment_intent":
 *   {...}}`) or flat: the official plugin and the Postman collection wrap, the SDKs send flat.
 *   The wrapper name is the route's `config.wrapper`, else the singular of the path's first segment.
 * - Integer fields given as integer-valued strings (`"2"`), as the hosted service's Rails params
 *   accept them; anything else (`"2.5"`, `"two"`) still fails validation.
 * - Unknown fields are refused (400 `unknown_parameter`) rather than dropped: the validator
 *   compiler closes every body object schema that does not say otherwise (`strictBodySchema`),
 *   except free-form maps such as `metadata` (records, which declare `patternProperties`).
 */

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The key a wrapped body uses; `false` when the route takes no wrapped form. */
    wrapper?: string | false;
  }
}

type Schema = Record<string, unknown>;

/** `/products/:id/prices` → `product`; `/payment_intents/:id` → `payment_intent`. */
export function wrapperOf(url: string): string | undefined {
  const segment = url
    .replace(/^\/api/, '')
    .split('/')
    .filter(Boolean)[0];
  if (!segment || segment.startsWith(':')) return undefined;
  if (segment.endsWith('ies')) return `${segment.slice(0, -3)}y`;
  if (segment.endsWith('sses')) return segment.slice(0, -2);
  return segment.endsWith('s') ? segment.slice(0, -1) : segment;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function allows(schema: Schema | undefined, key: string): boolean {
  if (!schema) return false;
  const props = schema.properties as Schema | undefined;
  if (props && key in props) return true;
  for (const branch of [...((schema.anyOf as Schema[]) ?? []), ...((schema.oneOf as Schema[]) ?? []), ...((schema.allOf as Schema[]) ?? [])]) {
    if (allows(branch, key)) return true;
  }
  return false;
}

function isIntegerSchema(schema: Schema): boolean {
  if (schema.type === 'integer' || (Array.isArray(schema.type) && schema.type.includes('integer'))) return true;
  return ((schema.anyOf as Schema[] | undefined) ?? []).some((b) => b.type === 'integer');
}

const INTEGER_TEXT = /^-?(0|[1-9][0-9]{0,15})$/;

/** Integer-valued strings where the schema wants an integer, in place; guided by the schema, so
 * a string field that happens to hold digits (a NIT, a phone) stays a string. */
export function coerceIntegers(schema: Schema | undefined, value: unknown): unknown {
  if (!schema) return value;
  if (typeof value === 'string' && isIntegerSchema(schema) && INTEGER_TEXT.test(value)) return Number(value);
  if (Array.isArray(value)) {
    const items = schema.items as Schema | undefined;
    const itemSchema = items ?? (((schema.anyOf as Schema[] | undefined) ?? []).find((b) => b.type === 'array')?.items as Schema | undefined);
    if (itemSchema) for (let i = 0; i < value.length; i++) value[i] = coerceIntegers(itemSchema, value[i]);
    return value;
  }
  if (isPlainObject(value)) {
    const branches = [schema, ...((schema.anyOf as Schema[]) ?? []), ...((schema.allOf as Schema[]) ?? [])];
    for (const branch of branches) {
      const props = branch.properties as Record<string, Schema> | undefined;
      if (!props) continue;
      for (const [k, sub] of Object.entries(props)) if (k in value) value[k] = coerceIntegers(sub, value[k]);
    }
  }
  return value;
}

/**
 * The body schema as validated: every object that lists `properties` and says nothing about extra
 * keys gets `additionalProperties: false`. A copy, so the OpenAPI document keeps the route's own.
 */
export function strictBodySchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(strictBodySchema);
  if (!isPlainObject(schema)) return schema;
  const out: Schema = {};
  for (const [k, v] of Object.entries(schema)) {
    // Values under these keys are maps of names to schemas, not schemas: copy each schema.
    if ((k === 'properties' || k === 'patternProperties' || k === '$defs' || k === 'definitions') && isPlainObject(v)) {
      out[k] = Object.fromEntries(Object.entries(v).map(([name, s]) => [name, strictBodySchema(s)]));
    } else if (k === 'const' || k === 'enum' || k === 'default' || k === 'examples') {
      out[k] = v;
    } else {
      out[k] = strictBodySchema(v);
    }
  }
  if (out.properties && out.additionalProperties === undefined && out.patternProperties === undefined) out.additionalProperties = false;
  return out;
}

/**
 * A query string schema, closed: `account_id` (the organization key's alias of X-ACCOUNT-ID, read by
 * the API before any route) is always allowed.
 */
export function strictQuerySchema(schema: unknown): unknown {
  const closed = strictBodySchema(schema) as Schema;
  if (!closed.properties) return schema;
  return { ...closed, properties: { account_id: { type: 'string' }, ...(closed.properties as Schema) } };
}

/** Records the wrapper name on every route that takes a body. Registered as an `onRoute` hook. */
export function noteWrapper(route: RouteOptions): void {
  route.config ??= {};
  const config = route.config as { wrapper?: string | false };
  if (config.wrapper === undefined) config.wrapper = wrapperOf(route.url ?? '') ?? false;
}

/**
 * Unwraps and coerces the body in place. A body is unwrapped when it carries the route's wrapper
 * key holding an object and the route's schema has no field of that name; other top-level keys
 * (`account_id` beside the wrapper) stay, and a key given both inside and outside is the inner one.
 */
export function normaliseBody(req: FastifyRequest): void {
  const body = req.body;
  if (!isPlainObject(body)) return;
  const schema = (req.routeOptions.schema?.body ?? undefined) as Schema | undefined;
  const wrapper = (req.routeOptions.config as { wrapper?: string | false }).wrapper;
  let flat: Record<string, unknown> = body;
  if (wrapper && isPlainObject(body[wrapper]) && !allows(schema, wrapper)) {
    const { [wrapper]: inner, ...rest } = body;
    flat = { ...rest, ...(inner as Record<string, unknown>) };
  }
  req.body = coerceIntegers(schema, flat);
}
