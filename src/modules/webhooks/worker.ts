import { isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Agent } from 'undici';
import { undici } from '../../system/undici.js';
import type { AppContext } from '../../context.js';
import type { Worker } from '../../api/module.js';
import { deliveryBody } from './body.js';
import { accountsOf, type AccountsService } from '../../accounts/service.js';
import { deliveryHeaders, signedHeaders, secretKey } from './signing.js';
import type { SecretBox } from '../../system/secret-box.js';
import { hostOf, type UrlGuard } from '../../system/url-guard.js';
import { describe, retryAfterMs, succeeded, type Outcome } from './outcome.js';
import { OutcomeRecorder, bookkeepingTx } from './recorder.js';
import { planFanOut, planFanOutOf } from './fan-out.js';
import { InlineWriter, ThreadWriter, writeOps, type BookkeepingWriter, type WriteOp } from './writer.js';
import { AttemptDeadlines } from './deadlines.js';
import { post } from './post.js';
import { EndpointGates, type GateSettings } from './gates.js';
import { isoTime } from '../../clock.js';
import { tx } from '../../db/database.js';
import { webhooksStore, type DeliveryRow, type SendableRow, type WebhooksStore } from './store.js';

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

/** An endpoint's URL parsed once, whether it names a refused literal address, and its signing key. */
interface Target {
  origin: string;
  path: string;
  refused: string | null;
  key: Buffer;
  /** The key a rotation replaced, signing beside `key` until `previousUntil` (Unix ms). */
  previous: Buffer | null;
  previousUntil: number;
  /** The endpoint's throttle and cap (gates.ts); null: none. */
  gate: GateSettings | null;
  /** First-in-first-out delivery: a success of its makes the next in its order due. */
  fifo: boolean;
}

/** How often (clock time) the worker looks at failing endpoints and prunes old deliveries. */
const HOUSEKEEPING_MS = 60_000;
/** Deliveries deleted per statement when pruning (one transaction each: short write locks). */
const PRUNE_BATCH = 5_000;
const NO_GATE: GateSettings = { rateLimit: null, maxInFlight: null };

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
  /** Made by the first delivery (undici is loaded then, not at start: issue 16). */
  private agentMade: Agent | undefined;
  /** Deliveries being attempted or waiting for their outcome to commit (never sent twice at once). */
  private readonly inflight = new Map<number, Promise<void>>();
  /** Requests on the wire: the concurrency limit counts these (a slot frees when the answer arrives). */
  private sending = 0;
  private readonly parents = new Map<string, string | null>();
  /**
   * Due deliveries read ahead (at most 4 x concurrency, in due order), sent as slots free up. Only
   * this process changes endpoints and deliveries (the API's service and this worker), and every
   * change that could make one of these rows unsendable clears them (`forgetReadAhead`): an
   * endpoint disabled or deleted, a 410, a manual send. Attempts in flight are never read ahead.
   */
  private ready: SendableRow[] = [];
  /** By endpoint id: an endpoint's URL never changes; its secret only by a rotation (`forgetTarget`). */
  private readonly targets = new Map<string, Target>();
  /**
   * Endpoints in a failing streak (`failing_since_ms` set): a success of theirs ends it. Kept here so
   * the successes of healthy endpoints, nearly all of them, write nothing more.
   */
  private readonly failing: Set<string>;
  private lastHousekeeping = Number.NEGATIVE_INFINITY;
  private readonly gates: EndpointGates;
  /** Whether any endpoint has a gate or the breaker is on: otherwise dispatch never looks at them. */
  private gating: boolean;
  private stopped = false;
  private wakeScheduled = false;
  /**
   * Whether the next pass must look for new events: set by the outbox's notice, the timer (events
   * written by other processes) and outside callers; not by finished attempts, which are most wakes
   * under load and would otherwise cost two reads each.
   */
  private eventsMaybe = true;
  /** The whole-attempt limit, one timer shared by the attempts started close together. */
  private readonly deadlines: AttemptDeadlines;
  private running = false;
  private timer: NodeJS.Timeout | undefined;
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

  constructor(
    private readonly ctx: AppContext,
    readonly guard: UrlGuard,
    private readonly box: SecretBox,
  ) {
    this.store = webhooksStore(ctx.db);
    this.deadlines = new AttemptDeadlines(ctx.config.webhooks.timeout_ms);
    this.accounts = accountsOf(ctx);
    const bookkeeping = bookkeepingTx(ctx);
    this.writer =
      // A chain's core writes only on its own connection, where every commit goes to the central's log.
      ctx.db.memory || !ctx.config.webhooks.writer_thread || ctx.config.sync.postgres.url !== ''
        ? new InlineWriter(ctx.db, bookkeeping)
        : new ThreadWriter(ctx.db.name, ctx.config.database.busy_timeout_ms, ctx.log);
    this.failing = new Set(this.store.failingIds());
    this.gates = new EndpointGates(ctx.config.webhooks.breaker_failures, ctx.config.webhooks.breaker_probe_ms);
    this.gating = this.gates.breakerOn || this.store.gatedCount() > 0;
    this.recorder = new OutcomeRecorder(ctx, this.store, this.writer, bookkeeping, () => this.forgetReadAhead(), this.failing, (id) => this.targetOf(id)?.fifo ?? false, () => this.sending === 0);
  }

  start(): void {
    this.running = true;
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
    this.running = false;
    this.ctx.outbox.notifier.off('events', this.onEvents);
    this.unhookEmit?.();
    clearTimeout(this.timer);
    this.stopped = true;
    this.deadlines.abortAll();
    await Promise.allSettled([...this.inflight.values()]);
    if (this.fanning) await this.fanning.catch(() => undefined);
    await this.writer.close();
    await this.agentMade?.close().catch(() => undefined);
  }

  private agent(): Agent {
    const t = this.ctx.config.webhooks.timeout_ms;
    this.agentMade ??= new (undici().Agent)({
      connect: { lookup: this.guard.lookup(), timeout: t },
      headersTimeout: t,
      bodyTimeout: t,
      connections: this.ctx.config.webhooks.concurrency,
    });
    return this.agentMade;
  }

  /** Look at the table soon (after the current tick): new events, finished attempts, timers. */
  wake(): void {
    this.eventsMaybe = true;
    this.kick();
  }

  /** A pass after the current tick; fans out only if `eventsMaybe` (a slot freed needs no fan-out). */
  private kick(): void {
    if (!this.running || this.wakeScheduled) return;
    this.wakeScheduled = true;
    setImmediate(() => {
      this.wakeScheduled = false;
      if (this.running) this.pass();
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

  /** Fans out new events (if `eventsMaybe`), fills the free slots, sets the timer. */
  private pass(): void {
    try {
      if (this.eventsMaybe && !this.fanning) {
        this.eventsMaybe = false;
        // Rows written on this connection are already there for the dispatch below; those of the
        // writer thread are sent by the pass that follows their commit.
        void this.fanOut().then((read) => {
          if (read > 0) this.kick();
        });
      }
      this.dispatch();
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
   * a savepoint: if it fails, nothing of it is written, the event commits anyway, and the pass
   * fans it out as before.
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
      tx(this.ctx.db, () => this.runOps!(batch.ops));
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
    this.housekeeping();
    for (;;) {
      // A fan-out already running may have started before the newest events: run one more after it.
      while (this.fanning) await this.fanning;
      await this.fanOut();
      this.dispatch();
      if (this.inflight.size === 0) return;
      await Promise.allSettled([...this.inflight.values()]);
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
    const running = row && this.inflight.get(row.seq);
    if (running) {
      await running;
      row = this.store.sendable(seq);
    }
    if (!row) return undefined;
    await this.launch(row, true);
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

  /**
   * Fills the free slots from the rows read ahead; when they run out, the next due ones are read
   * (their seqs from the covering index, the rows of those not in flight in one statement).
   */
  private dispatch(): void {
    const max = this.ctx.config.webhooks.concurrency;
    const now = this.ctx.clock.now();
    let refilled = false;
    let held: Array<[number, number]> | undefined;
    if (this.gating) this.gates.newPass();
    while (this.sending < max) {
      if (this.ready.length === 0) {
        // Rows a gate held back leave the due window before it is read again.
        if (held) {
          this.reschedule(held);
          held = undefined;
        }
        if (refilled) return;
        refilled = true;
        const seqs = this.store
          .due(now, max * 4 + this.inflight.size)
          .map((r) => r.seq)
          .filter((seq) => !this.inflight.has(seq));
        if (seqs.length === 0) return;
        this.ready = this.store.sendableMany(seqs);
        continue;
      }
      const row = this.ready.shift()!;
      if (this.inflight.has(row.seq)) continue;
      if (row.status !== 'pending' || row.endpoint_disabled || row.next_attempt_ms === null || row.next_attempt_ms > now) continue;
      if (this.gating) {
        const gate = this.targetOf(row.endpoint_id)?.gate ?? null;
        if (gate || this.gates.breakerOn) {
          const at = this.gates.admit(row.endpoint_id, gate ?? NO_GATE, now);
          if (at !== 0) {
            (held ??= []).push([row.seq, at]);
            continue;
          }
          void this.launch(row, false, true);
          continue;
        }
      }
      void this.launch(row, false);
    }
    if (held) this.reschedule(held);
  }

  private reschedule(rows: Array<[number, number]>): void {
    try {
      this.store.reschedule(rows);
    } catch (err) {
      this.ctx.log.error({ err }, 'rescheduling webhook deliveries held back failed');
    }
  }

  /** Drops the rows read ahead (an endpoint changed, a delivery was sent by hand): they are read again. */
  forgetReadAhead(): void {
    this.ready = [];
  }

  private launch(row: SendableRow, manual: boolean, gated = false): Promise<void> {
    this.sending++;
    const p = this.attempt(row, manual)
      .then((outcome) => {
        this.sending--;
        if (gated) this.gates.finished(row.endpoint_id, !!outcome && succeeded(outcome), true, outcome?.durationMs ?? 0, this.ctx.clock.now());
        // The slot is free now; the outcome commits with the next group.
        this.kick();
        return outcome ? this.recorder.record(outcome) : undefined;
      }, (err) => {
        this.sending--;
        if (gated) this.gates.finished(row.endpoint_id, false, true, 0, this.ctx.clock.now());
        throw err;
      })
      .catch((err) => this.ctx.log.error({ err, deliverySeq: row.seq }, 'webhook attempt failed to record'))
      .finally(() => {
        if (this.inflight.get(row.seq) === p) this.inflight.delete(row.seq);
        this.kick();
      });
    this.inflight.set(row.seq, p);
    return p;
  }

  /** A rotation changed the endpoint's secret, or a PATCH its gates or FIFO: it is read again. */
  forgetTarget(endpointId: string): void {
    this.targets.delete(endpointId);
    this.gating = this.gates.breakerOn || this.store.gatedCount() > 0;
  }

  /** Whether an endpoint's circuit breaker is open or half-open. */
  breakerOpen(endpointId: string): boolean {
    return this.gates.isOpen(endpointId);
  }

  /** The endpoint's failing streak is over (it was enabled again). */
  endFailing(endpointId: string): void {
    this.failing.delete(endpointId);
    this.store.clearFailing(endpointId);
  }

  /**
   * The failing-endpoint lifecycle and retention (docs/webhooks.md), at most once a minute of the
   * clock: an endpoint failing for `failing_notice_ms` is reported once (a warning in the log, a
   * line on the status page); one failing for `auto_disable_after_days` is disabled, its reason
   * kept, its pending deliveries canceled; finished deliveries (and their attempts) older than
   * `retention_days` are deleted.
   */
  housekeeping(): void {
    const now = this.ctx.clock.now();
    if (now - this.lastHousekeeping < HOUSEKEEPING_MS) return;
    this.lastHousekeeping = now;
    const cfg = this.ctx.config.webhooks;
    try {
      for (const ep of this.store.failingSince(now - cfg.failing_notice_ms)) {
        const days = cfg.auto_disable_after_days;
        if (days > 0 && ep.failing_since_ms! <= now - days * 86_400_000) {
          this.autoDisable(ep.id, ep.failing_since_ms!, now);
        } else if (!ep.failing_noticed) {
          this.store.setNoticed(ep.id);
          this.ctx.log.warn(
            { event: 'webhook_endpoint.failing', endpoint: ep.id, account: ep.account_id, url: ep.url, failing_since: isoTime(ep.failing_since_ms!) },
            'webhook endpoint failing',
          );
        }
      }
      const cutoff = isoTime(now - cfg.retention_days * 86_400_000);
      while (this.store.prune(cutoff, PRUNE_BATCH) === PRUNE_BATCH);
      this.store.pruneReplays(cutoff);
    } catch (err) {
      this.ctx.log.error({ err }, 'webhook housekeeping failed; it runs again in a minute');
    }
  }

  private autoDisable(id: string, since: number, now: number): void {
    const days = this.ctx.config.webhooks.auto_disable_after_days;
    const at = isoTime(now);
    const reason = `Disabled automatically: every delivery failed since ${isoTime(since)} (${days} days).`;
    tx(this.ctx.db, () => {
      const ep = this.store.endpoint(id);
      if (!ep || ep.disabled) return;
      this.store.updateEndpoint({ id, description: ep.description, disabled: 1, disabled_reason: reason, updated_at: at });
      this.store.cancelPending(id, `endpoint_disabled: failing since ${isoTime(since)}`, at);
      this.store.markDisabled(id, now, this.store.cursor());
    });
    this.forgetReadAhead();
    this.ctx.log.warn({ event: 'webhook_endpoint.disabled', endpoint: id, reason }, 'webhook endpoint disabled');
  }

  /** The endpoint's parsed URL and key, cached (undefined if the endpoint is gone). */
  private targetOf(endpointId: string): Target | undefined {
    let t = this.targets.get(endpointId);
    if (t) return t;
    const ep = this.store.endpoint(endpointId);
    if (!ep) return undefined;
    const u = new URL(ep.url);
    const host = hostOf(u);
    // A literal address never reaches the socket's lookup, so it is checked here.
    const refused = isIP(host) && !this.guard.addressAllowed(host) ? `address_refused: ${host} is a private, local or metadata address` : null;
    t = {
      origin: u.origin,
      path: u.search ? `${u.pathname}${u.search}` : u.pathname,
      refused,
      key: secretKey(this.box.open(ep.secret)),
      previous: ep.previous_secret === null ? null : secretKey(this.box.open(ep.previous_secret)),
      previousUntil: ep.previous_secret_expires_ms ?? 0,
      gate: ep.rate_limit === null && ep.max_in_flight === null ? null : { rateLimit: ep.rate_limit, maxInFlight: ep.max_in_flight },
      fifo: ep.fifo === 1,
    };
    if (this.targets.size >= 1000) this.targets.clear();
    this.targets.set(endpointId, t);
    return t;
  }

  /** One HTTP attempt. Undefined when the daemon is stopping: that attempt is not counted. */
  private async attempt(row: SendableRow, manual: boolean): Promise<Outcome | undefined> {
    const attemptedAt = this.ctx.clock.now();
    const timestamp = Math.floor(attemptedAt / 1000);
    const t0 = performance.now();
    const out = (responseCode: number | null, error: string | null, retryAfterMs: number | null = null): Outcome => ({
      deliverySeq: row.seq,
      endpointId: row.endpoint_id,
      manual,
      timestamp,
      attemptedAt,
      durationMs: Math.round(performance.now() - t0),
      responseCode,
      error,
      retryAfterMs,
    });
    try {
      const payload = row.payload ?? row.event_payload;
      if (payload === null) return out(null, 'event_missing: the event is no longer stored');
      const body = deliveryBody(row, payload);
      const target = this.targetOf(row.endpoint_id);
      if (!target) return out(null, 'endpoint_missing: the endpoint was deleted');
      if (target.refused) return out(null, target.refused);
      // One limit for the whole attempt (connect, headers, body), besides the agent's per-phase ones.
      const deadline = this.deadlines.join(performance.now());
      try {
        // Straight to the agent with the parsed origin and path: `request(url)` parses the URL again.
        const answer = await post(this.agent(), {
          origin: target.origin,
          path: target.path,
          body,
          headers: { 'content-type': 'application/json', 'user-agent': 'posd-webhooks/1', ...deliveryHeaders(signedHeaders(target.key, row.event_id, timestamp, body, target.previous !== null && attemptedAt < target.previousUntil ? target.previous : undefined)) },
          signal: deadline.signal,
          bodyLimit: 64 * 1024,
        });
        return out(answer.statusCode, null, retryAfterMs(answer.retryAfter, this.ctx.clock.now()));
      } finally {
        this.deadlines.leave(deadline);
      }
    } catch (err) {
      if (this.stopped) return undefined;
      return out(null, describe(err, this.ctx.config.webhooks.timeout_ms));
    }
  }

  private scheduleTimer(): void {
    clearTimeout(this.timer);
    if (!this.running) return;
    const poll = this.ctx.config.webhooks.poll_ms;
    let delay = poll;
    if (this.sending < this.ctx.config.webhooks.concurrency) {
      const next = this.store.due(Number.MAX_SAFE_INTEGER, this.inflight.size + 1).find((r) => !this.inflight.has(r.seq));
      if (next?.next_attempt_ms != null) delay = Math.min(poll, Math.max(0, next.next_attempt_ms - this.ctx.clock.now()));
    }
    // The timer's pass looks for events too: other processes write them without notifying us.
    this.timer = setTimeout(() => {
      this.housekeeping();
      this.wake();
    }, delay);
    this.timer.unref();
  }
}
