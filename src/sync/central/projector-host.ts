import { Worker as Thread } from 'node:worker_threads';
import type { AppContext } from '../../context.js';
import type { Worker } from '../../api/module.js';
import { feedBell } from '../../outbox/feed-changes.js';
import { setWriteTurn } from '../../db/database.js';
import { projectorBell } from './projector-bell.js';
import { setProjectorOf } from './projector.js';
import { pgCoreOf } from './pg-core-slot.js';
import { perDb } from '../../db/per-db.js';
import type { IngestBatch } from './core-ingest.js';

/** The running projector thread of each database (the core's ingest hands it its batches). */
const threads = perDb(() => ({ current: undefined as ThreadProjector | undefined }));

/** The projector thread running for this core, if one runs (this leadership's). */
export function projectorThreadOf(ctx: Pick<AppContext, 'db'>): ThreadProjector | undefined {
  return threads(ctx.db).current;
}

/** What the daemon hands the projector's thread (src/projector-thread.ts) at its start. */
export interface ThreadStart {
  config: AppContext['config'];
  /** The leadership's appender figures (src/sync/central/log-appender.ts `AppendShare`): appended through, fenced. */
  share: SharedArrayBuffer;
  /** The write turn's flags shared with the daemon's connection (src/db/database.ts `WriteTurn`). */
  turn: SharedArrayBuffer;
}

/** Messages to the thread. */
export type ThreadIn = { ring: true } | { idle: number } | { stop: true } | { ingest: number; batch: IngestBatch };

/** Messages from the thread. */
export type ThreadOut =
  | { started: true }
  | { stopped: true }
  | { log: string }
  | { sliced: string }
  | { feed: Array<string | null> }
  | { events: true }
  | { queued: number }
  | { idle: number }
  | { ingested: number; error?: string };

/** What the host needs of the leading core's place in the log (src/sync/central/central-log-core.ts). */
export interface LogLink {
  /** The appender's figures, shared with the thread's commit gate. */
  readonly share: SharedArrayBuffer;
  /** The thread committed an entry: the appender sends it. */
  queued(position: number): void;
  /** The thread started (true) or ended (false). */
  running(on: boolean): void;
}

const LEVELS: Record<number, 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal'> = {
  10: 'trace',
  20: 'debug',
  30: 'info',
  40: 'warn',
  50: 'error',
  60: 'fatal',
};

/** A line of a thread's logger, written by the daemon's (one destination, one redaction). */
export function relayThreadLog(ctx: Pick<AppContext, 'log'>, line: string, thread: string): void {
  try {
    const { level, msg, time: _t, pid: _p, hostname: _h, ...fields } = JSON.parse(line) as Record<string, unknown>;
    ctx.log[LEVELS[level as number] ?? 'info']({ ...fields, thread }, String(msg ?? ''));
  } catch {
    ctx.log.info({ thread }, line.trim());
  }
}

/**
 * The leading chain core's projector, run on a thread (src/projector-thread.ts) so that its slices
 * (applying, appending each to the central's log in PostgreSQL, committing) never hold the event
 * loop that answers `/api` (docs/central.md, "The projector's thread"). A leader worker: started
 * when the core takes the lease, stopped (the thread ended) when it loses it; a standby and a store
 * box never start it. The bells are carried both ways: the ingest's ring to the thread; a slice's,
 * the feed's and the outbox's back to the daemon's listeners (the report, the relay, webhooks).
 */
export class ThreadProjector implements Worker {
  readonly name = 'sync-projector';
  private thread: Thread | undefined;
  private exited: Promise<void> = Promise.resolve();
  private idles = new Map<number, () => void>();
  private nextIdle = 0;
  private ingests = new Map<number, { resolve: () => void; reject: (err: Error) => void }>();

  constructor(
    private readonly ctx: AppContext,
    private readonly program: URL,
    private readonly link: () => LogLink,
  ) {}

  async start(): Promise<void> {
    const { ctx } = this;
    const link = this.link();
    const turn = new SharedArrayBuffer(8);
    const data: ThreadStart = { config: ctx.config, share: link.share, turn };
    const thread = new Thread(this.program, { workerData: data });
    this.thread = thread;
    const started = new Promise<void>((resolve, reject) => {
      thread.once('error', reject);
      thread.once('exit', (code) => reject(new Error(`the projector thread exited (${code}) before it started`)));
      thread.on('message', (m: ThreadOut) => {
        if ('started' in m) resolve();
        this.receive(m, link);
      });
    });
    this.exited = new Promise<void>((resolve) => thread.once('exit', () => resolve()));
    thread.on('error', (err) => ctx.log.error({ err }, 'sync: the projector thread failed'));
    thread.once('exit', () => {
      this.thread = undefined;
      setWriteTurn(ctx.db, undefined);
      link.running(false);
      for (const done of this.idles.values()) done();
      this.idles.clear();
      for (const p of this.ingests.values()) p.reject(new Error('the projector thread ended'));
      this.ingests.clear();
      if (threads(ctx.db).current === this) threads(ctx.db).current = undefined;
      projectorBell(ctx.db).listen(undefined);
    });
    await started;
    // The daemon's writes (an /api request's) go first: the thread starts no slice while one waits.
    setWriteTurn(ctx.db, { flags: new Int32Array(turn), side: 'first' });
    link.running(true);
    projectorBell(ctx.db).listen(() => this.thread?.postMessage({ ring: true } satisfies ThreadIn));
    setProjectorOf(ctx, this);
    threads(ctx.db).current = this;
  }

  private receive(m: ThreadOut, link: LogLink): void {
    const { ctx } = this;
    if ('sliced' in m) projectorBell(ctx.db).sliced(m.sliced);
    else if ('feed' in m) feedBell(ctx.db).emit('rows', m.feed);
    else if ('events' in m) ctx.outbox.notifier.emit('events');
    else if ('queued' in m) link.queued(m.queued);
    else if ('stopped' in m) void this.thread?.terminate();
    else if ('ingested' in m) {
      const p = this.ingests.get(m.ingested);
      this.ingests.delete(m.ingested);
      if (m.error === undefined) p?.resolve();
      else p?.reject(new Error(m.error));
    } else if ('idle' in m) {
      this.idles.get(m.idle)?.();
      this.idles.delete(m.idle);
    } else if ('log' in m) relayThreadLog(ctx, m.log, 'projector');
  }

  /** Resolves once the thread's projector applied everything received (tests and the bench: `projected`). */
  idle(): Promise<void> {
    const thread = this.thread;
    if (!thread) return Promise.resolve();
    const id = ++this.nextIdle;
    return new Promise<void>((resolve) => {
      this.idles.set(id, resolve);
      thread.postMessage({ idle: id } satisfies ThreadIn);
    });
  }

  /**
   * Copies a batch the ingest read from PostgreSQL into the core's SQLite on the thread (its
   * transaction and its append off this loop), which then rings its projector; rejects with the
   * thread's failure (nothing written).
   */
  ingest(batch: IngestBatch): Promise<void> {
    const thread = this.thread;
    if (!thread) return Promise.reject(new Error('the projector thread is not running'));
    const id = ++this.nextIdle;
    return new Promise<void>((resolve, reject) => {
      this.ingests.set(id, { resolve, reject });
      thread.postMessage({ ingest: id, batch } satisfies ThreadIn);
    });
  }

  async stop(): Promise<void> {
    if (threads(this.ctx.db).current === this) threads(this.ctx.db).current = undefined;
    projectorBell(this.ctx.db).listen(undefined);
    const thread = this.thread;
    if (!thread) return;
    thread.postMessage({ stop: true } satisfies ThreadIn);
    // A slice in flight ends (commits or rolls back) before the thread closes its connection.
    const timer = setTimeout(() => void thread.terminate(), 30_000);
    await this.exited;
    clearTimeout(timer);
  }
}

/**
 * The projector of a chain core's leadership, on its thread: `program` is the thread's built file
 * (src/projector-thread.ts in dist), which the daemon names beside itself.
 */
export function coreProjector(ctx: AppContext, program: URL): ThreadProjector {
  return new ThreadProjector(ctx, program, () => {
    const core = pgCoreOf(ctx);
    if (!core) throw new Error('the projector thread needs the chain core (sync.postgres.url)');
    return core.log_.threadLink();
  });
}
