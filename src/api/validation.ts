import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import formatsPlugin from 'ajv-formats';

// ajv-formats is CommonJS: under NodeNext its function is the default export's default.
const addFormats = (formatsPlugin as unknown as { default: typeof formatsPlugin.default }).default;
import type { FastifySchemaCompiler } from 'fastify';
import { strictBodySchema, strictQuerySchema } from './body-forms.js';

/**
 * Bodies are validated strictly: a string where a number goes is an error, never coerced (money
 * amounts must be what the caller meant). Query strings and path parameters are text by nature and
 * are coerced. `allErrors` so a 400 names every bad field at once.
 */
function makeAjv(coerce: boolean, allErrors = true): Ajv {
  const ajv = new Ajv({
    coerceTypes: coerce ? 'array' : false,
    useDefaults: true,
    // Off: an unknown body field is refused by name (`unknown_parameter`), never silently dropped;
    // body schemas are closed by `strictBodySchema`.
    removeAdditional: false,
    allErrors,
    strict: false,
  });
  addFormats(ajv);
  return ajv;
}

/**
 * Each route's validator is compiled by its first request, not at start: compiling every route's
 * schemas with Ajv was most of a start (issue 16: start under 0.5 s). fastify reads `.errors` from
 * the function it was given after a failed call, so the wrapper hands over the compiled one's.
 */
export function createValidatorCompiler(): FastifySchemaCompiler<unknown> {
  let strict: Ajv | undefined;
  let strictFirst: Ajv | undefined;
  let coercing: Ajv | undefined;
  return ({ schema, httpPart }) => {
    let compiled: ValidateFunction | undefined;
    const compile = (): ValidateFunction => {
      if (httpPart === 'body') return (strict ??= makeAjv(false)).compile(strictBodySchema(schema) as object);
      // A list refuses a filter it does not know rather than answering unfiltered (issue 14 part 7).
      if (httpPart === 'querystring') return (coercing ??= makeAjv(true)).compile(strictQuerySchema(schema) as object);
      return (coercing ??= makeAjv(true)).compile(schema as object);
    };
    if (httpPart !== 'body') {
      const validate = (data: unknown) => {
        compiled ??= compile();
        return compiled(data);
      };
      Object.defineProperty(validate, 'errors', { get: () => compiled?.errors });
      return validate;
    }
    // Bodies: a first pass that stops at the first error, so a huge body of bad elements costs one
    // error object, not one per element (issue 17 hole 4: a 960 KB body made 5 MB of errors and
    // hundreds of MB of heap). Only a body small enough to list every fault is validated again with
    // every error collected, so a 400 still names each bad field of an ordinary request.
    let first: ValidateFunction | undefined;
    let errors: ErrorObject[] | null | undefined;
    const validate = (data: unknown) => {
      first ??= (strictFirst ??= makeAjv(false, false)).compile(strictBodySchema(schema) as object);
      if (first(data)) {
        errors = null;
        return true;
      }
      if (nodesOver(data, FULL_REPORT_NODES)) {
        errors = first.errors;
        return false;
      }
      compiled ??= compile();
      compiled(data);
      errors = compiled.errors ?? first.errors;
      return false;
    };
    Object.defineProperty(validate, 'errors', { get: () => errors });
    return validate;
  };
}

/** Bodies with more values than this are refused on their first fault alone. */
const FULL_REPORT_NODES = 2_000;

/** Whether `value` holds more than `limit` values, counting no further than `limit`. */
function nodesOver(value: unknown, limit: number): boolean {
  let seen = 0;
  const stack: unknown[] = [value];
  while (stack.length) {
    const v = stack.pop();
    if (++seen > limit) return true;
    if (v !== null && typeof v === 'object') {
      for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push(child);
      if (stack.length > limit) return true;
    }
  }
  return false;
}

function fieldOf(error: ErrorObject): string {
  const base = error.instancePath.replace(/^\//, '').replace(/\//g, '.');
  if (error.keyword === 'required') {
    const missing = (error.params as { missingProperty: string }).missingProperty;
    return base ? `${base}.${missing}` : missing;
  }
  return base || '(body)';
}

function messageOf(error: ErrorObject): string {
  switch (error.keyword) {
    case 'required':
      return 'is required';
    case 'type':
      return `must be ${(error.params as { type: string }).type}`;
    case 'enum':
      return `must be one of: ${(error.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`;
    case 'const':
      return `must be ${JSON.stringify((error.params as { allowedValue: unknown }).allowedValue)}`;
    default:
      return error.message ?? 'is invalid';
  }
}

/**
 * At most this many fields, each named and described in at most this many characters: a body of
 * thousands of bad elements must not get an answer five times its size (issue 17).
 */
const MAX_FIELDS = 20;
const MAX_TEXT = 200;
const bounded = (text: string) => (text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT - 1)}…` : text);

/** Ajv's errors as the spec's `errors` object: field name to a list of messages. */
export function fieldErrors(errors: ErrorObject[], part: string | undefined): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  let fields = 0;
  // A union (anyOf) reports every branch; keep the messages but say them once per field.
  for (const error of errors) {
    if (error.keyword === 'anyOf' || error.keyword === 'oneOf') continue;
    const field = bounded(part === 'params' || part === 'querystring' || part === 'body' || !part ? fieldOf(error) : `${part}.${fieldOf(error)}`);
    if (!out[field] && ++fields > MAX_FIELDS) {
      out['(more)'] = [`only the first ${MAX_FIELDS} fields in error are listed`];
      break;
    }
    const list = (out[field] ??= []);
    const msg = bounded(messageOf(error));
    if (!list.includes(msg)) list.push(msg);
  }
  if (Object.keys(out).length === 0 && errors[0]) out[fieldOf(errors[0])] = [messageOf(errors[0])];
  return out;
}

/**
 * The body fields no schema knows (ajv `additionalProperties`), as dotted paths: at most MAX_FIELDS,
 * each bounded, then `(more)` (a body of 5,000 unknown keys got a 200 KB answer).
 */
export function unknownFields(errors: ErrorObject[]): string[] {
  const out: string[] = [];
  for (const e of errors) {
    if (e.keyword !== 'additionalProperties') continue;
    const base = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
    const name = (e.params as { additionalProperty: string }).additionalProperty;
    const field = bounded(base ? `${base}.${name}` : name);
    if (out.includes(field)) continue;
    if (out.length === MAX_FIELDS) {
      out.push('(more)');
      break;
    }
    out.push(field);
  }
  return out;
}
