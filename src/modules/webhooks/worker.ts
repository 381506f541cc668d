import type { AppContext } from '../../context.js';
import type { Worker } from '../../api/module.js';
import { accountsOf, type AccountsService } from '../../accounts/service.js';
import type { SecretBox } from '../../system/secret-box.js';
import type { UrlGuard } from '../../system/url-guard.js';
import { OutcomeRecorder, bookkeepingTx } from './recorder.js';
import { planFanOut, planFanOutOf } from './fan-out.js';
import { InlineWriter, ThreadWriter, writeOps, type BookkeepingWriter, type WriteOp } from './writer.js';
import { Dispatcher } from './dispatch.js';
import { Housekeeping } from './housekeeping.js';
import { wakeNext, type WakeState } from './wake-machine.js';
import { LookTimer } from './look-timer.js';
import { tx } from '../../db/database.js';
import { webhooksStore, type DeliveryRow, type WebhooksStore } from './store.js';

/**
 * Events fanned out per transaction. Chosen when each delivery's random `whd_` id landed on a random
 * page of an index (commit cost per row: about 10 µs at 500, 4 µs at 2,000); now (docs/webhooks.md, second pass)
 * every index a fan-out row enters is appended to, and bigger batches mostly spare commits. A batch
 * holds the event loop for about 20-30 ms while a backlog is fanned out.
 */
const FAN_OUT_BATCH = 2000;
/**
 * Events fanned out in their emitting transactions per turn of the event loop: a request emits one
 * to a few; past this (an import, a bulk write) the rest is left to the pass, in batches, so an
 * emitter writing thousands of events does not pay a fan-out statement for each (measured: 2-6x
 * the cost of emitting, docs/webhooks.md).
 */
const AT_EMIT_PER_TURN = 16;

/**
 * The delivery worker. It fans events out (one `webhook_deliveries` row per event and endpoint,
 * unique per endpoint and `events.seq`, behind a cursor over `events.seq` written in the same
 * transaction), then sends what is due with bounded concurrency, signing each attempt at the moment
 * it is made. Outcomes are committed in groups (recorder.ts). Nothing lives only in memory: a
 * delivery whose attempt was in flight when the process died is still `pending` and due, so it is
 * sent again after a restart with the same `webhook-id`.
 */
export class DeliveryWorker implements Worker {
  readonly name = 'webhook-delivery';

  private readonly store: WebhooksStore;
  private readonly accounts: AccountsService;
  private readonly parents = new Map<string, string | null>();

  /**
   * Endpoints in a failing streak (`failing_since_ms` set): a success of theirs ends it. Kept here so
   * the successes of healthy endpoints, nearly all of them, write nothing more.
   */
  private readonly failing: Set<string>;

  /**
   * Whether the next pass must look for new events: set by the outbox's notice, the timer (events
   * written by other processes) and outside callers; not by finished attempts, which are most wakes
   * under load and would otherwise cost two reads each.
   */
  private eventsMaybe = true;

  /** The next look at the table; it looks for events too: other processes write them without notifying us. */
  private readonly look = new LookTimer(() => {
    this.chores.run();
    this.wake();
  });

  /** Where fan-outs and successes are committed (a thread with its own connection, unless in memory). */
  readonly writer: BookkeepingWriter;

  /** Commits outcomes in groups. */
  private readonly recorder: OutcomeRecorder;

  /** The fan-out running, if any: one at a time, each batch planned from the cursor the last committed. */
  private fanning: Promise<number> | undefined;

  /**
   * Woken by the outbox after the emitting tick (a setImmediate of its own): the pass runs in that
   * callback instead of one more turn of the event loop later.
   */
  private readonly onEvents = () => {
    // Events the emit hook fanned out need no look for new ones (two reads per pass), nor a pass
    // at all once the pass after their commit (`afterEmit`) has run.
    if (this.missedAtEmit) {
      this.missedAtEmit = false;
      this.eventsMaybe = true;
    } else if (this.passedAt === this.fannedAtEmit) return;
    if (this.running) this.pass();
  };

  /** An event was written without its fan-out (a backlog, or the hook failed): the next pass looks. */
  private missedAtEmit = false;

  /** Events fanned out by the emit hook, and that count when the last pass after their commit ran. */
  private fannedAtEmit = 0;

  private passedAt = 0;

  private afterEmitScheduled = false;

  /** Events fanned out at emit since the last `afterEmit` pass (capped at AT_EMIT_PER_TURN). */
  private atEmitThisTurn = 0;

  private timerScheduled = false;
  /** Removes the emit hook (`fanOutAtEmit`). */
  private unhookEmit: (() => void) | undefined;

  /** The fan-out's statements on the daemon's connection, for `fanOutAtEmit` (made at the first event). */
  private runOps: ((ops: WriteOp[]) => void) | undefined;

  /** Sends what is due (dispatch.ts). */
  private readonly sender: Dispatcher;
  private readonly chores: Housekeeping;
  /** Where the wake machine (wake-machine.ts) has the worker: not started, waiting, a pass queued, stopped. */
  private wakeState: WakeState = 'idle';

  private get running(): boolean {
    return this.wakeState === 'waiting' || this.wakeState === 'queued';
  }

  constructor(
    private readonly ctx: AppContext,
    guard: UrlGuard,
    box: SecretBox,
  ) {
    this.store = webhooksStore(ctx.db);
    this.accounts = accountsOf(ctx);
    const bookkeeping = bookkeepingTx(ctx);
    this.writer =
      // A chain's core writes only on its own connection, where every commit goes to the central's log.
      ctx.db.memory || !ctx.config.webhooks.writer_thread || ctx.config.sync.postgres.url !== ''
        ? new InlineWriter(ctx.db, bookkeeping)
        : new ThreadWriter(ctx.db.name, ctx.config.database.busy_timeout_ms, ctx.log);
    this.failing = new Set(this.store.failingIds());
    this.sender = new Dispatcher(ctx, this.store, guard, box, {
      kick: () => this.kick(),
      record: (outcome) => this.recorder.record(outcome),
      stopped: () => this.wakeState === 'stopped',
      bookkeeping,
    });
    this.chores = new Housekeeping(ctx, this.store, () => this.forgetReadAhead());
    this.recorder = new OutcomeRecorder(
      ctx,
      this.store,
      this.writer,
      bookkeeping,
      () => this.forgetReadAhead(),
      this.failing,
      (id) => this.sender.targetOf(id)?.fifo ?? false,
      () => this.sender.sending === 0,
    );
  }

  start(): void {
    this.wakeState = wakeNext(this.wakeState, 'START') ?? this.wakeState;
    // Every write that parks or finishes a FIFO delivery promotes the next in the same transaction;
    // this only makes sure of it after an upgrade or a hand-edited database.
    try {
      const now = this.ctx.clock.now();
      for (const id of this.store.fifoIds()) this.store.promoteNext(id, now);
    } catch (err) {
      this.ctx.log.error({ err }, 'webhook FIFO check at start failed');
    }
    this.ctx.outbox.notifier.on('events', this.onEvents);
    this.unhookEmit = this.ctx.outbox.onEmit((seq) => this.fanOutAtEmit(seq));
    this.wake();
  }

  async stop(): Promise<void> {
    this.wakeState = wakeNext(this.wakeState, 'STOP') ?? this.wakeState;
    this.ctx.outbox.notifier.off('events', this.onEvents);
    this.unhookEmit?.();
    this.look.clear();
    await this.sender.close();
    if (this.fanning) await this.fanning.catch(() => undefined);
    await this.writer.close();
    await this.sender.closeAgent();
  }

  /** Look at the table soon (after the current tick): new events, finished attempts, timers. */
  wake(): void {
    this.eventsMaybe = true;
    this.kick();
  }

  /** A pass after the current tick; fans out only if `eventsMaybe` (a slot freed needs no fan-out). */
  private kick(): void {
    const queued = wakeNext(this.wakeState, 'KICK');
    if (!queued) return;
    this.wakeState = queued;
    setImmediate(() => {
      const next = wakeNext(this.wakeState, 'RUN');
      if (!next) return;
      this.wakeState = next;
      this.pass(false);
    });
  }

  /**
   * The pass that sends the rows the emit hook made: a microtask, so it runs as soon as the code
   * that emitted has returned, which a transaction (synchronous on this connection) has by then
   * committed or rolled back. Not a turn of the event loop later (the outbox's notice): undici
   * writes a request on a reused keep-alive socket only in the next check phase (its idle-socket
   * check), so a pass from the poll phase puts the request on the wire in the same turn. Should
   * the connection still be in a transaction (nothing in posd keeps one open across an await),
   * the pass waits for the notice like any other.
   */
  private afterEmit(): void {
    if (this.afterEmitScheduled) return;
    this.afterEmitScheduled = true;
    queueMicrotask(() => {
      this.afterEmitScheduled = false;
      this.atEmitThisTurn = 0;
      if (!this.running || this.ctx.db.inTransaction) return;
      this.passedAt = this.fannedAtEmit;
      this.pass();
    });
  }

  /** Fans out new events (if `eventsMaybe`), fills the free slots, sets the timer; `news`: rows may have become due. */
  private pass(news = true): void {
    const fresh = news || this.eventsMaybe;
    try {
      if (this.eventsMaybe && !this.fanning) {
        this.eventsMaybe = false;
        // Rows written on this connection are there for the dispatch below; the writer thread's, after its commit.
        void this.fanOut().then((read) => {
          if (read > 0) this.wake();
        });
      }
      this.sender.dispatch(fresh);
    } catch (err) {
      this.ctx.log.error({ err }, 'webhook delivery pass failed');
    }
    // After the turn: the request just written is on its way, and the timer's read of the next due
    // row need not hold the loop before whatever else (a receiver's answer, a request) is waiting.
    if (!this.timerScheduled) {
      this.timerScheduled = true;
      setImmediate(() => {
        this.timerScheduled = false;
        this.scheduleTimer();
      });
    }
  }

  /**
   * Fans a new event out inside the transaction that writes it (the outbox's emit hook): its
   * delivery rows and the cursor's move commit with the event, with the emitter's durability, and
   * the pass the commit wakes finds them due, without a fan-out transaction of its own between
   * (docs/webhooks.md, "Event to first attempt"). Only when it is the next event past the cursor:
   * older ones (written by another process, or a fan-out that failed) are the pass's, in order. In
   * a savepoint (the cursor's move alone is one statement, atomic as it is: 0246): if it fails,
   * nothing of it is written, the event commits anyway, and the pass fans it out as before.
   */
  private fanOutAtEmit(seq: number): void {
    if (!this.running) return;
    if (this.atEmitThisTurn >= AT_EMIT_PER_TURN) {
      this.missedAtEmit = true;
      return;
    }
    try {
      const next = this.store.eventsAfter(this.store.cursor(), 1);
      if (next.length !== 1 || next[0].seq !== seq) {
        this.missedAtEmit = true;
        return;
      }
      const batch = planFanOutOf(this.store, next, (id) => this.parentOf(id), this.ctx.clock.now());
      this.runOps ??= writeOps(this.ctx.db);
      batch.ops.length === 1 ? this.runOps(batch.ops) : tx(this.ctx.db, () => this.runOps!(batch.ops));
      this.atEmitThisTurn++;
      this.fannedAtEmit++;
      this.afterEmit();
    } catch (err) {
      this.missedAtEmit = true;
      this.ctx.log.warn({ err, eventSeq: seq }, 'webhook fan-out in the emitting transaction failed; the delivery pass does it');
    }
  }

  /**
   * Runs everything due now and waits until it is done (retries due immediately included). Tests
   * move a ManualClock and call this instead of sleeping; operators' tools may call it too.
   */
  async runDue(): Promise<void> {
    this.chores.run();
    for (;;) {
      // A fan-out already running may have started before the newest events: run one more after it.
      while (this.fanning) await this.fanning;
      await this.fanOut();
      this.sender.dispatch(true);
      if (this.sender.inflight.size === 0) return;
      await Promise.allSettled([...this.sender.inflight.values()]);
    }
  }

  /** A row's public id (stored, or derived from its seq). */
  deliveryId(row: DeliveryRow): string {
    return this.store.withId(row).id;
  }

  /** Sends one delivery now, whatever its schedule (manual retry, test send); resolves once recorded. */
  async sendNow(deliveryId: string): Promise<DeliveryRow | undefined> {
    this.forgetReadAhead();
    const seq = this.store.seqOfId(deliveryId);
    if (seq === undefined) return undefined;
    let row = this.store.sendable(seq);
    const running = row && this.sender.inflight.get(row.seq);
    if (running) {
      await running;
      row = this.store.sendable(seq);
    }
    if (!row) return undefined;
    await this.sender.launch(row, true);
    return this.store.deliveryBySeq(seq);
  }

  /**
   * Creates the delivery rows of events past the cursor, batch after batch, through the writer.
   * Resolves with how many events it read (0 if it failed: the next pass, or the timer's, tries again).
   */
  fanOut(): Promise<number> {
    const run = this.fanOutAll()
      .catch((err) => {
        this.ctx.log.error({ err }, 'webhook fan-out failed; it will be done again');
        this.eventsMaybe = true;
        return 0;
      })
      .finally(() => {
        if (this.fanning === run) this.fanning = undefined;
      });
    this.fanning = run;
    return run;
  }

  private async fanOutAll(): Promise<number> {
    let read = 0;
    // Most passes find nothing new: two index reads, no write.
    if (this.store.maxEventSeq() <= this.store.cursor()) return 0;
    for (;;) {
      const batch = planFanOut(this.store, (id) => this.parentOf(id), this.ctx.clock.now(), FAN_OUT_BATCH);
      if (batch.events === 0) return read;
      await this.writer.write(batch.ops);
      read += batch.events;
      if (batch.events < FAN_OUT_BATCH) return read;
    }
  }

  /** The parent (platform) account of an account, cached. */
  parentOf(accountId: string): string | null {
    if (!this.parents.has(accountId)) this.parents.set(accountId, this.accounts.account(accountId)?.parent_account_id ?? null);
    return this.parents.get(accountId)!;
  }

  /** The outbound guard every endpoint URL passes (dispatch.ts). */
  get guard(): UrlGuard {
    return this.sender.guard;
  }

  /** Drops the rows read ahead (an endpoint changed, a delivery was sent by hand): they are read again. */
  forgetReadAhead(): void {
    this.sender.forgetReadAhead();
  }

  /** A rotation changed the endpoint's secret, or a PATCH its gates or FIFO: it is read again. */
  forgetTarget(endpointId: string): void {
    this.sender.forgetTarget(endpointId);
  }

  /** Whether an endpoint's circuit breaker is open or half-open. */
  breakerOpen(endpointId: string): boolean {
    return this.sender.breakerOpen(endpointId);
  }

  /** Attempts of an endpoint in flight through its gates (its cap counts these). */
  inFlightOf(endpointId: string): number {
    return this.sender.inFlightOf(endpointId);
  }

  /** The failing-endpoint lifecycle and retention (housekeeping.ts), at most once a minute of the clock. */
  housekeeping(): void {
    this.chores.run();
  }

  /** The endpoint's failing streak is over (it was enabled again). */
  endFailing(endpointId: string): void {
    this.failing.delete(endpointId);
    this.store.clearFailing(endpointId);
  }

  private scheduleTimer(): void {
    if (!this.running) return this.look.clear();
    // A pass is queued (an attempt ended meanwhile): it fills the slot and sets the look after itself.
    if (this.wakeState === 'queued') return;
    // A look due now stands, and none computed now could be sooner: no read of the next due row.
    if (this.look.armedWithin(1)) return;
    const poll = this.ctx.config.webhooks.poll_ms;
    let delay = poll;
    if (this.sender.sending < this.ctx.config.webhooks.concurrency) {
      const wait = this.sender.nextDueIn(this.ctx.clock.now());
      if (wait !== undefined) delay = Math.min(poll, wait);
    }
    this.look.arm(delay, delay === poll);
  }
}
