/**
 * Validation of decoded messages. Malformed input is a value, never an exception: a link reports
 * it as `invalid` and keeps running, because one bad message from a terminal must not take the
 * store's payments down.
 */
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import type { TSchema } from '@sinclair/typebox';
import { serverMessageSchemas, terminalMessageSchemas, type ServerMessage, type TerminalMessage } from './messages.js';

export type InvalidReason = 'malformed_json' | 'not_an_object' | 'unknown_type' | 'invalid_fields' | 'oversized';

export interface MessageInvalid {
  reason: InvalidReason;
  /** Human-readable detail for logs: the first failing field and why. */
  detail: string;
  /** The message type, when the input had a string `type`. */
  type?: string;
}

export type ParseResult<T> = { ok: true; message: T } | { ok: false; error: MessageInvalid };

export type MessageParser<T> = (json: unknown) => ParseResult<T>;

/** Most a single message may weigh, in UTF-8 bytes of JSON, on either transport. */
export const MAX_MESSAGE_BYTES = 64 * 1024;

/**
 * Each message type's checker, compiled by the first message of that type rather than when this
 * module loads: compiling them all was a few percent of posd's start (issue 16), and a till sends
 * only a few of the types. Undefined for a type the schemas do not have (own keys only).
 */
function checkersOf<M extends Record<string, TSchema>>(schemas: M): (type: string) => TypeCheck<TSchema> | undefined {
  const compiled = new Map<string, TypeCheck<TSchema>>();
  return (type) => {
    let check = compiled.get(type);
    if (!check && Object.hasOwn(schemas, type)) compiled.set(type, (check = TypeCompiler.Compile(schemas[type])));
    return check;
  };
}

/**
 * Rules a schema cannot say: a `stored` result names the terminal's reference, or a forward result
 * could never be matched to it. Returns the failing field, or undefined.
 */
type Rule = (json: Record<string, unknown>) => string | undefined;
const storedNeedsReference = (r: Record<string, unknown>) =>
  r.outcome === 'stored' && typeof r.offline_reference !== 'string' ? 'offline_reference: required with outcome stored' : undefined;
const terminalRules: Record<string, Rule> = {
  result: (json) => storedNeedsReference(json),
  hello: (json) => {
    const list = json.unacknowledged_results as Array<Record<string, unknown>>;
    for (let i = 0; i < list.length; i++) {
      const bad = storedNeedsReference(list[i]);
      if (bad) return `/unacknowledged_results/${i}/${bad}`;
    }
    return undefined;
  },
};

function makeParser<T>(checkerOf: (type: string) => TypeCheck<TSchema> | undefined, rules: Record<string, Rule> = {}): MessageParser<T> {
  return (json) => {
    if (typeof json !== 'object' || json === null || Array.isArray(json)) {
      return { ok: false, error: { reason: 'not_an_object', detail: 'a message must be a JSON object' } };
    }
    const type = (json as { type?: unknown }).type;
    if (typeof type !== 'string') {
      return { ok: false, error: { reason: 'invalid_fields', detail: '/type: must be a string' } };
    }
    const check = checkerOf(type);
    if (!check) return { ok: false, error: { reason: 'unknown_type', detail: `unknown type "${type}"`, type } };
    if (check.Check(json)) {
      const broken = rules[type]?.(json as Record<string, unknown>);
      if (!broken) return { ok: true, message: json as T };
      return { ok: false, error: { reason: 'invalid_fields', detail: broken.startsWith('/') ? broken : `/${broken}`, type } };
    }
    const first = check.Errors(json).First();
    const detail = first ? `${first.path || '/'}: ${first.message}` : 'invalid';
    return { ok: false, error: { reason: 'invalid_fields', detail, type } };
  };
}

/** Validates a message received by posd (sent by a terminal). */
export const parseTerminalMessage: MessageParser<TerminalMessage> = makeParser(checkersOf(terminalMessageSchemas), terminalRules);

/** Validates a message received by a terminal (sent by posd). */
export const parseServerMessage: MessageParser<ServerMessage> = makeParser(checkersOf(serverMessageSchemas));

/** Decodes JSON text then validates it; never throws. */
export function decodeMessage<T>(text: string, parse: MessageParser<T>): ParseResult<T> {
  if (Buffer.byteLength(text, 'utf8') > MAX_MESSAGE_BYTES) {
    return { ok: false, error: { reason: 'oversized', detail: `over ${MAX_MESSAGE_BYTES} bytes` } };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    return { ok: false, error: { reason: 'malformed_json', detail: (err as Error).message } };
  }
  return parse(json);
}
