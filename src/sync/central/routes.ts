import type { FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { Authenticator } from '../../api/auth.js';
import { ApiError } from '../../errors.js';
import { isoTime } from '../../clock.js';
import { accountsOf, type Account } from '../../accounts/service.js';
import { applyPush, bootstrap, centralSummary, readFeed, syncScope } from './service.js';
import { centralSide } from './sync-store.js';
import { feedWatch } from './feed-watch.js';
import { BootstrapResponse, FeedQuery, FeedResponse, PushBody, PushResponse, ReconcileQuery, ReconcileResponse } from '../shared/wire.js';
import { errorBodies } from '../../api/schemas.js';

const errors = errorBodies(400, 401, 403, 409, 422, 503);

/** `GET /sync/stores`: which stores push, how far, how recently, and what waits for an applier (also a central-front's). */
export const StoresResponse = Type.Array(
  Type.Object({
    store_id: Type.String(),
    account_id: Type.String(),
    live_mode: Type.Boolean(),
    /** The highest seq durably received (what the box's cursor follows). */
    received_seq: Type.Integer(),
    /** The projector's position: every record up to it is applied (or rejected, held, parked). */
    applied_seq: Type.Integer(),
    last_push_at: Type.Union([Type.String(), Type.Null()]),
    held_records: Type.Integer(),
    rejected_records: Type.Integer(),
    parked_records: Type.Integer(),
    skipped_records: Type.Integer(),
    /** What the box said it still held after its last push (null: never said). */
    box_waiting: Type.Union([Type.Integer(), Type.Null()]),
    box_waiting_since: Type.Union([Type.String(), Type.Null()]),
    created_at: Type.String(),
  }),
);

/** The account a store key acts for (account keys only: a store writes). */
export function storeKeyAccount(authenticator: Authenticator, req: FastifyRequest): Account {
  const raw = req.headers['x-secret-key'];
  const auth = authenticator.authenticate(Array.isArray(raw) ? raw[0] : raw, undefined);
  if (auth.kind !== 'account' || !auth.keyAccount) throw new ApiError('organization_key_unsupported');
  return auth.keyAccount;
}

/**
 * The central's side of the sync protocol (docs/sync-protocol.md): push, feed, bootstrap and the
 * totals a store compares with its own. Authenticated with the store account's key, like /api.
 */
export function centralRoutes(app: ApiApp, ctx: AppContext): void {
  const accounts = accountsOf(ctx);
  const authenticator = new Authenticator(accounts);
  const scopeOf = (req: FastifyRequest) => {
    const keyAccount = storeKeyAccount(authenticator, req);
    return { keyAccount, scope: syncScope(accounts, keyAccount) };
  };

  app.post('/sync/push', { schema: { hide: true, body: PushBody, response: { 200: PushResponse, ...errors } } }, async (req) => {
    const { keyAccount, scope } = scopeOf(req);
    // A chain's core takes records from PostgreSQL only (src/sync/central/pg-core.ts): one received here
    // would be unknown to the fronts, and their receipts would collide with it.
    if (ctx.config.sync.postgres.url) throw new ApiError('sync_push_at_core');
    try {
      return await applyPush(ctx, keyAccount, scope, req.body);
    } catch (err) {
      if (err instanceof ApiError) throw err;
      const recordId = (err as { syncRecordId?: string }).syncRecordId;
      req.log.error({ err, store_id: req.body.store_id, record_id: recordId }, 'applying a sync batch failed');
      throw new ApiError('sync_apply_failed', { extra: recordId ? { record_id: recordId } : {} });
    }
  });

  app.get('/sync/feed', { schema: { hide: true, querystring: FeedQuery, response: { 200: FeedResponse, ...errors } } }, async (req) => {
    const keyAccount = storeKeyAccount(authenticator, req);
    const { after, wait_ms: waitMs, limit, store_id: storeId } = req.query;
    const deadline = Date.now() + waitMs;
    const closed = new AbortController();
    req.raw.once('close', () => closed.abort());
    const watch = feedWatch(ctx.db);
    let organizations: Set<string> | undefined;
    for (;;) {
      // Stopping: answer "nothing new" rather than read a database that is being closed.
      if (ctx.shutdown.aborted) return { changes: [], cursor: after, server_time: isoTime(ctx.clock.now()) };
      const page = readFeed(ctx, keyAccount, after, limit, storeId);
      if (page.changes.length || Date.now() >= deadline || closed.signal.aborted) return { ...page, server_time: isoTime(ctx.clock.now()) };
      organizations ??= new Set(syncScope(accounts, keyAccount).map((a) => a.organization_id));
      // Woken when a feed row commits (in this process, or by another connection: the watch's
      // data_version check); not woken, the page already read is the answer.
      const woken = await watch.wait(organizations, page.cursor, deadline - Date.now(), [closed.signal, ctx.shutdown]);
      if (!woken) return { ...page, server_time: isoTime(ctx.clock.now()) };
    }
  });

  app.get('/sync/bootstrap', { schema: { hide: true, response: { 200: BootstrapResponse, ...errors } } }, async (req) => {
    const { keyAccount, scope } = scopeOf(req);
    return bootstrap(ctx, accounts, keyAccount, scope);
  });

  app.get('/sync/reconcile', { schema: { hide: true, querystring: ReconcileQuery, response: { 200: ReconcileResponse, ...errors } } }, async (req) => {
    const { keyAccount } = scopeOf(req);
    const row = centralSide(ctx.db).storeRow(req.query.store_id);
    if (row && row.account_id !== keyAccount.id) throw new ApiError('sync_store_mismatch');
    const { rows, appliedSeq, span, zone } = centralSummary(ctx, req.query.store_id, req.query.day, req.query.zone);
    return { day: req.query.day, ...span, zone, applied_seq: appliedSeq, rows, server_time: isoTime(ctx.clock.now()) };
  });

  // Central operations: which stores push, how far, how recently, and what waits for an applier.
  app.get(
    '/sync/stores',
    {
      schema: {
        hide: true,
        response: {
          200: StoresResponse,
          ...errors,
        },
      },
    },
    async (req) => {
      const raw = req.headers['x-secret-key'];
      const auth = authenticator.authenticate(Array.isArray(raw) ? raw[0] : raw, undefined);
      const visible = new Set(auth.kind === 'organization' ? auth.accountIds : syncScope(accounts, auth.keyAccount!).map((a) => a.id));
      return centralSide(ctx.db)
        .stores()
        .filter((s) => visible.has(s.account_id))
        .map((s) => ({
          store_id: s.store_id,
          account_id: s.account_id,
          live_mode: s.live_mode === 1,
          received_seq: s.received_seq,
          applied_seq: s.applied_seq,
          last_push_at: s.last_push_at,
          held_records: s.held_count,
          rejected_records: s.rejected_count,
          parked_records: s.parked_count,
          skipped_records: s.skipped_count,
          box_waiting: s.box_waiting,
          box_waiting_since: s.box_waiting_since,
          created_at: s.created_at,
        }));
    },
  );

  app.get('/sync/time', { schema: { hide: true, response: { 200: Type.Object({ server_time: Type.String() }) } } }, async () => ({
    server_time: isoTime(ctx.clock.now()),
  }));
}
