import type { FastifyBaseLogger, FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { AppContext } from '../context.js';

/** The fastify instance every module registers its routes on, typed by its TypeBox schemas. */
export type ApiApp = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression<RawServerDefault>,
  RawReplyDefaultExpression<RawServerDefault>,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/** Background work (delivery, sync, feeds): started after the server listens, stopped before the database closes. */
export interface Worker {
  name: string;
  start(): void | Promise<void>;
  stop(): void | Promise<void>;
}

/**
 * One area of the product. `api` registers routes under `/api` (authenticated, rate limited,
 * idempotent); `root` registers daemon plumbing outside it (`/terminals/link`, `/sync/...`).
 */
export interface PosdModule {
  name: string;
  api?(app: ApiApp, ctx: AppContext): void | Promise<void>;
  root?(app: ApiApp, ctx: AppContext): void | Promise<void>;
  workers?(ctx: AppContext): Worker[];
}
