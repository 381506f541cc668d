/**
 * Hostile requests generated from the daemon's own `/openapi.json` (issue 17): every operation ×
 * malformed path, query, header and body (types, sizes, depth, encodings, prototype keys), drawn
 * from one seeded generator, so a seed names a run and a failure can be replayed.
 */

export type Rng = () => number;

/** mulberry32: small, fast and good enough to spread cases; the same seed gives the same run. */
export function seeded(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)];
const chance = (rng: Rng, p: number) => rng() < p;

export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: unknown[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  format?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  nullable?: boolean;
  const?: unknown;
  additionalProperties?: boolean | JsonSchema;
}

export interface Operation {
  method: string;
  /** `/bookings/{id}` (under /api). */
  path: string;
  pathParams: string[];
  query: Record<string, JsonSchema>;
  body?: JsonSchema;
}

export function operationsOf(doc: { paths: Record<string, Record<string, any>> }): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const params = (op.parameters ?? []) as Array<{ in: string; name: string; schema?: JsonSchema }>;
      ops.push({
        method: method.toUpperCase(),
        path,
        pathParams: params.filter((p) => p.in === 'path').map((p) => p.name),
        query: Object.fromEntries(params.filter((p) => p.in === 'query').map((p) => [p.name, p.schema ?? {}])),
        body: op.requestBody?.content?.['application/json']?.schema,
      });
    }
  }
  return ops.sort((a, b) => `${a.path} ${a.method}`.localeCompare(`${b.path} ${b.method}`));
}

/**
 * A value the schema accepts, most of the time (formats and patterns are only approximated). A
 * field named `*_id` takes one of `ids` (ids the run has seen) half the time, to reach past 404s.
 */
export function sample(schema: JsonSchema | undefined, rng: Rng, depth = 0, ids: readonly string[] = []): unknown {
  if (!schema || depth > 6) return null;
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return pick(rng, schema.enum);
  const options = schema.anyOf ?? schema.oneOf;
  if (options) return sample(pick(rng, options), rng, depth + 1, ids);
  if (schema.allOf) return Object.assign({}, ...schema.allOf.map((s) => sample(s, rng, depth + 1, ids)));
  const type = Array.isArray(schema.type) ? pick(rng, schema.type) : schema.type;
  switch (type) {
    case 'integer':
    case 'number': {
      const lo = schema.minimum ?? 0;
      const hi = Math.min(schema.maximum ?? lo + 10_000, lo + 10_000);
      const n = lo + Math.floor(rng() * (hi - lo + 1));
      return type === 'integer' ? n : n + (chance(rng, 0.3) ? 0.5 : 0);
    }
    case 'boolean':
      return chance(rng, 0.5);
    case 'string':
      return sampleString(schema, rng);
    case 'array': {
      const n = Math.floor(rng() * 3) + (schema.items ? 1 : 0);
      return Array.from({ length: n }, () => sample(schema.items, rng, depth + 1, ids));
    }
    case 'null':
      return null;
    default: {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(schema.properties ?? {})) {
        if (!schema.required?.includes(k) && !chance(rng, 0.5)) continue;
        out[k] = /_id$/.test(k) && ids.length && chance(rng, 0.5) ? pick(rng, ids) : sample(v, rng, depth + 1, ids);
      }
      return out;
    }
  }
}

function sampleString(schema: JsonSchema, rng: Rng): string {
  switch (schema.format) {
    case 'date-time':
      return pick(rng, ['2026-03-02T10:00:00Z', '2026-03-02T10:00:00-06:00', '2031-01-01T00:00:00.000Z']);
    case 'date':
      return pick(rng, ['2026-03-02', '2026-12-31']);
    case 'email':
      return 'a@example.com';
    case 'uri':
    case 'url':
      return pick(rng, ['https://example.com/hook', 'http://127.0.0.1:1/x', 'https://169.254.169.254/latest']);
  }
  const max = Math.min(schema.maxLength ?? 12, 12);
  const min = Math.min(schema.minLength ?? 1, max);
  const len = min + Math.floor(rng() * (max - min + 1));
  return 'abcdefghij'.repeat(2).slice(0, len) || 'a';
}

/** Values of the wrong kind, sizes past any limit, and the strings parsers trip on. */
const HOSTILE_SCALARS: readonly unknown[] = [
  null,
  true,
  false,
  0,
  -1,
  -0,
  1.5,
  1e308,
  -1e308,
  2 ** 53 + 1,
  1e20,
  '',
  ' ',
  '0',
  '-1',
  '1e309',
  'NaN',
  'Infinity',
  'null',
  'true',
  '99999999999999999999',
  '2026-02-30T25:61:00Z',
  '\u0000',
  '\ud800',
  '\u202e\u0301',
  '🙂'.repeat(50),
  '<script>alert(1)</script>',
  "' OR 1=1 --",
  '../../etc/passwd',
  '%00%ff',
  '{{7*7}}',
  '$\u007bjndi:x}',
  'x'.repeat(300),
  [],
  {},
  [[]],
  { a: {} },
];

export const PROTO_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf'] as const;

export function hostile(rng: Rng): unknown {
  const r = rng();
  if (r < 0.08) return 'y'.repeat(pick(rng, [1_000, 10_000, 100_000]));
  if (r < 0.14) return nest(pick(rng, [10, 40, 63, 65, 200]), rng);
  if (r < 0.18) return Array.from({ length: pick(rng, [100, 1000, 5000]) }, () => pick(rng, HOSTILE_SCALARS));
  return pick(rng, HOSTILE_SCALARS);
}

function nest(depth: number, rng: Rng): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = chance(rng, 0.5) ? [v] : { a: v };
  return v;
}

/** A body: sampled from the schema, then one or more fields broken. Some are raw text. */
export function hostileBody(schema: JsonSchema | undefined, rng: Rng, ids: readonly string[] = []): { json?: unknown; raw?: string } {
  const base = (sample(schema ?? { type: 'object' }, rng, 0, ids) ?? {}) as Record<string, unknown>;
  const r = rng();
  if (r < 0.12) return { json: base };
  if (r < 0.22) {
    return {
      raw: pick(rng, [
        '{',
        '{"a":}',
        '[1,2',
        'null',
        '"text"',
        '42',
        '[]',
        '\ufeff{}',
        '{"a":1,"a":2}',
        '{"a":"\\ud800"}',
        '{"a":"\\u0000"}',
        `{"metadata":${'['.repeat(10_000)}${']'.repeat(10_000)}}`,
        `{"a":${'{"a":'.repeat(70)}1${'}'.repeat(70)}}`,
        '{"__proto__":{"admin":true}}',
        '{"constructor":{"prototype":{"admin":true}}}',
        'a=1&b=2',
        '<xml/>',
        '\u0000\u0001\u0002',
        `{"a":"${'\\u'.repeat(3)}"}`,
        '{"amount_in_cents":1e999}',
        '{"amount_in_cents":-0}',
        `{${Array.from({ length: 5000 }, (_, i) => `"k${i}":${i}`).join(',')}}`,
      ]),
    };
  }
  if (typeof base !== 'object' || base === null || Array.isArray(base)) return { json: base };
  const fields = Object.keys(schema?.properties ?? {});
  const n = 1 + Math.floor(rng() * 3);
  for (let i = 0; i < n; i++) {
    const s = rng();
    if (s < 0.6 && fields.length) base[pick(rng, fields)] = hostile(rng);
    else if (s < 0.75) base[pick(rng, PROTO_KEYS)] = hostile(rng);
    else if (s < 0.85) base.metadata = { [pick(rng, PROTO_KEYS)]: hostile(rng), k: hostile(rng) };
    else if (s < 0.95) base[`unknown_${Math.floor(rng() * 5)}`] = hostile(rng);
    else delete base[pick(rng, fields.length ? fields : ['x'])];
  }
  // JSON.stringify drops a __proto__ set by assignment; write such keys into the text itself.
  let text = JSON.stringify(base);
  if (chance(rng, 0.1)) text = text.replace(/^\{/, `{"__proto__":${JSON.stringify(hostile(rng)) ?? 'null'},`).replace(/,\}$/, '}');
  return { raw: text };
}

/** A path segment: a harvested id, or one that is broken in some way. */
export function hostileSegment(rng: Rng, known: readonly string[]): string {
  const r = rng();
  if (r < 0.35 && known.length) return encodeURIComponent(pick(rng, known));
  return pick(rng, [
    'nope',
    'x'.repeat(101),
    'x'.repeat(5000),
    '%00',
    '%E0%A4%A',
    '%ff%fe',
    '..%2F..%2Fetc',
    '%2e%2e',
    encodeURIComponent('🙂'),
    encodeURIComponent("' OR 1=1 --"),
    '__proto__',
    'constructor',
    '-1',
    '0',
    '99999999999999999999',
    'a.json',
    '%20',
    encodeURIComponent('\u0000'),
  ]);
}

/** Percent-encoding of the UTF-8 bytes (a lone surrogate, which encodeURIComponent refuses, included). */
function pct(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return [...Buffer.from(text, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
  }
}

/** A query string: declared parameters with wrong values, unknown and repeated ones, prototype keys. */
export function hostileQuery(query: Record<string, JsonSchema>, rng: Rng): string {
  const names = Object.keys(query);
  const parts: string[] = [];
  const n = Math.floor(rng() * 4);
  for (let i = 0; i < n; i++) {
    const r = rng();
    const value = (v: unknown) => pct(typeof v === 'string' ? v : (JSON.stringify(v) ?? ''));
    if (r < 0.3 && names.length) {
      const name = pick(rng, names);
      parts.push(`${name}=${value(sample(query[name], rng))}`);
    } else if (r < 0.7 && names.length) parts.push(`${pick(rng, names)}=${value(hostile(rng)).slice(0, 20_000)}`);
    else if (r < 0.8 && names.length) parts.push(`${pick(rng, names)}[]=1&${pick(rng, names)}[a]=2`);
    else if (r < 0.9) parts.push(`${pick(rng, PROTO_KEYS)}=1&constructor[prototype][x]=1`);
    else parts.push(pick(rng, ['page=99999999999999999999', 'items=abc', 'per_page=-5', 'x'.repeat(3000), '%zz=1', '&&&=', 'a=%ff']));
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

/** Headers: keys missing, garbled or another environment's; odd content types and idempotency keys. */
export function hostileHeaders(rng: Rng, keys: { test: string; live: string }): Record<string, string> {
  const h: Record<string, string> = {};
  const k = rng();
  if (k < 0.6) h['x-secret-key'] = keys.test;
  else if (k < 0.75) h['x-secret-key'] = keys.live;
  else if (k < 0.8) h['x-secret-key'] = `${keys.test.slice(0, 12)}****`;
  else if (k < 0.85) h['x-secret-key'] = 'sk_test_'.padEnd(5000, 'k');
  else if (k < 0.9) h['x-secret-key'] = pick(rng, ['', 'sk_live_x', 'garbage', 'sk_test_🙂']).replace(/[^\x20-\x7e]/g, '?');
  const r = rng();
  if (r < 0.15) h['idempotency-key'] = pick(rng, ['', 'k'.repeat(256), 'k'.repeat(255), `idem-${Math.floor(rng() * 50)}`, ' ']);
  if (chance(rng, 0.1)) h['x-account-id'] = pick(rng, ['acct_nope', '', 'x'.repeat(300), '__proto__']);
  if (chance(rng, 0.2)) {
    h['content-type'] = pick(rng, [
      'application/json',
      'application/json; charset=utf-16',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=xyz',
      'application/json; charset=latin1',
      '*/*',
      'application/vnd.api+json',
    ]);
  }
  if (chance(rng, 0.05)) h['content-encoding'] = pick(rng, ['gzip', 'br', 'identity', 'x-unknown']);
  if (chance(rng, 0.05)) h.accept = pick(rng, ['text/html', 'application/xml', '*/*;q=0', 'x'.repeat(2000)]);
  return h;
}

/** Bytes no ordinary client sends: broken request lines, lengths, encodings and header sizes. */
export function rawHostile(rng: Rng, path: string, key: string): string {
  return pick(rng, [
    `GET ${path} HTTP/1.1\r\nHost: x\r\nX-Secret-Key: ${key}\r\nX-Big: ${'b'.repeat(20_000)}\r\n\r\n`,
    `POST ${path} HTTP/1.1\r\nHost: x\r\nX-Secret-Key: ${key}\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n{}`,
    `POST ${path} HTTP/1.1\r\nHost: x\r\nX-Secret-Key: ${key}\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
    `POST ${path} HTTP/1.1\r\nHost: x\r\nX-Secret-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: 9\r\n\r\n{"a":"\xff\xfe"}`,
    `GET ${path}\u0000 HTTP/1.1\r\nHost: x\r\n\r\n`,
    `G@T ${path} HTTP/1.1\r\nHost: x\r\n\r\n`,
    `GET ${path} HTTP/9.9\r\nHost: x\r\n\r\n`,
    `GET ${path} HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n`,
    `GET /${'p'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
    `POST ${path} HTTP/1.1\r\nHost: x\r\nX-Secret-Key: ${key}\r\nContent-Length: -1\r\n\r\n`,
    `GET ${path} HTTP/1.1\r\nHost: x\r\nX-Secret-Key: ${key}\r\n\r\nGET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
  ]);
}
