import { createRequire } from 'node:module';

type RouteSerializer = (data: unknown) => string;
type SerializerCompiler = (route: { schema: unknown; method: string; url: string; httpStatus: string; contentType?: string }) => RouteSerializer;
type BuildSerializer = (externalSchemas: unknown, options: unknown) => SerializerCompiler;

// fastify's own default serializer factory, resolved from fastify's folder: the same code fastify
// would use, without posd depending on it by name.
const fromFastify = createRequire(createRequire(import.meta.url).resolve('fastify'));
const SerializerSelector = fromFastify('@fastify/fast-json-stringify-compiler') as { SerializerSelector?: () => BuildSerializer } & (() => BuildSerializer);

/**
 * fastify's response serializers (fast-json-stringify), each compiled by the first response that
 * needs it instead of at start: compiling every route's response schemas took a third of a start
 * (issue 16). Output is the same: the same compiler, only later.
 */
export function lazySerializerFactory(): BuildSerializer {
  const select = (SerializerSelector.SerializerSelector ?? SerializerSelector)();
  return (externalSchemas, options) => {
    const compile = select(externalSchemas, options);
    return (route) => {
      let compiled: RouteSerializer | undefined;
      return (data) => (compiled ??= compile(route))(data);
    };
  };
}
