import type { AppContext } from '../../context.js';
import { groupCommit } from '../../db/group-commit.js';
import type { Worker } from '../../api/module.js';
import { isoTime } from '../../clock.js';
import { storeSide } from './sync-store.js';
import { centralPin, centralTarget, syncStatus } from '../status.js';
import { STATE } from '../shared/state.js';
import { nextBatch, recordAck, resetAck, tailEvents } from './push.js';
import { applyFeedPage } from './feed.js';
import { reconcileDay } from './reconcile.js';
import { boxZone, dateIn } from '../shared/summary.js';
import { CentralClient, CentralRefusal } from './transport.js';
import { holdingsAtCursor, rejoin } from './rejoin.js';

/** Exponential back-off with "equal jitter": half fixed, half random, so boxes do not retry in step. */
export function backoffDelay(attempt: number, minMs: number, maxMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(maxMs, minMs * 2 ** Math.min(attempt, 30));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** One push pass: tail events, then send batches until nothing waits. Returns how many records were acknowledged. */
export async function pushAll(
  ctx: Pick<AppContext, 'db' | 'clock' | 'config'>,
  client: CentralClient,
  storeId: string,
  opts: { signal?: AbortSignal; onBatch?: (acked: number, waiting: number, pushMs: number, records: number) => void } = {},
): Promise<number> {
  const { db } = ctx;
  let total = 0;
  for (;;) {
    // The sync cursors' writes join the group commit with the requests' (no flush of their own).
    // The batch is read in the tail's transaction: a fact it holds has its events (written with it)
    // tailed too, so "nothing waiting" never shows between a sale pushed and its event copied.
    const batch = await groupCommit(db, () => {
      tailEvents(db);
      return nextBatch(db, storeId, ctx.config.sync.batch_size, ctx.config.sync.batch_max_bytes);
    });
    if (!batch) return total;
    const t0 = ctx.clock.now();
    const started = performance.now();
    let res;
    try {
      res = await client.push(batch, opts.signal);
    } catch (err) {
      // The central lost what it had applied (restored from a backup): push again from its point.
      if (err instanceof CentralRefusal && err.body.code === 'sync_sequence_gap' && typeof err.body.applied_seq === 'number') {
        const applied = err.body.applied_seq;
        await groupCommit(db, () => resetAck(db, applied));
      }
      throw err;
    }
    const t1 = ctx.clock.now();
    const pushMs = performance.now() - started;
    const before = Number(storeSide(db).state(STATE.ackedSeq) ?? 0);
    const answer = res;
    const acked = await groupCommit(db, () => {
      const next = recordAck(db, answer);
      noteSuccess(ctx, STATE.lastPushOk, answer.server_time, t0, t1);
      return next;
    });
    total += acked - before > 0 ? batch.records.filter((r) => r.seq <= acked && r.seq > before).length : 0;
    opts.onBatch?.(acked, storeSide(db).waiting(acked).n, pushMs, batch.records.length);
    if (acked < batch.records[batch.records.length - 1].seq) return total; // the central stopped short: try later
  }
}

function noteSuccess(ctx: Pick<AppContext, 'db' | 'clock'>, key: string, serverTime: string, t0: number, t1: number): void {
  const store = storeSide(ctx.db);
  const server = Date.parse(serverTime);
  ctx.db
    .transaction(() => {
      store.setState(key, isoTime(t1));
      store.setState(STATE.lastAttemptOk, 1);
      store.setState(STATE.linkDownSince, null);
      store.closeOutage('central', isoTime(t1));
      if (Number.isFinite(server)) store.setState(STATE.clockOffset, Math.round(server - (t0 + t1) / 2));
    })
    .immediate();
}

function noteFailure(ctx: Pick<AppContext, 'db' | 'clock'>, err: unknown): void {
  const store = storeSide(ctx.db);
  ctx.db
    .transaction(() => {
      store.setState(STATE.lastError, errorText(err));
      store.setState(STATE.lastErrorAt, isoTime(ctx.clock.now()));
      // A refusal is an answer: the link is up and the central takes nothing (the stalled alert says so).
      const answered = err instanceof CentralRefusal;
      store.setState(STATE.lastAttemptOk, answered ? 1 : 0);
      const at = isoTime(ctx.clock.now());
      if (answered) {
        store.setState(STATE.linkDownSince, null);
        store.closeOutage('central', at);
      } else {
        if (store.state(STATE.linkDownSince) === undefined) store.setState(STATE.linkDownSince, at);
        // The outage window is kept for the report after it (linkDownSince is cleared by the next answer).
        store.openOutage('central', store.state(STATE.linkDownSince) ?? at);
      }
    })
    .immediate();
}

/**
 * The store's sync worker: a push loop (outbox → /sync/push), a pull loop (long-poll /sync/feed)
 * and a periodic reconciliation. It holds no state a restart would lose: cursors live in the
 * database. Nothing in a request path waits on it.
 */
export class SyncWorker implements Worker {
  readonly name = 'sync';
  private readonly abort = new AbortController();
  private wakePush?: () => void;
  private loops: Promise<void>[] = [];
  /** When the first failure after a success happened (wall time), for the one "answers again" line. */
  private downSince: number | null = null;
  private client?: CentralClient;
  private readonly onEvents = () => this.wakePush?.();

  constructor(private readonly ctx: AppContext) {}

  start(): void {
    const target = centralTarget(this.ctx.config, this.ctx.db);
    const storeId = storeSide(this.ctx.db).state(STATE.storeId);
    if (!target || !storeId) {
      this.ctx.log.info('sync: no central configured (posd init --central-url URL --central-key KEY); working alone');
      return;
    }
    let pin;
    try {
      pin = centralPin(this.ctx.config, this.ctx.db);
    } catch (err) {
      this.ctx.log.error({ err: errorText(err), file: this.ctx.config.sync.central_ca_file }, 'sync: cannot read sync.central_ca_file; not syncing');
      return;
    }
    this.client = new CentralClient(target.url, target.key, { timeoutMs: this.ctx.config.sync.request_timeout_ms, pin });
    this.ctx.outbox.notifier.on('events', this.onEvents);
    this.ctx.log.info({ central: target.url, store_id: storeId, pinned: pin?.fingerprint ?? null }, 'sync: pushing to the central');
    // Nothing is pushed or pulled before the box agrees with the central on its own records (a box
    // restored from an older backup would reuse seqs the central holds); selling never waits for it.
    const joined = this.rejoinLoop(storeId);
    this.loops = [
      joined.then((ok) => (ok ? this.pushLoop(storeId) : undefined)),
      joined.then((ok) => (ok ? this.pullLoop(storeId) : undefined)),
      joined.then((ok) => (ok ? this.reconcileLoop() : undefined)),
      this.watchLoop(),
    ];
  }

  /** Wakes the push loop now (new facts, or `posd sync now`). */
  nudge(): void {
    this.wakePush?.();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    this.ctx.outbox.notifier.off('events', this.onEvents);
    this.wakePush?.();
    await Promise.allSettled(this.loops);
    await this.client?.close();
  }

  private get stopped(): boolean {
    return this.abort.signal.aborted || this.ctx.shutdown.aborted;
  }

  /** Waits `ms` (real time: back-off is about the network, not the business clock) or until woken or stopped. */
  private pause(ms: number, wakeable: boolean): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.abort.signal.removeEventListener('abort', done);
        if (wakeable && this.wakePush === done) this.wakePush = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.abort.signal.addEventListener('abort', done, { once: true });
      if (wakeable) this.wakePush = done;
    });
  }

  /**
   * Asks the central what it holds of this store and makes the outbox agree (sync/store/rejoin.ts), with
   * the push loop's back-off until the central answers. Resolves false when stopped first.
   */
  private async rejoinLoop(storeId: string): Promise<boolean> {
    const { config } = this.ctx;
    let failures = 0;
    while (!this.stopped) {
      try {
        // Events are copied into the outbox while the central is away, as the push loop does.
        await groupCommit(this.ctx.db, () => tailEvents(this.ctx.db));
        const held = await holdingsAtCursor(this.ctx.db, this.client!, storeId, this.abort.signal);
        const r = await rejoin(this.ctx, held, storeId);
        this.answered();
        if (r.takenBack || r.moved || r.centralBehind) {
          this.ctx.log.warn(
            {
              event: 'sync_rejoined',
              central_applied_seq: r.centralAppliedSeq,
              taken_back: r.takenBack,
              moved: r.moved,
              next_seq: r.nextSeq,
              not_applied: r.notApplied,
            },
            r.centralBehind
              ? `sync: the central holds this store's records only up to seq ${r.centralAppliedSeq}; pushing again from there`
              : `sync: rejoined the central after a restore: took back ${r.takenBack} records the backup lacked, moved ${r.moved} records made since past the central's seq ${r.centralAppliedSeq}; the next record is seq ${r.nextSeq}`,
          );
        }
        for (const n of r.notApplied)
          this.ctx.log.error({ record_id: n.id, kind: n.kind, reason: n.reason }, 'sync: a record taken back from the central could not be applied here');
        return true;
      } catch (err) {
        if (this.stopped) break;
        failures++;
        this.fail('rejoin', err);
        await this.pause(backoffDelay(failures, config.sync.backoff_min_ms, config.sync.backoff_max_ms), false);
      }
    }
    return false;
  }

  private async pushLoop(storeId: string): Promise<void> {
    const { config } = this.ctx;
    let failures = 0;
    while (!this.stopped) {
      try {
        const pushed = await pushAll(this.ctx, this.client!, storeId, {
          signal: this.abort.signal,
          // One line per push at debug level: the chain bench (bench/chain.ts) reads the round trips.
          onBatch: (acked, waiting, pushMs, records) => this.ctx.log.debug({ acked, waiting, push_ms: pushMs, records }, 'sync: pushed'),
        });
        // Nothing to push sends nothing: only a push the central took says it answers.
        if (pushed > 0) this.answered();
        failures = 0;
        // Facts without events do not ring the outbox bell: look again soon anyway.
        await this.pause(config.sync.backoff_min_ms, true);
      } catch (err) {
        if (this.stopped) break;
        failures++;
        this.fail('push', err);
        await this.pause(backoffDelay(failures, config.sync.backoff_min_ms, config.sync.backoff_max_ms), false);
      }
    }
  }

  private async pullLoop(storeId: string): Promise<void> {
    const { config } = this.ctx;
    let failures = 0;
    while (!this.stopped) {
      try {
        const cursor = Number(storeSide(this.ctx.db).state(STATE.feedCursor) ?? 0);
        const t0 = this.ctx.clock.now();
        const page = await this.client!.feed(cursor, config.sync.feed_wait_ms, this.abort.signal, storeId);
        await groupCommit(this.ctx.db, () => {
          applyFeedPage(this.ctx, page);
          noteSuccess(this.ctx, STATE.lastPullOk, page.server_time, t0, this.ctx.clock.now());
        });
        this.answered();
        failures = 0;
      } catch (err) {
        if (this.stopped) break;
        failures++;
        this.fail('pull', err);
        await this.pause(backoffDelay(failures, config.sync.backoff_min_ms, config.sync.backoff_max_ms), false);
      }
    }
  }

  private async reconcileLoop(): Promise<void> {
    const every = this.ctx.config.sync.reconcile_interval_ms;
    if (!every) return;
    while (!this.stopped) {
      await this.pause(every, false);
      if (this.stopped) break;
      const now = this.ctx.clock.now();
      // The store's days, yesterday's and today's, in the box's zone (what the page calls today).
      const zone = boxZone();
      const today = dateIn(now, zone);
      const yesterday = new Date(Date.parse(`${today}T00:00:00Z`) - 86_400_000).toISOString().slice(0, 10);
      for (const day of [yesterday, today]) {
        try {
          const r = await reconcileDay(this.ctx, this.client!, day, this.abort.signal);
          if (r.state === 'different') this.ctx.log.warn({ day, differences: r.differences.length }, 'sync: totals differ from the central');
        } catch (err) {
          if (!this.stopped) this.ctx.log.warn({ day, err: errorText(err) }, 'sync: reconciliation failed');
        }
      }
    }
  }

  /**
   * Raises its hand: an operational event in the log when a sync alert starts (records ageing while
   * the central answers, or the link down too long), and one when it clears. Doctor and the status
   * page read the same alerts from the database.
   */
  private async watchLoop(): Promise<void> {
    const { sync } = this.ctx.config;
    const every = Math.min(30_000, Math.max(200, Math.min(sync.alert_waiting_ms, sync.alert_link_down_ms) / 4));
    const active = new Map<string, string>();
    while (!this.stopped) {
      await this.pause(every, false);
      if (this.stopped) break;
      let alerts;
      try {
        alerts = syncStatus(this.ctx.config, this.ctx.db, this.ctx.clock.now()).alerts;
      } catch {
        continue; // the database is closing
      }
      for (const a of alerts) {
        if (!active.has(a.code)) this.ctx.log.warn({ event: a.code, fix: a.fix }, `sync: ${a.message}`);
        active.set(a.code, a.message);
      }
      for (const code of [...active.keys()]) {
        if (alerts.some((a) => a.code === code)) continue;
        active.delete(code);
        this.ctx.log.info({ event: 'sync_recovered', cleared: code }, 'sync: recovered');
      }
    }
  }

  /**
   * The central answers again after a failure: one line, whichever loop saw it first, so the log
   * that showed the link going down shows it coming back (the alert's `sync_recovered` comes only
   * after `sync.alert_link_down_ms`).
   */
  private answered(): void {
    if (this.downSince === null) return;
    const downMs = Date.now() - this.downSince;
    this.downSince = null;
    this.ctx.log.info({ event: 'sync_link_up', down_ms: downMs }, 'sync: the central answers again');
  }

  private fail(what: string, err: unknown): void {
    this.downSince ??= Date.now();
    try {
      noteFailure(this.ctx, err);
    } catch {
      /* the database is closing: nothing to record */
    }
    this.ctx.log.warn({ err: errorText(err) }, `sync: ${what} failed`);
  }
}
