import type pg from 'pg';
import { randomUUID } from 'node:crypto';
import type { AppContext } from '../../context.js';
import { setCommitGate, tx } from '../../db/database.js';
import { setLogHold } from '../../db/log-hold.js';
import {
  dropPending,
  ensureLogState,
  firstPending,
  pendingIds,
  logPosition,
  queueEntry,
  replayEntries,
  setLogPosition,
  snapshotChanges,
  startCapture,
  stopCapture,
  takeChanges,
  undoPending,
} from '../../db/change-capture.js';
import { ApiError } from '../../errors.js';
import type { Readiness } from '../../api/readiness.js';
import { metrics } from '../../system/metrics.js';
import { appendEntry, entriesAfter, entryIdsBetween, leaderOf, logEnd, reportCore, takeEpoch, type LogEntry } from '../pg/central-log.js';
import { SyncPgClient } from '../pg/sync-client.js';
import { LogAppender, newAppendShare } from './log-appender.js';
import { AppenderThread } from './log-appender-host.js';
import type { LogLink } from './projector-host.js';

/** Entries a follower reads per query, and replays per transaction at most. */
const FOLLOW_BATCH = 200;
/** Row changes replayed per transaction at most (then the event loop serves what waits). */
const REPLAY_CHANGES = 5000;
/** How often an idle follower looks for new entries, and how often every core reports its place. */
export const FOLLOW_IDLE_MS = 50;
const REPORT_MS = 1000;
/** The snapshot's append at a new log's start: longer than this fails the takeover. */
const SNAPSHOT_TIMEOUT_MS = 60_000;

const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * A core's place in the central's one log (docs/central.md, "One log"), on its own SQLite file:
 * - as a **standby** it replays the log continuously (row images: no applier runs, nothing is
 *   sent), and refuses every write of its own: a commit gate that throws `central_standby`, naming
 *   the leader, so no request, worker or tool of this process changes the file behind the log;
 * - when it takes the lease it moves the epoch (the fence), replays the log to its end (a new log
 *   begins with a snapshot of the first leader's file), then captures its own writes: every
 *   outermost transaction keeps its row changes as the entry at the next position in the file and
 *   commits; the appender (src/sync/central/log-appender.ts) sends the waiting entries in one
 *   round trip while the next commit, and every acknowledgement waits for its entry's append
 *   (src/db/log-hold.ts). Entries a crash or a lost lease left unappended are decided against the
 *   log before anything else is replayed or written (`reconcile`).
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
  /** This leadership's group commit of the log (undefined while a standby). */
  private appender: LogAppender | undefined;
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
    // Entries this file holds and the log does not yet: nothing past them is replayed until decided.
    if ((await this.reconcile()) === 'ahead') return 0;
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

  /**
   * The file's entries not appended (a leader that crashed, or lost its lease, before their
   * append) against the log: the same entry at its position (its id) is dropped from the list;
   * another entry there (another core led and wrote) undoes the file's tail from there, last first,
   * from the rows before each; past the log's end they are kept ('ahead'): a core that takes the
   * lease appends them (they were never acknowledged: keeping them is harmless), a standby waits
   * for the log to reach them.
   */
  private async reconcile(): Promise<'clean' | 'ahead'> {
    const first = firstPending(this.db);
    if (!first) return 'clean';
    const filePosition = logPosition(this.db);
    const ids = await entryIdsBetween(this.pool, first.position, filePosition);
    const pending = pendingIds(this.db);
    let same = first.position - 1;
    let other: number | undefined;
    for (const e of pending) {
      if (!ids.has(e.position)) break;
      if (ids.get(e.position) !== e.id) {
        other = e.position;
        break;
      }
      same = e.position;
    }
    const gate = this.state.role;
    setCommitGate(this.db, undefined);
    try {
      tx(this.db, () => {
        dropPending(this.db, same);
        if (other !== undefined) {
          const undone = undoPending(this.db, other);
          this.ctx.log.warn(
            { event: 'sync.core_undid_tail', from: other, entries: undone },
            'sync: another core wrote the central log where this core had entries not appended; they were undone (never acknowledged)',
          );
        }
      });
    } finally {
      if (gate === 'leader') this.leaderGate();
      else this.standbyGate();
    }
    this.state.position = logPosition(this.db);
    return firstPending(this.db) ? 'ahead' : 'clean';
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
   * flight), the file's entries not appended decided (src above), the log replayed to its end, a
   * snapshot appended when the log is empty, the entries this file still holds past the log's end
   * appended, then this core's own writes captured and queued. Returns the replayed entry count.
   */
  async takeOver(): Promise<number> {
    this.epoch = await takeEpoch(this.pool, this.name);
    this.state.leader = this.name;
    const replayed = await this.catchUp();
    this.state.end = await logEnd(this.pool);
    this.client ??= new SyncPgClient(this.url);
    const ahead = firstPending(this.db);
    if (this.state.end === 0 && this.state.position === 0) {
      const snapshot = snapshotChanges(this.db);
      if (snapshot.length) {
        if (!appendEntry(this.client, 1, this.epoch, JSON.stringify(snapshot), snapshot.length, SNAPSHOT_TIMEOUT_MS))
          throw new Error('fenced while writing the log snapshot');
        // Not a write of its own: the snapshot is in the log already (the standby gate is still on).
        setCommitGate(this.db, undefined);
        tx(this.db, () => setLogPosition(this.db, 1));
        this.state.position = 1;
      }
    } else if (ahead ? this.state.end !== ahead.position - 1 : this.state.end !== this.state.position) {
      throw new Error(`the log ends at ${this.state.end} but this core replayed to ${this.state.position}`);
    }
    const share = newAppendShare();
    share.figures[0] = ahead ? ahead.position - 1 : this.state.position;
    this.appender = new LogAppender(
      this.db,
      this.pool,
      this.epoch,
      share,
      this.ctx.log,
      () => this.fenced(),
      (ms) => this.appendSeconds.observe(ms / 1000),
      // With the projector's thread the appends go from a thread of their own too: neither the
      // entries' reads nor the driver's writes of their text take the loop that answers /api.
      this.ctx.config.sync.postgres.projector_thread
        ? (hooks) => new AppenderThread(this.ctx, new URL('./log-appender-thread.js', import.meta.url), this.epoch, share, hooks)
        : undefined,
    );
    if (ahead) {
      // Never acknowledged, and this core now holds the lease: they go into the log first.
      await this.appender.whenAppended(logPosition(this.db));
      this.ctx.log.info(
        { event: 'sync.core_appended_tail', from: ahead.position, to: this.appender.appended },
        'sync: entries this core committed but had not appended before it stopped are now in the central log',
      );
      this.state.end = this.appender.appended;
    }
    startCapture(this.db);
    takeChanges(this.db);
    this.state.role = 'leader';
    this.leaderGate();
    const appender = this.appender;
    setLogHold(this.db, () => appender.hold());
    return replayed;
  }

  /** Back to a standby (the lease lost or given up): capture off, writes refused, acknowledgements in wait failed. */
  async stepDown(): Promise<void> {
    stopCapture(this.db);
    this.standbyGate();
    setLogHold(this.db, undefined);
    const appender = this.appender;
    this.appender = undefined;
    if (appender) {
      await appender.stop();
      // The entries the log holds leave the file's list (a standby holds none the log has).
      setCommitGate(this.db, undefined);
      try {
        tx(this.db, () => dropPending(this.db, appender.appended));
      } finally {
        this.standbyGate();
      }
    }
    this.state.leader = await leaderOf(this.pool).catch(() => null);
  }

  /** The appender found the epoch moved, or another core's entry at its position: no write of this core's any more. */
  private fenced(): void {
    this.state.leader = null;
    this.standbyGate();
    this.onFenced();
  }

  /** What the core does when its appends are fenced: ends this leadership (it steps down, then decides its entries). */
  onFenced: () => void = () => undefined;

  private leaderGate(): void {
    setCommitGate(this.db, () => this.queue());
  }

  /**
   * The commit gate of a leader: this transaction's changes as an entry kept in the file, at the
   * next position; the commit does not wait for PostgreSQL, every acknowledgement does (the hold).
   */
  private queue(): void {
    const changes = takeChanges(this.db);
    if (!changes) return;
    const appender = this.appender!;
    if (appender.failed) throw appender.failed;
    queueEntry(this.db, changes, randomUUID(), appender.appended);
    this.state.appended++;
    // After the commit (the transaction's synchronous end): the appender reads what committed.
    queueMicrotask(() => appender.ring());
  }

  /** What the projector's thread of this leadership queues with (src/sync/central/projector-host.ts). */
  threadLink(): LogLink {
    const appender = this.appender;
    if (this.state.role !== 'leader' || !appender) throw new Error('the projector thread starts only on the leading core');
    return {
      share: appender.share.figures.buffer as SharedArrayBuffer,
      queued: () => {
        this.state.threadAppended++;
        appender.ring();
      },
      running: (on) => {
        this.state.thread = on;
      },
    };
  }

  /** The leader's group commit of the log (its figures), while leading. */
  get appending(): LogAppender | undefined {
    return this.appender;
  }

  /** Publishes this core's place in the log at most once a second (`force`: now). */
  async report(force: boolean): Promise<void> {
    const now = Date.now();
    if (!force && now - this.lastReport < REPORT_MS) return;
    this.lastReport = now;
    // A leader's place is what the log holds of it.
    if (this.state.role === 'leader') this.state.position = this.appender?.appended ?? logPosition(this.db);
    await reportCore(this.pool, this.name, this.state.role, this.state.position);
    if (this.state.role === 'standby') {
      this.state.leader = await leaderOf(this.pool);
      this.state.end = await logEnd(this.pool);
    } else this.state.end = this.state.position;
  }

  async close(): Promise<void> {
    await this.stopFollow();
    setLogHold(this.db, undefined);
    await this.appender?.stop();
    await this.client?.close();
    this.client = undefined;
  }
}
