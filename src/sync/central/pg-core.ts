import { logHeld } from '../../db/log-hold.js';
import type pg from 'pg';
import type { AppContext } from '../../context.js';
import type { Worker } from '../../api/module.js';
import { LeaderWorkers, setPgCore } from './pg-core-slot.js';
import { CentralLog } from './central-log-core.js';
import { setReadiness } from '../../api/readiness.js';
import { isoTime } from '../../clock.js';
import { feedBell } from '../../outbox/feed-changes.js';
import { registerCoreMetrics } from './pg-core-metrics.js';
import { projectorBell } from './projector-bell.js';
import { centralSide } from './sync-store.js';
import { coreStore } from './core-store.js';
import { publishFor, publishReadModels } from './pg-core-publish.js';
import { CoreReporter } from './pg-core-report.js';
import { ingestBatch, type IngestBatch } from './core-ingest.js';
import { projectorThreadOf } from './projector-host.js';
import {
  allStores,
  behindStores,
  ChannelListener,
  coreFeedSource,
  createPool,
  FeedRelay,
  feedMaxPosition,
  migrate,
  ProjectorLease,
  projectorLag,
  readReceived,
  RECEIVED_CHANNEL,
  relayGuard,
  storeOf,
  type PgStoreRow,
} from '../pg/index.js';

/**
 * Records copied from PostgreSQL's log into the core's SQLite per transaction. Each transaction is
 * appended to the central log (every row image) while the event loop waits: 1,000 held the loop
 * about 120 ms (81 ms of it the append), the API's worst wait during a catch-up
 * (docs/decisions/0232-apply-on-the-core-measured.md).
 */
export const INGEST_BATCH = 250;
/**
 * How far a store's ingest runs ahead of the projector: past this many records received in the
 * core's SQLite and not applied yet, the store waits for the projector's slices. Without it the
 * first cycle of a catch-up copied every store's whole backlog before its first report, and
 * PostgreSQL's applied figure stood still meanwhile (10-20 s in the run).
 */
export const INGEST_AHEAD = 2000;
/**
 * The fallback timer: stores behind in PostgreSQL are looked at this often even when no front rang
 * (a lost notification costs this much), the relay copies what no bell rang for (another process's
 * key writes).
 */
export const CORE_TICK_MS = 1000;

interface Want {
  all: boolean;
  behind: boolean;
  stores: Set<string>;
}

/** Resolves after `ms`, or at once when `signal` aborts (its listener removed either way). */
const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });

/**
 * The core of a chain whose sync tables are on PostgreSQL (`role: central` with
 * `sync.postgres.url`; docs/central.md, "The core on PostgreSQL"). Stateless fronts receive pushes
 * into PostgreSQL's `sync_received`; this worker, on the one core holding the projector's lease:
 * - **ingests**: copies each store's received records past its SQLite `received_seq` into the
 *   SQLite `sync_received` (outcome `received`), one transaction per batch, idempotent by
 *   (store, seq) and id, and rings the SQLite projector (src/sync/central/projector.ts), which applies them
 *   with the appliers exactly as a push received here;
 * - **reports**: after the projector's slices commit, the outcomes and `applied_seq` with
 *   `markApplied` (a repeat changes nothing), the held/parked/skipped changes an operator's
 *   `posd sync retry`/`skip` caused, and the day totals (`ledger.*`, `intents.*`, `events`) of the
 *   days it touched, before the outcomes;
 * - **relays** the SQLite feed to PostgreSQL (FeedRelay, rung by the feed's bell) and publishes the
 *   read models (organizations, accounts, key hashes) at start and when the feed carries an
 *   `account` or `api_key` row.
 * Every SQLite write of the leader goes to the central's one log before its commit, and a core
 * that finds the lease taken is a standby replaying that log, refusing writes, running none of the
 * leader's workers (src/sync/central/central-log-core.ts); it takes over when the leader's session
 * ends, after replaying the log's tail.
 */
export class PgCore implements Worker {
  readonly name = 'sync-pg-core';
  readonly state = {
    role: 'starting' as 'starting' | 'standby' | 'leader' | 'stopped',
    lag: { records: 0, stores: 0, perStore: new Map<string, number>(), secondsPerStore: new Map<string, number>() },
    /** Records copied from PostgreSQL into the core's SQLite, and outcomes reported back. */
    ingested: 0,
    reported: 0,
    /** PostgreSQL's received_seq per store, as last read (the status page's received column). */
    pgReceived: new Map<string, number>(),
    /** How long the last takeover took, from the lease won to writes answered (replaying the log's tail). */
    takeoverMs: 0,
  };
  /** This core's place in the central's one log (src/sync/central/central-log-core.ts). */
  readonly log_: CentralLog;
  private readonly leaderWorkers: LeaderWorkers;
  private readonly pool: pg.Pool;
  private readonly client: pg.ClientConfig;
  private readonly stopping = new AbortController();
  private main: Promise<void> | undefined;
  private lease: ProjectorLease | undefined;
  private active = false;
  /** Ends the current leadership's wait (stop). */
  private endLeadership: () => void = () => undefined;
  private want: Want = { all: false, behind: false, stores: new Set() };
  private cycling: Promise<void> | undefined;
  private readonly reporter: CoreReporter;
  /** Stores whose ingest waits for the projector (INGEST_AHEAD): asked again as its slices make room. */
  private readonly waiting = new Set<string>();

  constructor(private readonly ctx: AppContext) {
    const { url, pool_max: max } = ctx.config.sync.postgres;
    this.client = { connectionString: url };
    this.pool = createPool({ connectionString: url, max, application_name: 'posd-core' });
    // An idle pooled connection that dies (a server restart) must not crash the daemon.
    this.pool.on('error', (err) => ctx.log.warn({ err }, 'sync: a PostgreSQL connection of the core failed'));
    const { host, port, public_url } = ctx.config.http;
    this.leaderWorkers = new LeaderWorkers(ctx);
    this.log_ = new CentralLog(ctx, this.pool, url, public_url || `http://${host}:${port}`);
    // Fenced (another core moved the epoch): this leadership ends; the core decides its entries as it steps down.
    this.log_.onFenced = () => this.endLeadership();
    this.reporter = new CoreReporter(ctx, this.pool, this.state, () => this.active);
    // Ready once the log is replayed and this core's writes go to it (its loops start just after).
    setReadiness(ctx.db, () => this.log_.readiness());
  }

  start(): void {
    this.main = this.run();
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    // A leader stops its loops first and then gives the lease up (run's finally): a standby taking
    // over never overlaps with this core's last report. A standby's wait is broken by closing it.
    if (this.state.role === 'leader') this.endLeadership();
    else await this.lease?.release();
    this.active = false;
    await this.main;
    await this.cycling?.catch(() => undefined);
    await this.log_.close();
    await this.pool.end().catch(() => undefined);
    this.state.role = 'stopped';
  }

  private get log() {
    return this.ctx.log;
  }

  /** Takes the lease (or waits for it as a standby), leads until the lease's session ends, then again. */
  private async run(): Promise<void> {
    let backoff = 500;
    this.log_.prepare();
    while (!this.stopping.signal.aborted) {
      const lease = new ProjectorLease(this.client);
      this.lease = lease;
      let leading = false;
      try {
        await migrate(this.pool);
        if (!(await lease.tryAcquire())) {
          this.state.role = 'standby';
          this.log.warn({ event: 'sync.core_standby' }, 'sync: another core holds the projector lease; this one replays the central log as a standby');
          this.log_.follow();
          await Promise.race([lease.acquire(), lease.ended.then((err) => Promise.reject(err))]);
          await this.log_.stopFollow();
        }
        if (this.stopping.signal.aborted) break;
        backoff = 500;
        const started = performance.now();
        const replayed = await this.log_.takeOver();
        leading = true;
        this.state.takeoverMs = Math.round(performance.now() - started);
        this.log.info(
          { event: 'sync.core_took_over', replayed, position: this.log_.state.position, ms: this.state.takeoverMs },
          'sync: this core took the lease and replayed the central log to its end; it now answers writes',
        );
        await this.leaderWorkers.start();
        await this.lead(lease);
      } catch (err) {
        if (!this.stopping.signal.aborted) this.log.error({ err }, 'sync: the core lost PostgreSQL; it tries again');
      } finally {
        this.active = false;
        await this.log_.stopFollow();
        if (leading) {
          await this.leaderWorkers.stop();
          await this.log_.stepDown();
        }
        await lease.release();
      }
      if (this.stopping.signal.aborted) break;
      this.state.role = 'standby';
      await sleep(backoff, this.stopping.signal);
      backoff = Math.min(backoff * 2, 10_000);
    }
  }

  private async lead(lease: ProjectorLease): Promise<void> {
    const { ctx, pool } = this;
    const db = ctx.db;
    // Positions in PostgreSQL are this core's feed seqs: never hand out one PostgreSQL holds.
    const continuesAfter = coreStore(db).feedPast(await feedMaxPosition(pool));
    await publishReadModels(this.ctx.db, pool);
    const relay = new FeedRelay(pool, coreFeedSource(db), 1000, {
      // What a feed row says leaves for PostgreSQL once the central's log holds it (src/db/log-hold.ts).
      beforeBatch: async (rows) => {
        await logHeld(db);
        await publishFor(db, pool, rows);
      },
      guard: relayGuard(await lease.pid()),
    });
    const relayFailed = (err: unknown) => this.log.warn({ err }, 'sync: relaying the feed to PostgreSQL failed; the next ring or tick tries again');
    const onRows = () => void relay.poke().catch(relayFailed);
    const listener = new ChannelListener(this.client, RECEIVED_CHANNEL);
    listener.on('notify', (storeId: string) => this.poke({ stores: [storeId] }));
    listener.on('reconnected', () => this.poke({ all: true }));
    await listener.start();
    this.state.role = 'leader';
    this.active = true;
    this.reporter.reset();
    this.log.info(
      { event: 'sync.core_leader', feed_after: continuesAfter },
      'sync: this core holds the projector lease: it ingests, projects and publishes to PostgreSQL',
    );
    feedBell(db).on('rows', onRows);
    relay.start(CORE_TICK_MS);
    onRows();
    this.waiting.clear();
    projectorBell(db).onSlice(() => this.poke({ report: true, stores: this.roomMade() }));
    const timer = setInterval(() => this.poke({ behind: true }), CORE_TICK_MS);
    timer.unref();
    this.poke({ all: true });
    const stopped = new Promise<void>((resolve) => {
      this.endLeadership = resolve;
      if (this.stopping.signal.aborted) resolve();
    });
    try {
      await Promise.race([lease.ended, stopped]);
    } finally {
      this.endLeadership = () => undefined;
      this.active = false;
      clearInterval(timer);
      projectorBell(db).onSlice(undefined);
      feedBell(db).off('rows', onRows);
      relay.stop();
      await listener.stop();
      await this.cycling?.catch(() => undefined);
      await this.reporter.settled();
      if (!this.stopping.signal.aborted)
        this.log.error(
          { event: 'sync.core_lease_lost' },
          'sync: the projector lease was lost (its PostgreSQL session ended); this core stops projecting and waits for it again',
        );
    }
  }

  /**
   * Asks for a report (on its own chain: src/sync/central/pg-core-report.ts) and a cycle: ingest
   * every store, the stores behind, or the named ones.
   */
  private poke(w: { all?: boolean; behind?: boolean; stores?: string[]; report?: boolean }): void {
    if (w.report && this.active) this.reporter.ask();
    if (w.all) this.want.all = true;
    if (w.behind) this.want.behind = true;
    for (const s of w.stores ?? []) this.want.stores.add(s);
    if (!this.active || this.cycling) return;
    this.cycling = this.cycle().finally(() => {
      this.cycling = undefined;
    });
  }

  private async cycle(): Promise<void> {
    while (this.active) {
      const w = this.want;
      if (!w.all && !w.behind && !w.stores.size) return;
      this.want = { all: false, behind: false, stores: new Set() };
      if (w.all) this.reporter.unknown.clear();
      try {
        await this.ingest(w);
        // What the ingest decided itself (a front's refusals) is reported too.
        this.reporter.ask();
        if (w.behind || w.all) this.state.lag = await projectorLag(this.pool);
      } catch (err) {
        // What was asked is asked again at the next tick (a full look if that was one).
        if (w.all) this.want.all = true;
        if (this.active) this.log.error({ err }, 'sync: the core could not ingest or report; the next tick tries again');
        return;
      }
    }
  }

  private async ingest(w: Want): Promise<void> {
    const { pool } = this;
    let targets: PgStoreRow[] = [];
    if (w.all) targets = await allStores(pool);
    else if (w.behind) targets = await behindStores(pool);
    const named = new Set(targets.map((t) => t.store_id));
    for (const id of w.stores) {
      if (named.has(id)) continue;
      const row = await storeOf(pool, id);
      if (row) targets.push(row);
    }
    for (const t of targets) {
      this.state.pgReceived.set(t.store_id, t.received_seq);
      if (!this.reporter.reported.has(t.store_id)) this.reporter.reported.set(t.store_id, t);
      await this.ingestStore(t);
    }
  }

  /** The waiting stores the projector has caught up with to half of INGEST_AHEAD: their ingest goes on. */
  private roomMade(): string[] {
    if (!this.waiting.size) return [];
    const store = centralSide(this.ctx.db);
    const ready = [...this.waiting].filter((id) => {
      const row = store.storeRow(id);
      return !row || row.received_seq - row.applied_seq < INGEST_AHEAD / 2;
    });
    for (const id of ready) this.waiting.delete(id);
    return ready;
  }

  /**
   * Copies one store's records past the core's `received_seq` into its SQLite, in batches, and
   * rings the projector; no further than INGEST_AHEAD past what the projector applied.
   */
  private async ingestStore(t: PgStoreRow): Promise<void> {
    const { ctx, pool } = this;
    const store = centralSide(ctx.db);
    let ahead: { after: number; rows: ReturnType<typeof readReceived> } | undefined;
    for (;;) {
      if (!this.active) return;
      const row = store.storeRow(t.store_id);
      const after = row?.received_seq ?? 0;
      if (t.received_seq <= after) return;
      if (row && after - row.applied_seq >= INGEST_AHEAD) {
        this.waiting.add(t.store_id);
        return;
      }
      const rows = await (ahead?.after === after ? ahead.rows : readReceived(pool, t.store_id, after, INGEST_BATCH));
      ahead = undefined;
      if (!rows.length) return;
      const last = rows[rows.length - 1].seq;
      // While the thread writes this batch, the next one is read from PostgreSQL (dropped if unused).
      if (projectorThreadOf(ctx) && rows.length === INGEST_BATCH && last < t.received_seq) {
        ahead = { after: last, rows: readReceived(pool, t.store_id, last, INGEST_BATCH) };
        ahead.rows.catch(() => undefined);
      }
      const batch: IngestBatch = {
        store: t,
        at: isoTime(ctx.clock.now()),
        rows: rows.map((r) => ({
          id: r.id,
          seq: r.seq,
          account_id: r.account_id,
          live_mode: r.live_mode ? 1 : 0,
          kind: r.kind,
          hash: r.hash,
          payload: r.payload,
          created_at: r.created_at,
          // The front's time of receipt: the status page's lag is the box's, not the ingest's.
          received_at: r.received_at,
          // A front's refusal at receipt is decided: kept, never applied, told to the box here.
          outcome: r.outcome,
          reason: r.reason,
        })),
      };
      // On the projector's thread (its transaction and append off this loop) while it runs.
      const thread = projectorThreadOf(ctx);
      if (thread) await thread.ingest(batch);
      else {
        ingestBatch(ctx, batch);
        projectorBell(ctx.db).ring();
      }
      this.state.ingested += rows.length;
      if (rows.length < INGEST_BATCH) return;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }
}

export function pgCoreWorker(ctx: AppContext): PgCore {
  const core = new PgCore(ctx);
  setPgCore(ctx, core);
  registerCoreMetrics(ctx, core);
  return core;
}
