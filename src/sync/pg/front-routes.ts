import type { FastifyRequest } from 'fastify';
import pg from 'pg';
import { Type } from '@sinclair/typebox';
import type { ApiApp } from '../../api/module.js';
import type { Clock } from '../../clock.js';
import type { Logger } from '../../logger.js';
import { isoTime } from '../../clock.js';
import { ApiError } from '../../errors.js';
import { echoPath, errorBody } from '../../api/http-errors.js';
import { errorBodies } from '../../api/schemas.js';
import type { SyncRegistry } from '../shared/registry.js';
import {
  BootstrapResponse,
  FeedQuery,
  FeedResponse,
  PushBody,
  PushResponse,
  ReceivedQuery,
  ReceivedResponse,
  ReconcileQuery,
  ReconcileResponse,
  type FeedChange,
  type KeySnapshot,
  type SummaryRow,
} from '../shared/wire.js';
import { StoresResponse } from '../central/routes.js';
import { authenticateFront, storeKeyOf, type FrontCaller } from './front-auth.js';
import { feedAfter, type FeedWaiter } from './feed.js';
import { receivePush, type ReceiptChecks, type ReceiptScope } from './receipt.js';
import { scopeOf, type SyncAccountRow } from './read-models.js';
import { RECEIVED_CHANNEL, type PgStoreRow } from './core.js';
import { knownZone, localDayRange } from '../shared/summary.js';

const errors = errorBodies(400, 401, 403, 409, 422, 503);

export interface FrontDeps {
  pool: pg.Pool;
  waiter: FeedWaiter;
  /** Each kind's `totalsOf`, for the `records.<kind>` day totals counted at receipt. */
  totals: Pick<SyncRegistry, 'totalsOf'>;
  /** The receipt checks (the kinds' declarations, `sync.record_time_skew_ms`), as the SQLite central makes them. */
  checks: ReceiptChecks;
  clock: Clock;
  log: Logger;
  /** Raised when the front stops: long-polls answer at once. */
  shutdown: AbortSignal;
}

/**
 * Whether a failure is PostgreSQL (or the way to it) not answering: the connection refused, cut or
 * timed out, the server starting or shutting down, out of connections or resources, a
 * serialization failure. Those answer 503 `sync_database_unavailable` (the box retries); a
 * programming error stays a 500.
 */
export function databaseUnavailable(err: unknown): boolean {
  if (err instanceof pg.DatabaseError) return /^(08|53|57|58)/.test(err.code ?? '') || err.code === '40001' || err.code === '40P01';
  return !(err instanceof TypeError || err instanceof RangeError || err instanceof SyntaxError || err instanceof ReferenceError);
}

/** A route handler whose PostgreSQL failures answer 503 `sync_database_unavailable` (logged), never 500. */
async function guarded<T>(req: FastifyRequest, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ApiError || !databaseUnavailable(err)) throw err;
    req.log.warn({ err: { message: (err as Error).message, code: (err as { code?: string }).code }, route: req.routeOptions.url }, 'PostgreSQL did not answer');
    throw new ApiError('sync_database_unavailable');
  }
}

/** Runs `fn` in one read-only REPEATABLE READ transaction: its reads see one snapshot. */
async function inSnapshot<T>(pool: pg.Pool, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  const c = await pool.connect();
  let broken = false;
  try {
    await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const out = await fn(c);
    await c.query('COMMIT');
    return out;
  } catch (err) {
    await c.query('ROLLBACK').catch(() => {
      broken = true;
    });
    throw err;
  } finally {
    c.release(broken);
  }
}

function header(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

const iso = (v: Date | string | null): string | null => (v === null ? null : v instanceof Date ? v.toISOString() : v);

/**
 * The store boxes' protocol served from PostgreSQL by a central-front (docs/central.md, "The
 * central-front"): the routes, schemas, status codes and error bodies of the SQLite central
 * (src/sync/central/routes.ts, central-records.ts), so a box cannot tell the two apart. Reads that must agree
 * with each other (a scope and the feed it filters, bootstrap's accounts and keys) share one snapshot.
 */
export function frontRoutes(app: ApiApp, deps: FrontDeps): void {
  const { pool, waiter, clock } = deps;
  const now = () => isoTime(clock.now());
  const caller = (req: FastifyRequest) => authenticateFront(pool, header(req, 'x-secret-key'));

  /**
   * The accounts a push may name: the key's scope, plus (as the SQLite central decides) an account
   * no one has published yet when the batch connects a child or the store has records not applied
   * yet: that child may come into scope when they are; the projector parks the record if it has not.
   */
  async function pushScope(keyAccount: SyncAccountRow, body: PushBody): Promise<ReceiptScope> {
    const accounts = (await scopeOf(pool, keyAccount.id)).map((a) => ({ id: a.id, live_mode: a.live_mode, currencies: a.currencies }));
    const scope: ReceiptScope = { keyAccount: { id: keyAccount.id, live_mode: keyAccount.live_mode, created_at: keyAccount.created_at }, accounts };
    const inScope = new Map(accounts.map((a) => [a.id, a.live_mode]));
    const outside = body.records.filter((r) => inScope.get(r.account_id) !== r.live_mode);
    if (!outside.length || body.records.some((r) => r.kind === 'connected_account')) return scope;
    const res = await pool.query<{ behind: boolean | null; known: string[] | null }>(
      `SELECT (SELECT received_seq > applied_seq FROM sync_stores WHERE store_id = $1 AND account_id = $2) AS behind,
              (SELECT array_agg(id) FROM sync_accounts WHERE id = ANY($3::text[])) AS known`,
      [body.store_id, keyAccount.id, [...new Set(outside.map((r) => r.account_id))]],
    );
    if (!res.rows[0].behind) return scope;
    const known = new Set(res.rows[0].known ?? []);
    const extra = outside.filter((r) => !known.has(r.account_id)).map((r) => ({ id: r.account_id, live_mode: r.live_mode }));
    return { ...scope, accounts: [...accounts, ...extra] };
  }

  app.post('/sync/push', { schema: { hide: true, body: PushBody, response: { 200: PushResponse, ...errors } } }, async (req) =>
    guarded(req, async () => {
      const keyAccount = storeKeyOf(await caller(req));
      const body = req.body;
      const receipt = await receivePush(pool, await pushScope(keyAccount, body), body, {
        totals: deps.totals,
        checks: deps.checks,
        now: () => new Date(clock.now()),
      });
      for (const r of receipt.rejected) {
        const rec = body.records.find((x) => x.id === r.id);
        req.log.warn(
          {
            event: 'sync.record_rejected',
            store_id: body.store_id,
            record_id: r.id,
            seq: rec?.seq,
            kind: rec?.kind,
            code: r.code,
            field: r.field,
            stage: 'receipt',
            reason: r.reason,
          },
          'sync: a record was refused',
        );
      }
      if (receipt.received > 0) {
        // The core's projector is rung after the commit; a lost ring costs its fallback timer, never a record.
        await pool.query('SELECT pg_notify($1, $2)', [RECEIVED_CHANNEL, body.store_id]).catch((err: Error) => {
          req.log.warn({ err: { message: err.message }, store_id: body.store_id }, 'ringing the core after a push failed (the push is received)');
        });
      }
      return {
        applied_seq: receipt.received_seq,
        applied: receipt.received,
        duplicates: receipt.duplicates,
        held: 0,
        parked: 0,
        rejected: receipt.rejected,
        server_time: receipt.server_time,
      };
    }),
  );

  /** One read of a key's feed: its scope and the rows it filters in one snapshot (a child connected meanwhile is in both). */
  const readFeed = (keyAccount: SyncAccountRow, after: number, limit: number, storeId: string) =>
    inSnapshot(pool, async (c) => {
      const scope = await scopeOf(c, keyAccount.id);
      return feedAfter(c, { accountIds: scope.map((a) => a.id), organizationId: keyAccount.organization_id, storeId }, after, limit);
    });

  app.get('/sync/feed', { schema: { hide: true, querystring: FeedQuery, response: { 200: FeedResponse, ...errors } } }, async (req) =>
    guarded(req, async () => {
      const keyAccount = storeKeyOf(await caller(req));
      const { after, wait_ms: waitMs, limit, store_id: storeId } = req.query;
      const deadline = performance.now() + waitMs;
      const closed = new AbortController();
      req.raw.once('close', () => closed.abort());
      const stop = AbortSignal.any([closed.signal, deps.shutdown]);
      const organizations = new Set([keyAccount.organization_id]);
      let position = after;
      for (;;) {
        // Stopping: answer "nothing new" rather than read through a pool that is being closed.
        if (deps.shutdown.aborted) return { changes: [] as FeedChange[], cursor: after, server_time: now() };
        // Taken before the read: a ring between the read and the wait wakes the wait at once.
        const mark = waiter.mark(organizations);
        const page = await readFeed(keyAccount, position, limit, storeId ?? '');
        if (page.changes.length || performance.now() >= deadline || closed.signal.aborted) return { ...page, server_time: now() };
        // The cursor may pass other accounts' rows meanwhile; the next read starts from it.
        position = page.cursor;
        const woken = await waiter.wait(organizations, mark, deadline - performance.now(), stop);
        if (!woken) return { ...page, server_time: now() };
      }
    }),
  );

  app.get('/sync/bootstrap', { schema: { hide: true, response: { 200: BootstrapResponse, ...errors } } }, async (req) =>
    guarded(req, async () => {
      const keyAccount = storeKeyOf(await caller(req));
      return inSnapshot(pool, async (c) => {
        const scope = await scopeOf(c, keyAccount.id);
        const org = (
          await c.query<{ id: string; name: string; created_at: string }>('SELECT id, name, created_at FROM sync_organizations WHERE id = $1', [
            keyAccount.organization_id,
          ])
        ).rows[0];
        // Published by the core before its accounts; missing, the read models are not complete yet.
        if (!org)
          throw new ApiError('sync_database_unavailable', {
            message: `The organization ${keyAccount.organization_id} is not published to the sync database yet; retry shortly.`,
          });
        const keys = await c.query<Omit<KeySnapshot, 'live_mode'> & { live_mode: boolean }>(
          `SELECT id, prefix, hash, kind, environment, account_id, organization_id, live_mode, created_at, revoked_at FROM sync_keys
           WHERE organization_id = $1 AND (kind = 'organization' OR account_id = ANY($2::text[])) ORDER BY created_at, id`,
          [org.id, scope.map((a) => a.id)],
        );
        return {
          protocol: 1 as const,
          organization: org,
          accounts: scope.map(({ organization_id: _org, currencies: _currencies, ...a }) => a),
          keys: keys.rows.map((k) => ({ ...k, live_mode: k.live_mode ? 1 : 0 })),
          // A new box reads its scope's whole feed, as at the SQLite central.
          feed_cursor: 0,
          server_time: now(),
        };
      });
    }),
  );

  app.get('/sync/reconcile', { schema: { hide: true, querystring: ReconcileQuery, response: { 200: ReconcileResponse, ...errors } } }, async (req) =>
    guarded(req, async () => {
      const keyAccount = storeKeyOf(await caller(req));
      const { store_id: storeId, day } = req.query;
      return inSnapshot(pool, async (c) => {
        const row = (
          await c.query<{ account_id: string; applied_seq: number; zone: string | null }>(
            'SELECT account_id, applied_seq, zone FROM sync_stores WHERE store_id = $1',
            [storeId],
          )
        ).rows[0];
        if (row && row.account_id !== keyAccount.id) throw new ApiError('sync_store_mismatch');
        // The totals' days are the zone the store's pushes named (receipt.ts): that zone's span is
        // what was summed, whatever zone this request names; the store sums the same span.
        const zone = row?.zone && knownZone(row.zone) ? row.zone : 'UTC';
        // `records.*` counted at receipt by the fronts; `ledger.*`, `intents.*` and `events` published by the core after projecting.
        const totals = await c.query<SummaryRow>(
          `SELECT account_id, live_mode, currency, measure, count, sum FROM sync_day_totals
           WHERE store_id = $1 AND day = $2::date ORDER BY measure, account_id, live_mode, currency`,
          [storeId, day],
        );
        return { day, ...localDayRange(day, zone), zone, applied_seq: row?.applied_seq ?? 0, rows: totals.rows, server_time: now() };
      });
    }),
  );

  app.get('/sync/stores', { schema: { hide: true, response: { 200: StoresResponse, ...errors } } }, async (req) =>
    guarded(req, async () => {
      const who: FrontCaller = await caller(req);
      return inSnapshot(pool, async (c) => {
        const visible = who.keyAccount
          ? (await scopeOf(c, who.keyAccount.id)).map((a) => a.id)
          : (
              await c.query<{ id: string }>('SELECT id FROM sync_accounts WHERE organization_id = $1 AND live_mode = $2', [
                who.key.organization_id,
                who.liveMode,
              ])
            ).rows.map((r) => r.id);
        const stores = await c.query<PgStoreRow & { last_push_at: Date | null; created_at: Date }>(
          'SELECT * FROM sync_stores WHERE account_id = ANY($1::text[]) ORDER BY last_push_at NULLS FIRST, store_id',
          [visible],
        );
        return stores.rows.map((s) => ({
          store_id: s.store_id,
          account_id: s.account_id,
          live_mode: s.live_mode,
          received_seq: s.received_seq,
          applied_seq: s.applied_seq,
          last_push_at: iso(s.last_push_at),
          held_records: s.held_count,
          rejected_records: s.rejected_count,
          parked_records: s.parked_count,
          skipped_records: s.skipped_count,
          box_waiting: s.box_waiting,
          box_waiting_since: s.box_waiting_since,
          created_at: iso(s.created_at)!,
        }));
      });
    }),
  );

  app.get(
    '/sync/received',
    { schema: { hide: true, querystring: ReceivedQuery, response: { 200: ReceivedResponse, ...errorBodies(400, 401, 403, 503) } } },
    async (req) =>
      guarded(req, async () => {
        const keyAccount = storeKeyOf(await caller(req));
        const { store_id: storeId, after, limit } = req.query;
        return inSnapshot(pool, async (c) => {
          const row = (
            await c.query<{ account_id: string; received_seq: number }>('SELECT account_id, received_seq FROM sync_stores WHERE store_id = $1', [storeId])
          ).rows[0];
          if (row && row.account_id !== keyAccount.id) {
            throw new ApiError('sync_store_mismatch', { message: `Store ${storeId} belongs to another account; this key cannot read its records.` });
          }
          const records = row
            ? (
                await c.query<{
                  seq: number;
                  id: string;
                  kind: string;
                  account_id: string;
                  live_mode: boolean;
                  payload: string;
                  created_at: string;
                  hash: string;
                }>(
                  `SELECT seq, id, kind, account_id, live_mode, payload, created_at, encode(hash, 'hex') AS hash FROM sync_received
                 WHERE store_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
                  [storeId, after, limit],
                )
              ).rows.map((r) => ({ ...r, payload: JSON.parse(r.payload) as Record<string, unknown> }))
            : [];
          return { store_id: storeId, applied_seq: row?.received_seq ?? 0, records, server_time: now() };
        });
      }),
  );

  app.get('/sync/time', { schema: { hide: true, response: { 200: Type.Object({ server_time: Type.String() }) } } }, async () => ({ server_time: now() }));

  // For a load balancer: 200 while this front can reach PostgreSQL, 503 otherwise (and while stopping).
  app.get('/healthz', { schema: { hide: true } }, async (_req, reply) => {
    if (deps.shutdown.aborted) return reply.code(503).send(errorBody('service_unavailable'));
    try {
      await pool.query('SELECT 1');
      return { status: 'ok', role: 'central-front' };
    } catch {
      return reply.code(503).send(errorBody('sync_database_unavailable'));
    }
  });
}

/**
 * What a central-front answers for a path none of its routes takes: an unknown `/sync/...` path is
 * `route_not_found`, as at the SQLite central; anything else (`/api`, the pages, `/sync/status`,
 * which is the core's) is `central_front_only` (421): the load balancer sent it to the wrong process.
 */
export function frontNotFound(req: FastifyRequest): ApiError | undefined {
  const path = (req.url ?? '/').split('?')[0];
  if (path.startsWith('/sync/') && path !== '/sync/status') return undefined;
  return new ApiError('central_front_only', {
    message: `This is a posd central-front: it serves only /sync/* (the store boxes' protocol) and /healthz, not ${req.method} ${echoPath(req.url)}. Send /api and the pages to the core central.`,
  });
}
