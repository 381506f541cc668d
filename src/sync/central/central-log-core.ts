import type pg from 'pg';
import type { AppContext } from '../../context.js';
import { setCommitGate, tx } from '../../db/database.js';
import {
  ensureLogState,
  logPosition,
  replayEntries,
  setLogPosition,
  snapshotChanges,
  startCapture,
  stopCapture,
  takeChanges,
} from '../../db/change-capture.js';
import { ApiError } from '../../errors.js';
import type { Readiness } from '../../api/readiness.js';
import { metrics } from '../../system/metrics.js';
import { appendEntry, entriesAfter, entriesAfterSync, leaderOf, logEnd, reportCore, takeEpoch, type LogEntry } from '../pg/central-log.js';
import { SyncPgClient, SyncQueryError } from '../pg/sync-client.js';
import type { LogLink } from './projector-host.js';

/** Entries a follower reads per query, and replays per transaction at most. */
const FOLLOW_BATCH = 200;
/** Row changes replayed per transaction at most (then the event loop serves what waits). */
const REPLAY_CHANGES = 5000;
/** How often an idle follower looks for new entries, and how often every core reports its place. */
export const FOLLOW_IDLE_MS = 50;
const REPORT_MS = 1000;
/** An append that takes longer fails the write (the append may still commit: the log is re-read first). */
const APPEND_TIMEOUT_MS = 5000;

const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * A core's place in the central's one log (docs/central.md, "One log"), on its own SQLite file:
 * - as a **standby** it replays the log continuously (row images: no applier runs, nothing is
 *   sent), and refuses every write of its own: a commit gate that throws `central_standby`, naming
 *   the leader, so no request, worker or tool of this process changes the file behind the log;
 * - when it takes the lease it moves the epoch (the fence), replays the log to its end (a new log
 *   begins with a snapshot of the first leader's file), then captures its own writes: every
 *   outermost transaction appends its row changes at the next position before it commits. An
 *   append that fails rolls the transaction back (the request answers 503); one whose answer was
 *   lost may have committed, so the core re-reads the log before its next write.
 */
export class CentralLog {
  readonly state = {
    role: 'standby' as 'standby' | 'leader',
    position: 0,
    end: 0,
    leader: null as string | null,
    replayed: 0,
    appended: 0,
    /** Whether the projector's thread runs (src/sync/central/projector-host.ts), and the entries it appended. */
    thread: false,
    threadAppended: 0,
  };
  private epoch = 0;
  private client: SyncPgClient | undefined;
  /** An append's outcome is unknown: the log is re-read before the next write. */
  private unsure = false;
  private following: Promise<void> | undefined;
  private stopFollowing = new AbortController();
  private lastReport = 0;

  /** How long the leader's thread waits for each append (it holds the SQLite write lock meanwhile). */
  private readonly appendSeconds;

  constructor(
    private readonly ctx: AppContext,
    private readonly pool: pg.Pool,
    private readonly url: string,
    readonly name: string,
  ) {
    this.appendSeconds = metrics(ctx).histogram({
      name: 'posd_central_log_append_seconds',
      help: "Time the leading core waits for each append to the central's log, inside its SQLite transaction",
      buckets: [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 5],
    });
  }

  private get db() {
    return this.ctx.db;
  }

  /** At start: the core's place in the log, and no write of its own until it leads. */
  prepare(): void {
    ensureLogState(this.db);
    this.state.position = logPosition(this.db);
    this.standbyGate();
  }

  /** The refusal of a write at a standby: 503 naming the leader as it wrote itself in PostgreSQL. */
  refusal(): ApiError {
    return new ApiError('central_standby', {
      message: `This core is a standby: writes go to the leading core${this.state.leader ? ` (${this.state.leader})` : ''}; nothing was written.`,
      extra: { leader: this.state.leader },
    });
  }

  /** What `/readyz` answers (src/api/readiness.ts): ready only while leading. */
  readiness(): Readiness {
    return this.state.role === 'leader' ? { ready: true, status: 'leader' } : { ready: false, status: 'standby', refusal: () => this.refusal() };
  }

  private standbyGate(): void {
    this.state.role = 'standby';
    setCommitGate(this.db, () => {
      throw this.refusal();
    });
  }

  /** Replays the log in the background until `stopFollow` (a standby's life). */
  follow(): void {
    this.stopFollowing = new AbortController();
    const signal = this.stopFollowing.signal;
    this.following = (async () => {
      while (!signal.aborted) {
        try {
          const n = await this.catchUp(signal);
          await this.report(false);
          if (n === 0) await new Promise((r) => setTimeout(r, FOLLOW_IDLE_MS));
        } catch (err) {
          if (signal.aborted) return;
          this.ctx.log.warn({ err }, 'sync: the standby could not read the central log; it tries again');
          await new Promise((r) => setTimeout(r, 1000));
        }
      }
    })();
  }

  async stopFollow(): Promise<void> {
    this.stopFollowing.abort();
    await this.following;
    this.following = undefined;
  }

  /** Replays every entry past this core's position, batch by batch; returns how many. */
  async catchUp(signal?: AbortSignal): Promise<number> {
    let n = 0;
    for (;;) {
      if (signal?.aborted) return n;
      const entries = await entriesAfter(this.pool, this.state.position, FOLLOW_BATCH);
      if (!entries.length) return n;
      this.replay(entries);
      n += entries.length;
      if (entries.length < FOLLOW_BATCH) return n;
      await yieldToLoop();
    }
  }

  /** Replays entries (in order, contiguous after this core's position) in transactions of about REPLAY_CHANGES changes. */
  private replay(entries: readonly LogEntry[]): void {
    let i = 0;
    while (i < entries.length) {
      const gate = this.state.role;
      // The gate is this core's own writes' (refused, or appended): a replay is neither.
      setCommitGate(this.db, undefined);
      try {
        const from = i;
        i = replayEntries(this.db, entries, i, REPLAY_CHANGES);
        // A leader repairing its place replays with its capture on: what that captured is not its own.
        if (gate === 'leader' && i > from) takeChanges(this.db);
        this.state.position = entries[i - 1].position;
        this.state.replayed += i;
      } finally {
        if (gate === 'leader') this.leaderGate();
        else this.standbyGate();
      }
    }
  }

  /**
   * Takes over after the lease was won: the epoch moved (waiting out the old leader's appends in
   * flight), the log replayed to its end, a snapshot appended when the log is empty, then this
   * core's own writes captured and appended. Returns the replayed entry count.
   */
  async takeOver(): Promise<number> {
    this.epoch = await takeEpoch(this.pool, this.name);
    this.state.leader = this.name;
    const replayed = await this.catchUp();
    this.state.end = await logEnd(this.pool);
    this.client ??= new SyncPgClient(this.url);
    this.unsure = false;
    if (this.state.end === 0 && this.state.position === 0) {
      const snapshot = snapshotChanges(this.db);
      if (snapshot.length) {
        if (!appendEntry(this.client, 1, this.epoch, JSON.stringify(snapshot), snapshot.length, 60_000))
          throw new Error('fenced while writing the log snapshot');
        // Not a write of its own: the snapshot is in the log already (the standby gate is still on).
        setCommitGate(this.db, undefined);
        tx(this.db, () => setLogPosition(this.db, 1));
        this.state.position = 1;
      }
    } else if (this.state.end !== this.state.position) {
      throw new Error(`the log ends at ${this.state.end} but this core replayed to ${this.state.position}`);
    }
    startCapture(this.db);
    takeChanges(this.db);
    this.state.role = 'leader';
    this.leaderGate();
    return replayed;
  }

  /** Back to a standby (the lease lost or given up): capture off, writes refused. */
  async stepDown(): Promise<void> {
    stopCapture(this.db);
    this.standbyGate();
    this.state.leader = await leaderOf(this.pool).catch(() => null);
  }

  private leaderGate(): void {
    setCommitGate(this.db, () => this.append());
  }

  /** The commit gate of a leader: this transaction's changes at the next position, or the transaction fails. */
  private append(): void {
    const changes = takeChanges(this.db);
    if (!changes) return;
    if (this.unsure) {
      this.repairSoon();
      throw new ApiError('central_log_unavailable');
    }
    const client = this.client!;
    // The projector's thread appends from its own connection too: the file's figure, read under the write lock.
    const next = logPosition(this.db) + 1;
    let appended: boolean;
    const started = performance.now();
    try {
      appended = appendEntry(client, next, this.epoch, changes.json, changes.count, APPEND_TIMEOUT_MS);
      this.appendSeconds.observe((performance.now() - started) / 1000);
    } catch (err) {
      // Not known whether it committed (a lost answer, a taken position): read the log again first.
      this.unsure = true;
      this.repairSoon();
      this.ctx.log.error(
        { err: err instanceof SyncQueryError ? { message: err.message, code: err.code } : err },
        'sync: appending to the central log failed; the write is refused',
      );
      throw new ApiError('central_log_unavailable');
    }
    if (!appended) {
      this.state.leader = null;
      this.ctx.log.error({ event: 'sync.core_fenced' }, 'sync: another core moved the lease epoch: this core no longer leads and refuses writes');
      throw new ApiError('central_standby', { message: 'This core no longer leads the central: writes go to the leading core; nothing was written.' });
    }
    setLogPosition(this.db, next);
    this.state.position = next;
    this.state.appended++;
  }

  /** What the projector's thread of this leadership appends with (src/sync/central/projector-host.ts). */
  threadLink(): LogLink {
    if (this.state.role !== 'leader') throw new Error('the projector thread starts only on the leading core');
    return {
      epoch: this.epoch,
      url: this.url,
      appendTimeoutMs: APPEND_TIMEOUT_MS,
      appendedByThread: (position, ms) => {
        this.appendSeconds.observe(ms / 1000);
        if (position > this.state.position) this.state.position = position;
        this.state.appended++;
        this.state.threadAppended++;
      },
      running: (on) => {
        this.state.thread = on;
      },
      fenced: () => {
        this.state.leader = null;
        this.ctx.log.error({ event: 'sync.core_fenced' }, 'sync: another core moved the lease epoch: this core no longer leads and refuses writes');
      },
    };
  }

  private repairing: Promise<void> | undefined;

  /** Replays what the log holds past this core's place (its own append whose answer was lost), then writes go on. */
  private repairSoon(): void {
    if (this.repairing) return;
    this.repairing = (async () => {
      for (;;) {
        try {
          await yieldToLoop();
          if (this.state.role !== 'leader') return;
          const entries = entriesAfterSync(this.client!, logPosition(this.db), FOLLOW_BATCH, APPEND_TIMEOUT_MS);
          if (entries.length) this.replay(entries);
          if (entries.length < FOLLOW_BATCH) {
            this.unsure = false;
            return;
          }
        } catch (err) {
          this.ctx.log.warn({ err }, 'sync: the central log is not readable yet; writes stay refused');
          await new Promise((r) => setTimeout(r, 500));
        }
      }
    })().finally(() => {
      this.repairing = undefined;
    });
  }

  /** Publishes this core's place in the log at most once a second (`force`: now). */
  async report(force: boolean): Promise<void> {
    const now = Date.now();
    if (!force && now - this.lastReport < REPORT_MS) return;
    this.lastReport = now;
    if (this.state.role === 'leader') this.state.position = logPosition(this.db);
    await reportCore(this.pool, this.name, this.state.role, this.state.position);
    if (this.state.role === 'standby') {
      this.state.leader = await leaderOf(this.pool);
      this.state.end = await logEnd(this.pool);
    } else this.state.end = this.state.position;
  }

  async close(): Promise<void> {
    await this.stopFollow();
    await this.client?.close();
    this.client = undefined;
  }
}
