import type { AppContext } from '../../context.js';
import type { Worker } from '../../api/module.js';
import { tx } from '../../db/database.js';
import { perDb } from '../../db/per-db.js';
import { isoTime } from '../../clock.js';
import { accountsOf, type Account } from '../../accounts/service.js';
import { withFeedOrigin } from '../../outbox/feed-changes.js';
import { SyncRejection, type SyncOrigin } from '../shared/registry.js';
import { syncScope } from './service.js';
import { projectorBell } from './projector-bell.js';
import { centralSide, type ReceivedRow } from './sync-store.js';
import type { PushRecord } from '../shared/wire.js';
import { checkAtProjection } from './checks/projection.js';
import { publishRefusal } from './checks/refusal.js';
import { refusalText } from './checks/receipt.js';
import { REVIEW_PREFIX, countTowardsDay, reviewHold } from './checks/review.js';
import { SetRun, type SliceRecord } from './set-apply.js';

/** The projector applies a store's records in slices of at most this many records ... */
export const SLICE_RECORDS = 100;
/** ... or this much time, whichever comes first; then the event loop serves what waits. */
const SLICE_MS = 20;
/**
 * The slow fallback: a pass this often even when no receipt rang (a record an operator put back
 * with `posd sync retry` from another process, a store whose slice failed on a busy database).
 */
export const PROJECTOR_TICK_MS = 2000;

const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The store the projector is in the middle of (between two of its slices), per database. */
const projecting = perDb(() => ({ store: null as string | null }));

/** How long a slice may grow, and what ends it early (a chain core's thread: a daemon write waiting). */
export interface SliceLimits {
  records: number;
  ms: number;
  /** True when another writer waits for the write lock: the slice ends after its current record, once past `yieldAfter`. */
  yieldNow?: () => boolean;
  /** `yieldNow` is asked once the slice holds this many records or ran this long (default: from its first record). */
  yieldAfter?: { records: number; ms: number };
  /** False: every record alone in its savepoint, no set-based apply (set-apply.ts; the tests' comparison). */
  sets?: boolean;
}

const LOOP_SLICE: SliceLimits = { records: SLICE_RECORDS, ms: SLICE_MS };

/**
 * The central's projector: applies the records pushes received (`sync_received`, outcome
 * `received`) with the kinds' appliers, each store in its own order. A pass visits the stores with
 * work round-robin, one slice of one store at a time: about 100 records or 20 ms, one transaction
 * that applies them and moves the store's `applied_seq` with them, then it yields to the event
 * loop. A store's held records (an applier came with an upgrade, an operator's retry) are tried at
 * its first visit of a pass, before its received records, as a push did. Woken when a receipt
 * commits; a slow timer covers what no receipt rings for. A crash between receipt and projection
 * loses nothing: the cursor only moves with the records it applied, and the next start resumes.
 */
export class Projector implements Worker {
  readonly name = 'sync-projector';
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopping = false;
  private scheduled = false;
  private started = false;
  /** Slices committed so far (for `idle`: a pass that committed none made no progress). */
  private slices = 0;

  constructor(
    private readonly ctx: AppContext,
    private readonly limits: SliceLimits = LOOP_SLICE,
  ) {}

  start(): void {
    if (this.ctx.config.sync.projector_paused) {
      this.ctx.log.warn({ event: 'sync.projector_paused' }, 'sync: the projector is paused (sync.projector_paused): pushes are received, not applied');
      return;
    }
    this.started = true;
    projectorBell(this.ctx.db).listen(() => this.wake());
    this.timer = setInterval(() => this.wake(), PROJECTOR_TICK_MS);
    this.timer.unref();
    this.wake();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    projectorBell(this.ctx.db).listen(undefined);
    clearInterval(this.timer);
    await this.running;
  }

  /** Looks for work soon (on the next turn of the event loop: never inside the ringer's commit). */
  wake(): void {
    if (this.stopping || !this.started) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (this.stopping || this.running) return;
      this.running = this.loop().finally(() => (this.running = undefined));
    });
  }

  /**
   * Resolves once nothing received waits, or the projector stops, is paused, or a pass made no
   * progress (a store failing on a busy database waits for the timer): for tests and the bench.
   */
  async idle(): Promise<void> {
    for (;;) {
      await this.settled();
      if (
        !this.started ||
        this.halted() ||
        !centralSide(this.ctx.db)
          .pendingStores()
          .some((s) => s.received_seq > s.applied_seq)
      )
        return;
      const before = this.slices;
      this.wake();
      await this.settled();
      if (this.slices === before) return;
    }
  }

  private async settled(): Promise<void> {
    while (this.running || this.scheduled) await (this.running ?? yieldToLoop());
  }

  private async loop(): Promise<void> {
    do {
      this.again = false;
      try {
        await this.pass();
      } catch (err) {
        this.ctx.log.error({ err }, 'sync: the projector pass failed; the next one tries again');
        return;
      }
    } while (this.again && !this.halted());
  }

  private halted(): boolean {
    return this.stopping || this.ctx.shutdown.aborted;
  }

  private async pass(): Promise<void> {
    const { ctx } = this;
    const store = centralSide(ctx.db);
    const heldTried = new Set<string>();
    const failed = new Set<string>();
    for (;;) {
      let moved = false;
      for (const s of store.pendingStores()) {
        if (this.halted()) return;
        if (failed.has(s.store_id)) continue;
        projecting(ctx.db).store = s.store_id;
        try {
          if (s.held_count > 0 && !heldTried.has(s.store_id)) {
            heldTried.add(s.store_id);
            const n = applyHeldOf(ctx, store.heldOf(s.store_id), true);
            if (n) ctx.log.info({ store_id: s.store_id, records: n }, 'sync: applied held records');
            if (n) projectorBell(ctx.db).sliced(s.store_id);
          }
          if (s.received_seq > s.applied_seq) {
            projectSlice(ctx, s.store_id, this.limits);
            this.slices++;
            projectorBell(ctx.db).sliced(s.store_id);
            moved = true;
          }
        } catch (err) {
          // A busy or failing database: this store waits for the next pass; the others go on.
          failed.add(s.store_id);
          ctx.log.error(
            { err, store_id: s.store_id, record_id: (err as { syncRecordId?: string }).syncRecordId },
            'sync: projecting a store failed; the next pass tries again',
          );
        } finally {
          projecting(ctx.db).store = null;
        }
        await yieldToLoop();
      }
      if (!moved) return;
    }
  }
}

/** The running projector of each database, for tests and the bench (`projectorOf(db)?.idle()`). */
const projectors = perDb(() => ({ current: undefined as Pick<Projector, 'idle'> | undefined }));

export function projectorWorker(ctx: AppContext, limits?: SliceLimits): Projector {
  const p = new Projector(ctx, limits);
  projectors(ctx.db).current = p;
  return p;
}

/** A projector running elsewhere (a chain core's thread: src/sync/central/projector-host.ts) that `projected` waits for. */
export function setProjectorOf(ctx: Pick<AppContext, 'db'>, p: Pick<Projector, 'idle'>): void {
  projectors(ctx.db).current = p;
}

/** Resolves once the projector of this central applied everything received so far. */
export async function projected(ctx: Pick<AppContext, 'db'>): Promise<void> {
  await projectors(ctx.db).current?.idle();
}

/**
 * One slice of one store: its records past `applied_seq`, in seq order, up to `limits` (on the
 * event loop SLICE_RECORDS or SLICE_MS), applied in one transaction that moves the cursor over
 * them. Returns how many were decided. A transient database error rolls the slice back whole and
 * propagates.
 */
export function projectSlice(ctx: AppContext, storeId: string, limits: SliceLimits = LOOP_SLICE): number {
  const store = centralSide(ctx.db);
  const accounts = accountsOf(ctx);
  return tx(ctx.db, () => {
    const row = store.storeRow(storeId);
    if (!row || row.received_seq <= row.applied_seq) return 0;
    const rows = store.receivedAfter(storeId, row.applied_seq, limits.records);
    if (!rows.length) return 0;
    const keyAccount = accounts.account(row.account_id);
    const byId = new Map<string, Account>();
    const rescope = () => {
      if (keyAccount) for (const a of syncScope(accounts, keyAccount)) byId.set(a.id, a);
    };
    rescope();
    const now = isoTime(ctx.clock.now());
    const started = performance.now();
    const origin = { storeId, keyAccountId: row.account_id };
    // A child connected at the store enters the key's scope when its `connected_account` record is
    // applied, possibly earlier in this slice: an unknown account is looked up again.
    const accountOf = (id: string) => {
      if (!byId.has(id)) rescope();
      return byId.get(id);
    };
    const alone = (record: SliceRecord) => {
      const account = accountOf(record.account_id);
      const decided =
        account && account.live_mode === record.live_mode
          ? applyOne(ctx, record, origin, account.organization_id, now)
          : {
              outcome: 'parked' as const,
              reason: `names account ${record.account_id} (${record.live_mode ? 'live' : 'sandbox'}), which this store's key does not act for`,
            };
      if (decided.outcome !== 'applied') store.setOutcome(record.id, decided.outcome, decided.reason, decided.outcome === 'parked' ? now : null);
      if (decided.outcome === 'parked') logParked(ctx, { ...record, store_id: storeId }, decided.reason);
    };
    // The records that may go as sets are kept in a run, applied before the next one that goes alone.
    const run = limits.sets === false ? undefined : new SetRun(ctx, origin, alone, transient);
    let seq = row.applied_seq;
    let n = 0;
    for (const r of rows) {
      if (n > 0) {
        const ran = performance.now() - started;
        const after = limits.yieldAfter;
        if (ran >= limits.ms || ((!after || n >= after.records || ran >= after.ms) && limits.yieldNow?.())) break;
      }
      if (r.outcome === 'received') {
        const record = { ...r, live_mode: r.live_mode === 1, payload: JSON.parse(r.payload) as Record<string, unknown>, prev_seq: 0 };
        const account = accountOf(r.account_id);
        if (!(run && account && account.live_mode === record.live_mode && run.add(record))) {
          run?.flush();
          alone(record);
        }
      }
      seq = r.seq;
      n++;
    }
    run?.flush();
    store.setApplied(storeId, row.applied_seq, seq);
    return n;
  });
}

function logParked(ctx: AppContext, r: Pick<ReceivedRow, 'store_id' | 'id' | 'seq' | 'kind'>, reason: string | null): void {
  ctx.log.warn(
    { event: 'sync.record_parked', store_id: r.store_id, record_id: r.id, seq: r.seq, kind: r.kind, reason },
    'sync: a record could not be applied and is parked for an operator (posd sync records)',
  );
}

/**
 * An applier's failure that says nothing about the record: the database itself was busy, full or
 * failing. The slice is rolled back and projected again later. Anything else (a bug, a constraint
 * the record breaks) would fail every time: that record is parked instead.
 */
function transient(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && code.startsWith('SQLITE_') && !code.startsWith('SQLITE_CONSTRAINT');
}

/**
 * Runs the kind's applier in a savepoint. A refusal on the merits is kept as `rejected` and told to
 * the store through its feed; a kind with no applier yet is `held` (applied later, at the store's
 * next visit by the projector after an upgrade), so one new kind never stops a store's whole
 * stream. A record whose applier fails is `parked` with the failure as its reason (its savepoint
 * rolled back) and waits for an operator (`posd sync retry` / `skip`), while the store's later
 * records keep flowing. Transient database errors propagate.
 */
function applyOne(
  ctx: AppContext,
  r: Pick<PushRecord, 'id' | 'kind' | 'account_id' | 'live_mode' | 'payload' | 'created_at' | 'seq' | 'prev_seq'>,
  origin: SyncOrigin,
  organizationId: string,
  now: string,
  /** An operator released it from review: the thresholds are not asked again. */
  released = false,
): { outcome: 'applied' | 'rejected' | 'held' | 'parked'; reason: string | null } {
  const apply = ctx.registry.sync.applier(r.kind);
  if (!apply) return { outcome: 'held', reason: `no applier for kind ${r.kind}` };
  const at = { storeId: origin.storeId, organizationId, now, stage: 'projection' as const };
  // What the central's state must allow, decided from the log alone (issue 32; checks/projection.ts).
  const refusal = checkAtProjection(ctx, r, origin);
  if (refusal) {
    publishRefusal(ctx, r, at, refusal);
    return { outcome: 'rejected', reason: refusalText(refusal) };
  }
  const hold = released ? null : reviewHold(ctx, r, origin.storeId);
  if (hold) {
    ctx.log.warn(
      { event: 'sync.record_held_for_review', store_id: origin.storeId, record_id: r.id, seq: r.seq, kind: r.kind, reason: hold.reason },
      'sync: a record is held for review (posd sync held list)',
    );
    return { outcome: 'held', reason: `${REVIEW_PREFIX}${refusalText(hold)}` };
  }
  try {
    // What the applier publishes to the feed is tagged with this box, so it is not sent back to it.
    withFeedOrigin(ctx.db, origin.storeId, () => tx(ctx.db, () => apply(ctx, r as PushRecord, origin)));
    countTowardsDay(ctx, r, origin.storeId);
    return { outcome: 'applied', reason: null };
  } catch (err) {
    if (!(err instanceof SyncRejection)) {
      if (transient(err)) throw Object.assign(err as Error, { syncRecordId: r.id });
      return { outcome: 'parked', reason: `applier failed: ${(err as Error).message ?? String(err)}`.slice(0, 500) };
    }
    publishRefusal(ctx, r, at, { reason: err.reason, code: err.code });
    return { outcome: 'rejected', reason: err.reason };
  }
}

/**
 * Applies held records (kept for want of an applier until an upgrade, or put back by `posd sync
 * retry`), in each store's order, each in its own transaction; returns how many were decided. The
 * projector does this at each store's first visit of a pass; this sweep of every store is for
 * tests and tools. A store the projector is in the middle of is passed by.
 */
export function applyHeldRecords(ctx: AppContext): number {
  const byStore = new Map<string, ReceivedRow[]>();
  for (const row of centralSide(ctx.db).held()) {
    const rows = byStore.get(row.store_id) ?? [];
    rows.push(row);
    byStore.set(row.store_id, rows);
  }
  let done = 0;
  for (const [storeId, rows] of byStore) if (projecting(ctx.db).store !== storeId) done += applyHeldOf(ctx, rows, true);
  return done;
}

/**
 * One store's held records, in seq order. A kind still unknown stays held and is passed over (its
 * store's later records were applied past it). A record whose applier fails is parked. A transient
 * database error stops this store's pass: with `isolate` it is logged (the next pass tries again).
 */
function applyHeldOf(ctx: AppContext, rows: ReceivedRow[], isolate: boolean): number {
  const store = centralSide(ctx.db);
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
        const released = row.reason?.startsWith('released:') ?? false;
        const r = applyOne(ctx, record, { storeId: row.store_id, keyAccountId: storeRow.account_id }, account.organization_id, now, released);
        if (r.outcome === 'held') return;
        store.setOutcome(row.id, r.outcome, r.reason, r.outcome === 'parked' ? now : null);
        if (r.outcome === 'parked') logParked(ctx, row, r.reason);
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
