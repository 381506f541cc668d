import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { Db } from '../db/database.js';
import { groupCommit } from '../db/group-commit.js';
import { logHeld } from '../db/log-hold.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set on write routes: settles once the group commit that ran the handler is durable. */
    committed?: Promise<unknown>;
    /** True once a write route's handler ran in the pipeline: its group commit held it for the central's log. */
    pipelined?: boolean;
  }
}

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Puts every write route of the API in the one commit pipeline (docs/commit-pipeline.md) without
 * each route having to ask: the handler runs inside a group-commit job, so what it writes before its
 * first `await` (a service's `tx` becomes a savepoint of the batch; `sendCommitted` and
 * `groupCommit` join the batch) commits with the other requests of the same turn, one flush for all.
 * The answer waits for that commit (`holdUntilCommitted`): a 2xx still means "on disk". A write made
 * after an `await` commits on its own and is caught by the commit audit (db/database.ts).
 * For an `onRoute` hook of the API's scope, registered before its routes.
 */
export function writeRoutesInPipeline(db: Db): (route: RouteOptions) => void {
  return (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (methods.every((m) => READS.has(m))) return;
    const handler = route.handler;
    route.handler = function pipelined(this: unknown, req: FastifyRequest, reply: FastifyReply) {
      let result: unknown;
      const committed = groupCommit(db, () => {
        result = (handler as (this: unknown, req: FastifyRequest, reply: FastifyReply) => unknown).call(this, req, reply);
        // Its failure is the answer, taken below once the batch is on disk: the flush ends a turn
        // of the loop or more later, and a rejection unheld until then would count as unhandled.
        if (result instanceof Promise) result.catch(() => {});
      });
      req.committed = committed;
      req.pipelined = true;
      return committed.then(
        () => result,
        (error) => {
          // The batch failed (a full disk): its error is the answer, so the answer must not wait
          // on the failed commit again (that second failure would get fastify's own error shape),
          // and the handler's promise, failing with it, must not end the process as unhandled.
          req.committed = undefined;
          if (result instanceof Promise) result.catch(() => {});
          throw error;
        },
      );
    } as RouteOptions['handler'];
  };
}

/** An `onSend` hook: a write route's answer leaves only once its batch committed. */
export async function holdUntilCommitted(req: FastifyRequest, _reply: FastifyReply, payload: unknown): Promise<unknown> {
  const committed = req.committed;
  if (committed) {
    // Once: the error answer that a failed commit turns into is sent without waiting again.
    req.committed = undefined;
    await committed;
  }
  return payload;
}

/**
 * An `onSend` hook after `holdUntilCommitted`: on a chain's leading core a write's answer leaves
 * only once the central's log holds what the file holds (src/db/log-hold.ts). For a write not run
 * in the pipeline (a route's own scope, an error before it): the pipeline's own group commit held
 * the others at the position they committed at. Nothing waits elsewhere.
 */
export function holdUntilLogged(db: Db): (req: FastifyRequest, reply: FastifyReply, payload: unknown) => Promise<unknown> {
  return async (req, reply, payload) => {
    // A refusal (4xx, 5xx) acknowledges no write.
    if (READS.has(req.method) || req.pipelined || reply.statusCode >= 400) return payload;
    const held = logHeld(db);
    if (held) await held;
    return payload;
  };
}
