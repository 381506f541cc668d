import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import fastJson from 'fast-json-stringify';
import { Type } from '@sinclair/typebox';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { serializerSchema } from '../../src/api/serializer-schema.js';

type Schema = Record<string, any>;

/**
 * Answers that match `schema`: one per branch of every union on the way (so each branch is written
 * at least once), with every optional property present, and the same with none of them.
 */
function samples(schema: Schema, depth = 0): unknown[] {
  if (depth > 6) return [null];
  if (schema.anyOf) return schema.anyOf.flatMap((b: Schema) => samples(b, depth + 1));
  if (schema.const !== undefined) return [schema.const];
  if (schema.enum) return [...schema.enum];
  const type = Array.isArray(schema.type) ? schema.type : [schema.type];
  return type.flatMap((t: string): unknown[] => {
    switch (t) {
      case 'string':
        return schema.format === 'date-time' ? [new Date(1.7e12).toISOString(), new Date(1.7e12)] : ['a "quoted"\nvalue'];
      case 'integer':
        return [0, -42];
      case 'number':
        return [1.5];
      case 'boolean':
        return [true, false];
      case 'null':
        return [null];
      case 'array':
        return [[], ...samples(schema.items ?? {}, depth + 1).slice(0, 3).map((v) => [v, v])];
      case 'object': {
        const props = Object.entries((schema.properties ?? {}) as Record<string, Schema>);
        const required = new Set<string>(schema.required ?? []);
        const variants = props.map(([k, s]) => [k, samples(s, depth + 1)] as const);
        const widest = Math.max(1, ...variants.map(([, v]) => v.length));
        const out: unknown[] = [];
        for (let i = 0; i < Math.min(widest, 4); i++) {
          out.push(Object.fromEntries(variants.map(([k, v]) => [k, v[i % v.length]])));
        }
        out.push(Object.fromEntries(variants.filter(([k]) => required.has(k)).map(([k, v]) => [k, v[0]])));
        return out;
      }
      default:
        return [{ any: 'thing' }];
    }
  });
}

const hasAnyOf = (s: unknown): boolean => JSON.stringify(s).includes('"anyOf"');

describe('the schema fast-json-stringify is given (issue 16: no validator per union branch)', () => {
  it('folds an object-or-array union, a nullable string and a literal union, and writes the same JSON', () => {
    const one = Type.Object({
      id: Type.String(),
      environment: Type.Union([Type.Literal('live'), Type.Literal('sandbox')]),
      sandbox_id: Type.Union([Type.String(), Type.Null()]),
      at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
      count: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
    });
    const schema = Type.Union([one, Type.Array(one)]);
    const folded = serializerSchema(schema) as Schema;
    expect(hasAnyOf(folded)).toBe(false);
    expect(folded.type).toEqual(['object', 'array']);
    expect(hasAnyOf(schema)).toBe(true); // the route's own schema is left as it was
    const before = fastJson(schema as never);
    const after = fastJson(folded as never);
    const values = samples(schema);
    expect(values.length).toBeGreaterThan(5);
    for (const v of values) expect(after(v)).toBe(before(v));
  });

  it('leaves what only a validator tells apart: two object shapes, number beside integer, a $ref', () => {
    const twoObjects = Type.Union([Type.Object({ a: Type.String() }), Type.Object({ b: Type.Integer() })]);
    const numbers = Type.Union([Type.Number(), Type.Integer()]);
    const ref = { anyOf: [{ $ref: '#/definitions/x' }, { type: 'null' }], definitions: { x: { type: 'string' } } };
    for (const s of [twoObjects, numbers, ref]) expect(serializerSchema(s)).toStrictEqual(JSON.parse(JSON.stringify(s)));
    // Folded inside, left at the top: the inner nullable string still loses its validator.
    const mixed = serializerSchema(Type.Union([Type.Object({ a: Type.Union([Type.String(), Type.Null()]) }), Type.Object({ b: Type.Integer() })])) as Schema;
    expect(mixed.anyOf[0].properties.a).toEqual({ type: ['string', 'null'] });
  });

  describe('every response schema of every route', () => {
    let s: TestServer;
    beforeAll(async () => {
      s = await startTestServer();
    });
    afterAll(() => s.stop());

    it('writes byte for byte what fast-json-stringify writes from the route’s own schema', async () => {
      const doc = (await (await request(`${s.url}/openapi.json`)).body.json()) as Schema;
      let schemas = 0;
      let folded = 0;
      let values = 0;
      for (const [path, item] of Object.entries(doc.paths as Record<string, Schema>)) {
        for (const [method, op] of Object.entries(item)) {
          for (const [status, res] of Object.entries((op.responses ?? {}) as Record<string, Schema>)) {
            const schema = res.content?.['application/json']?.schema;
            if (!schema || JSON.stringify(schema).includes('$ref')) continue;
            schemas++;
            const after = serializerSchema(schema);
            if (hasAnyOf(schema) && !hasAnyOf(after)) folded++;
            const write = [fastJson(schema), fastJson(after as never)];
            for (const v of samples(schema).slice(0, 40)) {
              values++;
              expect(write[1](v), `${method} ${path} ${status}`).toBe(write[0](v));
            }
          }
        }
      }
      expect(schemas).toBeGreaterThan(300);
      expect(folded).toBeGreaterThan(50);
      expect(values).toBeGreaterThan(1000);
    }, 120_000);
  });
});
