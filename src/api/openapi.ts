import type { FastifyInstance, RouteOptions } from 'fastify';
import type { SwaggerOptions } from '@fastify/swagger';

type Hook = (...args: never[]) => unknown;

/**
 * The OpenAPI document of `/openapi.json`, made by @fastify/swagger, which is loaded by the first
 * request for it instead of at every start (issue 16: the plugin and the YAML library it loads were
 * a tenth of a start's code, for a document few boxes are ever asked for).
 *
 * What the plugin would have seen is recorded from here on, as its own hooks would have: every route
 * added after this call (`onRoute`) and every plugin context (`onRegister`). The first call then
 * runs the plugin's setup against a stand-in that takes its hooks and its `swagger` decoration, and
 * replays the recording into them, then its `onReady`: the same code building the same document
 * from the same routes, only later. Call it where the plugin was registered.
 */
export function lazyOpenApi(app: FastifyInstance, options: SwaggerOptions): () => Promise<unknown> {
  const routes: RouteOptions[] = [];
  const contexts: FastifyInstance[] = [];
  app.addHook('onRoute', (route) => {
    routes.push(route);
  });
  app.addHook('onRegister', (instance) => {
    contexts.push(instance);
  });
  let built: Promise<() => unknown> | undefined;
  const build = async (): Promise<() => unknown> => {
    const { fastifySwagger } = await import('@fastify/swagger');
    const hooks = new Map<string, Hook[]>();
    let document: (() => unknown) | undefined;
    const standIn = {
      addHook: (name: string, fn: Hook) => hooks.set(name, [...(hooks.get(name) ?? []), fn]),
      decorate: (_name: string, fn: () => unknown) => {
        document = fn;
      },
      getSchemas: () => app.getSchemas(),
    };
    await new Promise<void>((resolve, reject) =>
      (fastifySwagger as unknown as (f: unknown, o: unknown, done: (err?: Error) => void) => void)(standIn, { ...options }, (err) =>
        err ? reject(err) : resolve(),
      ),
    );
    for (const context of contexts) for (const hook of hooks.get('onRegister') ?? []) await (hook as (i: FastifyInstance) => unknown)(context);
    for (const route of routes) for (const hook of hooks.get('onRoute') ?? []) (hook as (r: RouteOptions) => void)(route);
    for (const hook of hooks.get('onReady') ?? []) await new Promise<void>((resolve) => (hook as (done: () => void) => void)(resolve));
    if (!document) throw new Error('@fastify/swagger did not decorate the instance with its document');
    return document;
  };
  return async () => {
    built ??= build();
    return (await built)();
  };
}
