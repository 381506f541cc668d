import type { FastifyBaseLogger, FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { AppContext } from '../context.js';
import type { SyncDeclarations } from '../sync/shared/registry.js';
import type { EventExample } from '../events/catalogue.js';

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
 * `sync` declares the kinds of facts it pushes, the feed changes it applies at a store and how it
 * takes the central's refusals (see src/sync/shared/registry.ts). The checkouts module adds `checkout?:
 * CheckoutHooks` (modules/checkouts/hooks.ts) by declaration merging, so api/ names no module.
 * `modules/index.ts` builds the daemon's registry from these declarations.
 */
export interface PosdModule {
  name: string;
  api?(app: ApiApp, ctx: AppContext): void | Promise<void>;
  root?(app: ApiApp, ctx: AppContext): void | Promise<void>;
  workers?(ctx: AppContext): Worker[];
  sync?: SyncDeclarations;
  /**
   * The test-send payload of each catalogue event this module emits, built by the very builder its
   * emitter calls (from example rows), so `POST /webhook_endpoints/{id}/test` has the real shape.
   */
  events?: Readonly<Record<string, EventExample>>;
}
