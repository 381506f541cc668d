import type { AppContext } from '../context.js';
import { tx, type Db } from '../db/database.js';
import { perDb } from '../db/per-db.js';
import { isoTime } from '../clock.js';
import { ApiError, invalid } from '../errors.js';
import { accountsOf, type AccountsService, type Account } from '../accounts/service.js';
import { SyncRejection, type SyncOrigin, type SyncRegistry } from './registry.js';
import { syncStore, type FactRow, type FeedRow, type ReceivedRow } from './store.js';
import { withFeedOrigin } from '../outbox/feed-changes.js';
import { originTotals } from './row-totals.js';
import { recordHash, type BootstrapResponse, type FeedChange, type PushBody, type PushRecord, type PushResponse, type SummaryRow } from './wire.js';

/**
 * The accounts one store key acts for at the central: its own account, that account's sandbox, its
 * connected children and theirs. A record naming any other account is refused.
 */
export function syncScope(accounts: AccountsService, keyAccount: Account): Account[] {
  const out: Account[] = [keyAccount];
  const add = (a: Account | undefined) => {
    if (a && !out.some((x) => x.id === a.id)) out.push(a);
  };
  if (keyAccount.live_mode) add(accounts.sandboxOf(keyAccount.id));
  const children = accounts.children(keyAccount.id, 10_000, 0).rows;
  for (const c of children) {
    add(c);
    if (c.live_mode) add(accounts.sandboxOf(c.id));
  }
  return out;
}

/** A push is applied in slices of at most this many records ... */
const SLICE_RECORDS = 100;
/** ... or this much time, whichever comes first; then the event loop serves what waits. */
const SLICE_MS = 20;

const pushQueues = perDb(() => new Map<string, Promise<unknown>>());

/**
 * Runs `fn` once every earlier push of `storeId` at this central has finished: a box's retry that
 * races its original (a lost response) must not interleave with it slice by slice.
 */
function inStoreOrder<T>(db: Db, storeId: string, fn: () => Promise<T>): Promise<T> {
  const queues = pushQueues(db);
  const run = (queues.get(storeId) ?? Promise.resolve()).then(fn);
  const tail = run.then(
    () => undefined,
    () => undefined,
  );
  queues.set(storeId, tail);
  void tail.then(() => {
    if (queues.get(storeId) === tail) queues.delete(storeId);
  });
  return run;
}

/** Whether a push of this store is being applied (or waits its turn) in this process. */
export function pushInFlight(db: Db, storeId: string): boolean {
  return pushQueues(db).has(storeId);
}

const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Applies one pushed batch: each record once by id, in the store's sequence. Everything that can
 * refuse the batch is checked before anything is written (a record of another account, a sequence
 * gap, a record already applied with different content), so a refusal still applies nothing. The
 * new records are then applied in slices (about 100 records or 20 ms), each its own transaction
 * that moves the store's `applied_seq` with its records, yielding to the event loop between
 * slices, so a catch-up of thousands of records never holds the central's API for seconds. One
 * push per store at a time (`inStoreOrder`). Answers the highest seq now durably applied: the
 * whole batch, or less if the central began stopping (the box pushes the rest later).
 */
export async function applyPush(ctx: AppContext, keyAccount: Account, scope: Account[], body: PushBody): Promise<PushResponse> {
  for (const [i, r] of body.records.entries()) {
    if (i > 0 && r.seq <= body.records[i - 1].seq) throw invalid({ [`records.${i}.seq`]: 'must be greater than the previous record seq' });
    if (r.prev_seq >= r.seq) throw invalid({ [`records.${i}.prev_seq`]: 'must be less than seq' });
  }
  return inStoreOrder(ctx.db, body.store_id, () => applyInSlices(ctx, keyAccount, scope, body));
}

async function applyInSlices(ctx: AppContext, keyAccount: Account, scope: Account[], body: PushBody): Promise<PushResponse> {
  const store = syncStore(ctx.db);
  const byId = new Map(scope.map((a) => [a.id, a]));
  // A child connected at the store enters the key's scope when its `connected_account` record is
  // applied, possibly earlier in this very batch: an unknown account is looked up again once.
  // `committed`: how far earlier slices of this push were applied (null: nothing is written yet).
  const accountOf = (r: PushRecord, committed: number | null): Account => {
    let account = byId.get(r.account_id);
    if (!account) {
      for (const a of syncScope(accountsOf(ctx), keyAccount)) byId.set(a.id, a);
      account = byId.get(r.account_id);
    }
    if (!account || account.live_mode !== r.live_mode) {
      const what = `Record ${r.id} names account ${r.account_id} (${r.live_mode ? 'live' : 'sandbox'}), which this key does not act for`;
      throw new ApiError('sync_account_forbidden', {
        message: committed === null ? `${what}; nothing was applied.` : `${what}; nothing past seq ${committed} was applied.`,
        extra: committed === null ? { record_id: r.id } : { record_id: r.id, applied_seq: committed },
      });
    }
    return account;
  };
  const mismatch = () => new ApiError('sync_store_mismatch', { message: `Store ${body.store_id} pushes for another account; nothing was applied.` });
  const known = store.storeRow(body.store_id);
  if (known && known.account_id !== keyAccount.id) throw mismatch();
  const before = known?.applied_seq ?? 0;

  // Every check that can refuse the batch, before anything is written. The store's applied seq
  // cannot move meanwhile: its pushes run one at a time, and the held sweep passes it by.
  let duplicates = 0;
  let last = before;
  const ids = new Set<string>();
  const fresh: Array<{ r: PushRecord; payloadJson: string; hash: string }> = [];
  for (const r of body.records) {
    const payloadJson = JSON.stringify(r.payload);
    const hash = recordHash(r, payloadJson);
    if (r.seq <= before) {
      const seen = store.receivedAt(body.store_id, r.seq);
      if (!seen || seen.id !== r.id || seen.hash !== hash) throw conflict(r.id, r.seq, before);
      duplicates++;
      continue;
    }
    if (r.prev_seq !== last) {
      // `last` is the central's applied seq only for the batch's first new record; after that it is
      // a record of this batch, which is not applied either, so the message must not call it applied.
      const expected = last === before ? `the central has applied up to seq ${before}` : `the record before it in the batch is seq ${last}`;
      throw new ApiError('sync_sequence_gap', {
        message: `Record ${r.id} (seq ${r.seq}) follows seq ${r.prev_seq}, but ${expected}; nothing was applied${last === before ? '' : ` (the central has applied up to seq ${before})`}.`,
        extra: { applied_seq: before, record_id: r.id },
      });
    }
    if (ids.has(r.id) || store.received(r.id)) throw conflict(r.id, r.seq, before);
    ids.add(r.id);
    fresh.push({ r, payloadJson, hash });
    last = r.seq;
  }
  // Refuse a foreign account before anything is written, unless a connection in the batch may bring it.
  const connects = body.records.some((r) => r.kind === 'connected_account');
  if (!connects) for (const { r } of fresh) accountOf(r, null);

  const now = isoTime(ctx.clock.now());
  let applied = 0;
  let held = 0;
  let parked = 0;
  const rejected: Array<{ id: string; reason: string }> = [];
  let appliedSeq = before;
  let next = 0;
  let first = true;
  while (first || next < fresh.length) {
    // Stopping: what is committed stays, the answer says how far, and the box pushes the rest later.
    if (!first && ctx.shutdown.aborted) break;
    const started = performance.now();
    appliedSeq = tx(ctx.db, () => {
      if (first) {
        const row = store.ensureStore(body.store_id, keyAccount.id, keyAccount.live_mode, now);
        if (row.account_id !== keyAccount.id) throw mismatch();
        // Records held before this central learnt their kind come first, so a store's facts keep their order.
        if (row.held_count > 0) applyHeldOf(ctx, store.heldOf(body.store_id), false);
      }
      let seq = appliedSeq;
      for (let n = 0; next < fresh.length && n < SLICE_RECORDS && (n === 0 || performance.now() - started < SLICE_MS); n++) {
        const { r, payloadJson, hash } = fresh[next];
        // Ids are global: another store's push may have taken this one since the checks above.
        if (store.received(r.id)) throw conflict(r.id, r.seq, appliedSeq, !first);
        // A refusal here rolls back this slice only: what earlier slices committed stays.
        const account = accountOf(r, first ? null : appliedSeq);
        const { outcome, reason } = applyOne(ctx, r, { storeId: body.store_id, keyAccountId: keyAccount.id }, account.organization_id, now);
        if (outcome === 'rejected') rejected.push({ id: r.id, reason: reason! });
        if (outcome === 'held') held++;
        if (outcome === 'parked') {
          parked++;
          ctx.log.warn({ event: 'sync.record_parked', store_id: body.store_id, record_id: r.id, seq: r.seq, kind: r.kind, reason }, 'sync: a record could not be applied and is parked for an operator (posd sync records)');
        }
        store.insertReceived({
          id: r.id,
          store_id: body.store_id,
          seq: r.seq,
          account_id: r.account_id,
          live_mode: r.live_mode ? 1 : 0,
          kind: r.kind,
          hash,
          payload: payloadJson,
          created_at: r.created_at,
          received_at: now,
          outcome,
          reason,
          decided_at: outcome === 'parked' ? now : null,
        });
        applied++;
        seq = r.seq;
        next++;
      }
      store.advanceStore(body.store_id, seq, now);
      return seq;
    });
    first = false;
    if (next < fresh.length) await yieldToLoop();
  }
  return { applied_seq: appliedSeq, applied, duplicates, held, parked, rejected, server_time: now };
}

/**
 * An applier's failure that says nothing about the record: the database itself was busy, full or
 * failing. The batch is refused whole and pushed again later, as before. Anything else (a bug, a
 * constraint the record breaks) would fail every retry of the batch: that record is parked instead.
 */
function transient(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && code.startsWith('SQLITE_') && !code.startsWith('SQLITE_CONSTRAINT');
}

/**
 * Runs the kind's applier in a savepoint. A refusal on the merits is kept as `rejected` and told to
 * the store through its feed; a kind with no applier yet is `held` (acknowledged, applied later by
 * `applyHeldRecords`), so one new kind never stops a store's whole stream. A record whose applier
 * fails is `parked` with the failure as its reason (its savepoint rolled back) and waits for an
 * operator (`posd sync retry` / `skip`), while the store's later records keep flowing: one bad
 * record used to refuse every push of its store, for good. Transient database errors propagate.
 */
function applyOne(
  ctx: AppContext,
  r: Pick<PushRecord, 'id' | 'kind' | 'account_id' | 'live_mode' | 'payload' | 'created_at' | 'seq' | 'prev_seq'>,
  origin: SyncOrigin,
  organizationId: string,
  now: string,
): { outcome: 'applied' | 'rejected' | 'held' | 'parked'; reason: string | null } {
  const apply = ctx.registry.sync.applier(r.kind);
  if (!apply) return { outcome: 'held', reason: `no applier for kind ${r.kind}` };
  try {
    // What the applier publishes to the feed is tagged with this box, so it is not sent back to it.
    withFeedOrigin(ctx.db, origin.storeId, () => tx(ctx.db, () => apply(ctx, r as PushRecord, origin)));
    return { outcome: 'applied', reason: null };
  } catch (err) {
    if (!(err instanceof SyncRejection)) {
      if (transient(err)) throw Object.assign(err as Error, { syncRecordId: r.id });
      return { outcome: 'parked', reason: `applier failed: ${(err as Error).message ?? String(err)}`.slice(0, 500) };
    }
    syncStore(ctx.db).insertFeed({
      organization_id: organizationId,
      account_id: r.account_id,
      live_mode: r.live_mode ? 1 : 0,
      kind: 'record_rejected',
      object_id: r.id,
      payload: JSON.stringify({ record_id: r.id, kind: r.kind, reason: err.reason, code: err.code, store_id: origin.storeId }),
      created_at: now,
      to_store_id: origin.storeId,
    });
    return { outcome: 'rejected', reason: err.reason };
  }
}

/**
 * Applies held records (kept for want of an applier until an upgrade, or put back by `posd sync
 * retry`), in each store's order. Each in its own transaction; returns how many were decided. A
 * record whose applier fails is parked and the store's later held records go on without it.
 */
export function applyHeldRecords(ctx: AppContext): number {
  const byStore = new Map<string, ReceivedRow[]>();
  for (const row of syncStore(ctx.db).held()) {
    const rows = byStore.get(row.store_id) ?? [];
    rows.push(row);
    byStore.set(row.store_id, rows);
  }
  let done = 0;
  // A store whose push is being applied is passed by: that push applies its held records first,
  // and a sweep between two of its slices would apply them out of the store's order.
  for (const [storeId, rows] of byStore) if (!pushInFlight(ctx.db, storeId)) done += applyHeldOf(ctx, rows, true);
  return done;
}

/**
 * One store's held records, in seq order. A kind still unknown stays held and is passed over (as
 * at push time, where later records of known kinds are applied past it). A record whose applier
 * fails is parked, as at push time. A transient database error stops this store's pass: with
 * `isolate` it is logged (the next sweep tries again); inside a push it fails the push.
 */
function applyHeldOf(ctx: AppContext, rows: ReceivedRow[], isolate: boolean): number {
  const store = syncStore(ctx.db);
  const accounts = accountsOf(ctx);
  let done = 0;
  for (const row of [...rows].sort((a, b) => a.seq - b.seq)) {
    if (!ctx.registry.sync.applier(row.kind)) continue;
    const storeRow = store.storeRow(row.store_id);
    const account = accounts.account(row.account_id);
    if (!storeRow || !account) continue;
    try {
      tx(ctx.db, () => {
        const record = { ...row, live_mode: row.live_mode === 1, payload: JSON.parse(row.payload) as Record<string, unknown>, prev_seq: 0 };
        const now = isoTime(ctx.clock.now());
        const r = applyOne(ctx, record, { storeId: row.store_id, keyAccountId: storeRow.account_id }, account.organization_id, now);
        if (r.outcome === 'held') return;
        store.setOutcome(row.id, r.outcome, r.reason, r.outcome === 'parked' ? now : null);
        if (r.outcome === 'parked') {
          ctx.log.warn(
            { event: 'sync.record_parked', store_id: row.store_id, record_id: row.id, seq: row.seq, kind: row.kind, reason: r.reason },
            'sync: a record could not be applied and is parked for an operator (posd sync records)',
          );
        }
      });
    } catch (err) {
      if (!isolate) throw err;
      ctx.log.error({ err, record_id: row.id, store_id: row.store_id }, 'sync: a held record could not be applied; it stays held');
      break;
    }
    done++;
  }
  return done;
}

function conflict(id: string, seq: number, appliedSeq: number, partly = false): ApiError {
  return new ApiError('sync_record_conflict', {
    message: `Record ${id} (seq ${seq}) differs from the record the central already applied with that id or at that seq; nothing${partly ? ` past seq ${appliedSeq}` : ''} was applied.`,
    extra: { record_id: id, applied_seq: appliedSeq },
  });
}

export function toFeedChange(row: FeedRow): FeedChange {
  return {
    seq: row.seq,
    kind: row.kind,
    account_id: row.account_id,
    organization_id: row.organization_id,
    live_mode: row.live_mode === 1,
    object_id: row.object_id,
    payload: JSON.parse(row.payload),
    created_at: row.created_at,
  };
}

/**
 * One read of the feed: rows after the cursor, and a cursor that skips other accounts' rows (and
 * the rows `storeId`'s own pushes caused) safely. An empty `storeId` (an older box) gets every row.
 */
export function readFeed(ctx: AppContext, keyAccount: Account, after: number, limit: number, storeId = ''): { changes: FeedChange[]; cursor: number } {
  const store = syncStore(ctx.db);
  const accounts = accountsOf(ctx);
  // One snapshot for the scope and both reads: the max seen is committed, so no row below it can
  // appear later, and an account made meanwhile (a new child) is in the scope its rows are read with.
  return ctx.db.transaction(() => {
    const scope = syncScope(accounts, keyAccount);
    const rows = store.feedAfter(after, scope.map((a) => a.id), keyAccount.organization_id, storeId, limit);
    const cursor = rows.length === limit ? rows[rows.length - 1].seq : Math.max(after, store.feedMax());
    return { changes: rows.map(toFeedChange), cursor };
  })();
}

/** What a new store box needs to act as the central's accounts: ids, names and key hashes, and where the feed is. */
export function bootstrap(ctx: AppContext, accounts: AccountsService, keyAccount: Account, scope: Account[]): BootstrapResponse {
  return ctx.db.transaction(() => {
    const org = accounts.organization(keyAccount.organization_id)!;
    const ids = new Set(scope.map((a) => a.id));
    const keys = accounts
      .keyRowsOfOrganization(org.id)
      .filter((k) => k.kind === 'organization' || (k.account_id !== null && ids.has(k.account_id)));
    return {
      protocol: 1 as const,
      organization: { id: org.id, name: org.name, created_at: org.created_at },
      accounts: scope.map((a) => ({
        id: a.id,
        live_mode: a.live_mode,
        name: a.name,
        sandbox_of: a.sandbox_of,
        parent_account_id: a.parent_account_id,
        tax_id: a.tax_id,
        tax_name: a.tax_name,
        country: a.country,
        default_currency: a.default_currency,
        event_format: a.event_format,
        created_at: a.created_at,
      })),
      keys,
      // A new box reads its scope's whole feed: what the central made for its accounts before it
      // joined (catalogue, bookings, ledger rows, accounts, keys) reaches it as a live change would.
      feed_cursor: 0,
      server_time: isoTime(ctx.clock.now()),
    };
  })();
}

/** The central's totals of one store's facts, events, ledger rows and intents for one UTC day. */
export function centralSummary(ctx: AppContext, storeId: string, day: string): { rows: SummaryRow[]; appliedSeq: number } {
  const store = syncStore(ctx.db);
  const { from, until } = dayRange(day);
  return ctx.db.transaction(() => ({
    rows: [
      ...factTotals(ctx.registry.sync, store.centralFacts(storeId, from, until)),
      ...store.centralEvents(storeId, from, until).map(toSummary),
      // Only the rows this store's records wrote: the central's own rows never came from the store.
      ...originTotals(ctx.registry.sync, ctx.db, from, until, storeId),
    ],
    appliedSeq: store.storeRow(storeId)?.applied_seq ?? 0,
  }))();
}

export function toSummary(r: { account_id: string; live_mode: number; currency: string; measure: string; count: number; sum: number }): SummaryRow {
  return { account_id: r.account_id, live_mode: r.live_mode === 1, currency: r.currency, measure: r.measure, count: r.count, sum: r.sum };
}

export function dayRange(day: string): { from: string; until: string } {
  const start = Date.parse(`${day}T00:00:00.000Z`);
  return { from: isoTime(start), until: isoTime(start + 86_400_000) };
}

/** Count and amount of facts per account, environment, currency and kind (`records.<kind>`), by each kind's rule. */
export function factTotals(registry: SyncRegistry, rows: FactRow[]): SummaryRow[] {
  const out = new Map<string, SummaryRow>();
  for (const r of rows) {
    const t = registry.totalsOf(r.kind, JSON.parse(r.payload));
    const currency = t?.currency ?? '';
    const key = `${r.account_id}|${r.live_mode}|${currency}|${r.kind}`;
    let row = out.get(key);
    if (!row) {
      row = { account_id: r.account_id, live_mode: r.live_mode === 1, currency, measure: `records.${r.kind}`, count: 0, sum: 0 };
      out.set(key, row);
    }
    row.count++;
    row.sum += t?.amount_in_cents ?? 0;
  }
  return [...out.values()];
}
