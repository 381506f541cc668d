/**
 * A response schema as fast-json-stringify is given it: the same schema with the unions it can
 * write without a validator folded into one `type` list. fast-json-stringify picks an `anyOf`
 * branch by running an ajv validator per branch, and compiling those validators was most of a
 * first answer's cost (about 45 ms of `GET /api/test` after a start, issue 16: its answer is an
 * object or an array of them, with a `string | null` and a literal union inside). A union whose
 * branches each have a different JSON type is told apart by that type alone, which
 * fast-json-stringify's type lists do inline (`Array.isArray`, `typeof`), so the JSON written is
 * the same for every answer that matches the schema. Unions it cannot fold (two object shapes, a
 * `$ref`, number beside integer) are left to fast-json-stringify as they are.
 *
 * Only the serializer sees the folded schema: validation and the OpenAPI document keep the route's
 * own. Literal unions lose their list of values here: the value is written as the string, number or
 * boolean it is (fast-json-stringify does not check `enum` either).
 */
type Schema = Record<string, unknown>;

/** Keywords that only describe: two branches may both carry them. */
const ANNOTATIONS = new Set(['title', 'description', 'examples', 'default', 'deprecated', 'readOnly', 'writeOnly', '$comment']);
/** A branch with one of these is not a plain one-type schema. */
const NOT_PLAIN = ['anyOf', 'oneOf', 'allOf', 'not', 'if', 'then', 'else', '$ref', '$id', 'nullable'];
const CONST_TYPES: Record<string, string> = { string: 'string', number: 'number', boolean: 'boolean' };

const isSchema = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

export function serializerSchema(schema: unknown): unknown {
  if (!isSchema(schema)) return schema;
  // String keys only: TypeBox's symbols (its Kind) would name a union that is none any more.
  const out: Schema = Object.fromEntries(Object.entries(schema));
  for (const key of ['properties', 'patternProperties', '$defs', 'definitions']) {
    const map = schema[key];
    if (isSchema(map)) out[key] = Object.fromEntries(Object.entries(map).map(([k, v]) => [k, serializerSchema(v)]));
  }
  for (const key of ['additionalProperties', 'not', 'if', 'then', 'else', 'contains']) {
    if (isSchema(schema[key])) out[key] = serializerSchema(schema[key]);
  }
  for (const key of ['items', 'prefixItems', 'allOf', 'anyOf', 'oneOf']) {
    const value = schema[key];
    if (Array.isArray(value)) out[key] = value.map(serializerSchema);
    else if (isSchema(value)) out[key] = serializerSchema(value);
  }
  return Array.isArray(out.anyOf) ? foldUnion(out) : out;
}

/** One branch as a single JSON type and its other keywords, or undefined when it is not that plain. */
function plainBranch(branch: unknown): { type: string; literal: boolean; rest: Schema } | undefined {
  if (!isSchema(branch) || NOT_PLAIN.some((k) => k in branch)) return undefined;
  const { type, const: value, enum: values, ...rest } = branch;
  if (value !== undefined || values !== undefined) {
    // A literal (TypeBox's Literal is `{ const, type }`): written as the value it is.
    const literals = value !== undefined ? [value] : Array.isArray(values) ? values : [];
    const types = new Set(literals.map((v) => (v === null ? 'null' : CONST_TYPES[typeof v])));
    const only = [...types][0];
    if (types.size !== 1 || only === undefined || (type !== undefined && type !== only)) return undefined;
    return { type: only, literal: true, rest };
  }
  return typeof type === 'string' ? { type, literal: false, rest } : undefined;
}

type Plain = NonNullable<ReturnType<typeof plainBranch>>;

function foldUnion(schema: Schema): Schema {
  const { anyOf, ...siblings } = schema;
  const branches = (anyOf as unknown[]).map(plainBranch);
  if (branches.length === 0 || branches.some((b) => b === undefined)) return schema;
  const byType = new Map<string, Plain>();
  for (const b of branches as Plain[]) {
    const seen = byType.get(b.type);
    if (!seen) byType.set(b.type, b);
    // Two branches of one type are told apart only by their values: literals alone may share a type.
    else if (!(b.literal && seen.literal && Object.keys(b.rest).every((k) => ANNOTATIONS.has(k)))) return schema;
  }
  // 5 is both a number and an integer: which branch wins is ajv's order, not the type's.
  if (byType.has('number') && byType.has('integer')) return schema;
  const folded: Schema = { ...siblings };
  for (const { rest } of byType.values()) {
    for (const [k, v] of Object.entries(rest)) {
      // An object's and an array's keywords never meet; anything else two branches share must only describe.
      if (k in folded && !ANNOTATIONS.has(k)) return schema;
      if (!(k in folded)) folded[k] = v;
    }
  }
  const types = [...byType.keys()];
  folded.type = types.length === 1 ? types[0] : types;
  return folded;
}
