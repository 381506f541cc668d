import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Db } from '../db/database.js';
import { groupCommit, groupCommitUnflushed } from '../db/group-commit.js';
import { whenDurable } from '../db/wal-flush.js';
import { ApiError } from '../errors.js';
import { isoTime, type Clock } from '../clock.js';

interface IdemRow {
  fingerprint: string;
  state: 'running' | 'done';
  boot_id: string;
  status_code: number | null;
  response: string | null;
  content_type: string | null;
}

declare module 'fastify' {
  interface FastifyRequest {
    idempotency?: { scope: string; key: string; store: IdempotencyStore; committed?: boolean };
  }
}

/**
 * `Idempotency-Key` on every POST (gaps.md): the first response is stored and replayed for the same
 * key and account; another request under the same key answers 422; a second one while the first runs
 * answers 409. A point-of-sale program retries over a flaky store network: this makes it safe.
 *
 * The stored response is written right after the handler's own transaction commits, in the same
 * turn of the event loop, before the response leaves; a request whose process died before that is
 * recognised by its boot id and may run again, so natural keys (terminal `external_id`) stay the
 * second guard for money.
 */
export class IdempotencyStore {
  private readonly stmts;

  constructor(
    readonly db: Db,
    private readonly clock: Clock,
    private readonly bootId: string,
  ) {
    this.stmts = {
      get: db.prepare('SELECT fingerprint, state, boot_id, status_code, response, content_type FROM idempotency_keys WHERE scope = ? AND key = ?'),
      claim: db.prepare(
        `INSERT INTO idempotency_keys (scope, key, fingerprint, state, boot_id, created_at)
         VALUES (?, ?, ?, 'running', ?, ?)
         ON CONFLICT(scope, key) DO UPDATE SET fingerprint = excluded.fingerprint, boot_id = excluded.boot_id,
           created_at = excluded.created_at
         WHERE idempotency_keys.state = 'running' AND idempotency_keys.boot_id <> excluded.boot_id`,
      ),
      finish: db.prepare(
        `UPDATE idempotency_keys SET state = 'done', status_code = ?, response = ?, content_type = ?
         WHERE scope = ? AND key = ? AND state = 'running'`,
      ),
      release: db.prepare(`DELETE FROM idempotency_keys WHERE scope = ? AND key = ? AND state = 'running'`),
      prune: db.prepare('DELETE FROM idempotency_keys WHERE created_at < ?'),
    };
  }

  /** Returns a stored response to replay, or claims the key for this request. */
  begin(scope: string, key: string, fingerprint: string): IdemRow | null {
    const existing = this.stmts.get.get(scope, key) as IdemRow | undefined;
    if (existing) {
      if (existing.fingerprint !== fingerprint) throw new ApiError('idempotency_key_reused');
      if (existing.state === 'done') return existing;
      if (existing.boot_id === this.bootId) throw new ApiError('idempotency_key_in_use');
    }
    const claimed = this.stmts.claim.run(scope, key, fingerprint, this.bootId, isoTime(this.clock.now()));
    if (claimed.changes === 0) throw new ApiError('idempotency_key_in_use');
    return null;
  }

  isDone(scope: string, key: string): boolean {
    return (this.stmts.get.get(scope, key) as IdemRow | undefined)?.state === 'done';
  }

  finish(scope: string, key: string, status: number, body: string, contentType: string | null): void {
    this.stmts.finish.run(status, body, contentType, scope, key);
  }

  release(scope: string, key: string): void {
    this.stmts.release.run(scope, key);
  }

  prune(retentionHours: number): number {
    return this.stmts.prune.run(isoTime(this.clock.now() - retentionHours * 3_600_000)).changes;
  }
}

function fingerprintOf(req: FastifyRequest): string {
  const path = req.url.split('?')[0];
  return createHash('sha256')
    .update(`${req.method} ${path}\n${req.url.includes('?') ? req.url.slice(req.url.indexOf('?')) : ''}\n`)
    .update(JSON.stringify(req.body ?? null))
    .digest('hex');
}

/**
 * A route whose response holds a secret shown once (a webhook signing secret) names a codec in its
 * `config`: the stored copy is sealed with it and opened for a replay, so the secret is never kept
 * in clear text in `idempotency_keys`.
 */
export interface IdempotencyCodec {
  seal(text: string): string;
  open(text: string): string;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    idempotencyCodec?: IdempotencyCodec;
  }
}

function codecOf(req: FastifyRequest): IdempotencyCodec | undefined {
  return (req.routeOptions.config as { idempotencyCodec?: IdempotencyCodec } | undefined)?.idempotencyCodec;
}

/** Registers the hooks on the `/api` scope. Runs after authentication, so the scope is the account. */
export function registerIdempotency(app: FastifyInstance, store: IdempotencyStore): void {
  app.addHook('preHandler', async (req: FastifyRequest, reply: FastifyReply) => {
    if (req.method !== 'POST') return;
    const header = req.headers['idempotency-key'];
    if (header === undefined) return;
    const key = Array.isArray(header) ? header[0] : header;
    if (key.length < 1 || key.length > 255) throw new ApiError('idempotency_key_invalid');
    const scope = `${req.auth.keyAccount?.id ?? req.auth.organizationId}:${req.auth.account?.id ?? '*'}`;
    const fingerprint = fingerprintOf(req);
    // The claim joins the next group commit, and the request goes on once that batch committed:
    // the flush of the request's own write covers it. It need not be on disk before that write, as
    // a power cut before that flush takes both and nothing was answered; waiting for a flush of its
    // own made every keyed write wait for two flushes in a row (decision 0287).
    const stored = await groupCommitUnflushed(store.db, () => store.begin(scope, key, fingerprint));
    if (stored) {
      // The stored answer is replayed only once it is on disk (its own request's batch may still
      // be flushing).
      await whenDurable(store.db);
      reply.header('Idempotent-Replayed', 'true');
      if (stored.content_type) reply.header('content-type', stored.content_type);
      const codec = codecOf(req);
      const response = stored.response && codec ? codec.open(stored.response) : stored.response;
      return reply.code(stored.status_code ?? 200).send(response ?? '');
    }
    req.idempotency = { scope, key, store };
  });

  app.addHook('onSend', async (req, reply, payload) => {
    const idem = req.idempotency;
    if (!idem) return payload;
    req.idempotency = undefined;
    // Stored with the change; unless that transaction rolled back, then store as usual below.
    if (idem.committed && store.isDone(idem.scope, idem.key)) return payload;
    // Only successes are stored (docs/api-behaviour.md). A refusal, whether the schema or the handler
    // made it (an amount under the minimum, a currency the account lacks, a refund still owed), is
    // released so a corrected retry under the same key goes through; a server error changed
    // nothing that can be trusted either.
    if (reply.statusCode >= 400 || typeof payload !== 'string') await groupCommit(store.db, () => store.release(idem.scope, idem.key));
    else {
      const codec = codecOf(req);
      const stored = codec ? codec.seal(payload) : payload;
      const contentType = String(reply.getHeader('content-type') ?? '');
      await groupCommit(store.db, () => store.finish(idem.scope, idem.key, reply.statusCode, stored, contentType));
    }
    return payload;
  });

  // A request that never reached onSend (aborted) must not hold its key forever.
  app.addHook('onResponse', async (req) => {
    const idem = req.idempotency;
    if (idem) await groupCommit(store.db, () => store.release(idem.scope, idem.key));
  });
}

/**
 * Stores the idempotent response inside the caller's own write transaction, so the change and the
 * answer a retry will replay commit together: a process killed between the two can no longer let a
 * retried request write twice. Call it as the last step of the transaction with the status and
 * body the handler will send; the body is serialised by the route's own response schema, exactly
 * as it will leave.
 */
export function commitIdempotentResponse(req: FastifyRequest, reply: FastifyReply, status: number, body: unknown): void {
  const idem = req.idempotency;
  if (!idem || idem.committed) return;
  const payload = String(reply.code(status).serialize(body));
  const codec = codecOf(req);
  idem.store.finish(idem.scope, idem.key, status, codec ? codec.seal(payload) : payload, 'application/json; charset=utf-8');
  idem.committed = true;
}

/**
 * The commit pipeline of a write that answers a request: `write` (synchronous, its reads and writes
 * together) runs in the database's next group commit inside its own savepoint, with the idempotent
 * answer stored in the same savepoint, and the reply is sent only once the batch has committed, so
 * a 2xx still means on disk. A write that throws rolls back alone and answers its error; a batch
 * whose commit fails answers an error to every request in it, and none of them is acknowledged.
 * `status` may depend on the result (200 found / 201 made); `view` turns the result into the body.
 */
export async function sendCommitted<T>(
  db: Db,
  req: FastifyRequest,
  reply: FastifyReply,
  status: number | ((result: T) => number),
  write: () => T,
  view: (result: T) => unknown = (r) => r,
): Promise<FastifyReply> {
  let code = 200;
  const body = await groupCommit(db, () => {
    const result = write();
    code = typeof status === 'function' ? status(result) : status;
    const out = view(result);
    commitIdempotentResponse(req, reply, code, out);
    return out;
  });
  return reply.code(code).send(body);
}
