import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';

type RouteSerializer = (data: unknown) => string;
type SerializerCompiler = (route: { schema: unknown; method: string; url: string; httpStatus: string; contentType?: string }) => RouteSerializer;
type BuildSerializer = (externalSchemas: unknown, options: unknown) => SerializerCompiler;

// fastify's own default serializer factory (the package fastify itself requires when no
// buildSerializer is given). Imported by name rather than through a require resolved from fastify's
// folder at run time: the bundle (scripts/bundle.mjs) then holds one copy of it and of ajv, shared
// with src/api/validation.ts, instead of loading a second one file by file (issue 16).

/**
 * fastify's response serializers (fast-json-stringify), each compiled by the first response that
 * needs it instead of at start: compiling every route's response schemas took a third of a start
 * (issue 16). Output is the same: the same compiler with the route's own schema, only later.
 */
export function lazySerializerFactory(): BuildSerializer {
  const select = (SerializerSelector as unknown as () => BuildSerializer)();
  return (externalSchemas, options) => {
    const compile = select(externalSchemas, options);
    return (route) => {
      let compiled: RouteSerializer | undefined;
      return (data) => (compiled ??= compile(route))(data);
    };
  };
}
