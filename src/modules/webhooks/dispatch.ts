import type { AppContext } from '../../context.js';
import type { SecretBox } from '../../system/secret-box.js';
import type { UrlGuard } from '../../system/url-guard.js';
import { succeeded, type Outcome } from './outcome.js';
import { Attempts } from './attempt.js';
import { EndpointGates, type GateSettings } from './gates.js';
import { HeldRows } from './held.js';
import { Targets, type Target } from './targets.js';
import type { SendableRow, WebhooksStore } from './store.js';
import { DueReader } from './due-reader.js';
import { whenDurable } from '../../db/wal-flush.js';

const NO_GATE: GateSettings = { rateLimit: null, maxInFlight: null };
/** While a read of due rows finds only rows a cap holds back, how often the timer looks again (ms). */
const DRY_RECHECK_MS = 100;

/** An attempt launched: when it started (the clock's ms), whether its slot was freed as slow, when its gates admitted it (null: not gated). */
interface Flight {
  at: number;
  released: boolean;
  gatedAt: number | null;
  launched: Promise<void> | undefined;
}

/** What dispatch asks of the worker around it (worker.ts). */
export interface DispatchHooks {
  /** A slot freed or an attempt finished: a pass soon. */
  kick(): void;
  /** Records an attempt's outcome (committed with the next group). */
  record(outcome: Outcome): Promise<void>;
  /** Whether the daemon is stopping: an attempt cut short then is not counted. */
  stopped(): boolean;
  /** The worker's records' transaction, committed without the disk flush (recorder.ts): held rows' new schedules. */
  bookkeeping<T>(fn: () => T): T;
}

/**
 * The sending half of the delivery worker: fills the free slots with due deliveries (read ahead in
 * due order), through each endpoint's gates, and makes each HTTP attempt, signing it at the moment
 * it is made.
 */
export class Dispatcher {
  /** Deliveries being attempted or waiting for their outcome to commit (never sent twice at once). */
  readonly inflight = new Map<number, Promise<void>>();
  /** Requests on the wire, which the concurrency limit counts (a slot frees at the answer, or after `webhooks.slow_ms`: a hung receiver's requests stay in its endpoint's cap only). */
  sending = 0;
  /** When each attempt on the wire started (the clock's ms), and whether its slot was freed as slow. */
  private readonly flights = new Map<number, Flight>();

  /**
   * Due deliveries read ahead (at most 4 x concurrency, in due order), sent as slots free up. Only
   * this process changes endpoints and deliveries (the API's service and this worker), and every
   * change that could make one of these rows unsendable clears them (`forgetReadAhead`): an
   * endpoint disabled or deleted, a 410, a manual send. Attempts in flight are never read ahead.
   */
  private ready: SendableRow[] = [];

  /** Rows the in-flight cap held back, kept in memory instead of rescheduled (held.ts, decision 0262). */
  private readonly kept: HeldRows;
  /** The last read of due rows launched none, and nothing that could change that has happened since. */
  dry = false;
  /** Reads due rows on from where the last read ended (due-reader.ts). */
  private readonly dueRows: DueReader;
  /** When a pass last read due rows (the timer's next look while `dry` is from there). */
  private lookedAt = 0;
  /** Attempts launched so far (whether a read of due rows launched any). */
  private launches = 0;

  /** On disk: all committed before `ready` was read, so no attempt sends what a power cut could take back (0272). */
  private readyDurable: Promise<void> = Promise.resolve();

  private readonly targets: Targets;
  private readonly gates: EndpointGates;
  /** Whether any endpoint has a gate (or the default cap) or the breaker is on: otherwise dispatch never looks at them. */
  private gating: boolean;
  /** The HTTP attempts (attempt.ts). */
  private readonly attempts: Attempts;

  constructor(
    private readonly ctx: AppContext,
    private readonly store: WebhooksStore,
    readonly guard: UrlGuard,
    box: SecretBox,
    private readonly hooks: DispatchHooks,
  ) {
    this.attempts = new Attempts(ctx, guard, (id) => this.targetOf(id), hooks.stopped);
    this.targets = new Targets(ctx, store, guard, box);
    this.dueRows = new DueReader(store);
    const w = ctx.config.webhooks;
    this.gates = new EndpointGates({ breakerFailures: w.breaker_failures, breakerProbeMs: w.breaker_probe_ms, slowMs: w.slow_ms });
    this.gating = this.gatingOn();
    this.kept = new HeldRows(w.concurrency * 4, w.concurrency * 16);
  }

  /** Stopping: cuts the attempts on the wire short, waits for them, closes the agent. */
  async close(): Promise<void> {
    this.attempts.abortAll();
    await Promise.allSettled([...this.inflight.values()]);
  }

  async closeAgent(): Promise<void> {
    await this.attempts.closeAgent();
  }

  /**
   * Fills the free slots: first from the rows the cap held back in memory (`kept`), then from the
   * rows read ahead; when they run out, the next due ones are read (their seqs from the covering
   * index, past those in flight or kept, the rows of the others in one statement), unless the last
   * read found nothing to send and nothing has changed since (`dry`; `news`: something may have).
   */
  dispatch(news = false): void {
    const max = this.ctx.config.webhooks.concurrency;
    const now = this.ctx.clock.now();
    if (news) {
      this.dry = false;
      this.dueRows.restart();
    }
    let refilled = -1;
    // Endpoints whose rows this pass's read launched (see `dry` below).
    const readFor = new Set<string>();
    const send = (row: SendableRow, gatedAt: number | null) => {
      if (refilled !== -1) readFor.add(row.endpoint_id);
      void this.launch(row, false, gatedAt, this.readyDurable);
    };
    const held: Array<[number, number]> = [];
    if (this.gating) this.gates.newPass();
    this.releaseSlow(now);
    if (this.kept.size > 0) this.sendKept(now, max, held);
    while (this.sending < max) {
      if (this.ready.length === 0) {
        // Rows a gate held back leave the due window before it is read again.
        if (held.length > 0) this.reschedule(held.splice(0));
        if (refilled !== -1 || this.dry) break;
        refilled = this.launches;
        // The timer's look past a capped backlog (`nextDueIn`) counts from the last read, whatever
        // made it: a read when the kept rows ran out is a look too.
        this.lookedAt = now;
        const seqs: number[] = [];
        for (const r of this.dueRows.read(now, max * 4, this.inflight.size + this.kept.size)) {
          if (this.inflight.has(r.seq) || this.kept.has(r.seq)) continue;
          // Its endpoint's cap is full and no more of its rows are kept: the gates would hold it
          // back and it would be rescheduled, so that is done from the index entry, unread.
          // Its time counts the kept rows ahead of it: due again when they have gone, not before.
          if (this.gating && this.capFull(r.endpoint_id))
            held.push([r.seq, this.gates.admit(r.endpoint_id, this.targetOf(r.endpoint_id)!.gate!, now, this.kept.count(r.endpoint_id))]);
          else seqs.push(r.seq);
        }
        if (seqs.length === 0) break;
        this.ready = this.store.sendableMany(seqs);
        this.readyDurable = whenDurable(this.ctx.db);
        continue;
      }
      const row = this.ready.shift()!;
      if (this.inflight.has(row.seq) || this.kept.has(row.seq)) continue;
      if (row.status !== 'pending' || row.endpoint_disabled || row.next_attempt_ms === null || row.next_attempt_ms > now) continue;
      if (this.gating) {
        let gate: GateSettings | null;
        try {
          gate = this.targetOf(row.endpoint_id)?.gate ?? null;
        } catch {
          // An endpoint whose target cannot be made (its secret does not open): the attempt records why.
          send(row, null);
          continue;
        }
        if (gate || this.gates.breakerOn) {
          const at = this.gates.admit(row.endpoint_id, gate ?? NO_GATE, now);
          if (at !== 0) {
            // Held by the cap: kept in memory, sent when the endpoint's next attempt ends.
            if (!(this.gates.heldByCap && this.kept.keep(row))) held.push([row.seq, at]);
            continue;
          }
          send(row, now);
          continue;
        }
      }
      send(row, null);
    }
    if (held.length > 0) this.reschedule(held);
    // Dry: reading again now would launch nothing new. So when the read launched nothing, and also
    // when it launched only rows of endpoints now at their cap with rows kept: another read would
    // meet the same rows and reschedule their backlog again at every attempt's end (decision 0264).
    // Those endpoints' kept rows running out, news, or the timer's look make the next read.
    if (refilled !== -1) this.dry = this.launches === refilled || [...readFor].every((id) => this.kept.holds(id));
  }

  /** Sends the rows the cap held back, oldest first by endpoint, while their endpoint admits them. */
  private sendKept(now: number, max: number, held: Array<[number, number]>): void {
    for (const [endpointId, rows] of this.kept.queues()) {
      while (rows.length > 0 && this.sending < max) {
        const row = rows[0];
        let gate: GateSettings | null = null;
        let unopened = false;
        try {
          gate = this.targetOf(endpointId)?.gate ?? null;
        } catch {
          unopened = true;
        }
        const gated = !unopened && (gate !== null || this.gates.breakerOn);
        const at = gated && !this.inflight.has(row.seq) ? this.gates.admit(endpointId, gate ?? NO_GATE, now) : 0;
        if (at !== 0 && this.gates.heldByCap) break;
        // Its last kept row taken: the endpoint's next ones are in the database, to be read.
        if (this.kept.shift(endpointId)) this.dry = false;
        if (this.inflight.has(row.seq)) continue;
        if (at !== 0) held.push([row.seq, at]);
        else void this.launch(row, false, gated ? now : null, this.readyDurable);
      }
    }
  }

  /** Whether the endpoint's in-flight cap holds its next row back and the kept rows have no room for it. */
  private capFull(endpointId: string): boolean {
    if (!this.kept.full(endpointId)) return false;
    let cap: number | null | undefined;
    try {
      cap = this.targetOf(endpointId)?.gate?.maxInFlight;
    } catch {
      return false;
    }
    return cap != null && this.gates.inFlight(endpointId) >= cap;
  }

  /** Ms until the next due row not in flight (undefined: none); while rows are kept, a recheck delay. */
  nextDueIn(now: number): number | undefined {
    // Rows a cap holds back wait in memory: the head of the due order is theirs and their endpoints'
    // backlogs, which only an attempt ending moves (it kicks a pass of its own, which reads again
    // once the kept rows run out). Looking at once would find them due, read, and reschedule the
    // backlog past the kept rows again and again (decision 0264): look past it every
    // DRY_RECHECK_MS from the last read instead, whether or not that read sent anything.
    if (this.kept.size > 0) return Math.max(0, this.lookedAt + DRY_RECHECK_MS - now);
    // Rows read ahead were due when read and are not in flight: no need to read the index again.
    if (this.ready.length > 0) return 0;
    const next = this.store.due(Number.MAX_SAFE_INTEGER, this.inflight.size + 1).find((r) => !this.inflight.has(r.seq));
    return next?.next_attempt_ms == null ? undefined : Math.max(0, next.next_attempt_ms - now);
  }

  private releaseSlow(now: number): void {
    const slowMs = this.ctx.config.webhooks.slow_ms;
    if (slowMs <= 0 || this.sending === 0) return;
    for (const f of this.flights.values()) {
      if (f.released || now - f.at < slowMs) continue;
      f.released = true;
      this.sending--;
    }
  }

  private reschedule(rows: Array<[number, number]>): void {
    try {
      this.hooks.bookkeeping(() => this.store.reschedule(rows));
    } catch (err) {
      // Still due where they were, before where the next read would go on from.
      this.dueRows.restart();
      this.ctx.log.error({ err }, 'rescheduling webhook deliveries held back failed');
    }
  }

  /** Drops the rows read ahead (an endpoint changed, a delivery was sent by hand): they are read again. */
  forgetReadAhead(): void {
    this.ready = [];
    this.kept.clear();
    this.dry = false;
    this.dueRows.restart();
  }

  /** `gatedAt`: when the gates admitted it (null: not gated); `durable`: its read on disk (a failed flush: stays due). */
  launch(row: SendableRow, manual: boolean, gatedAt: number | null = null, durable: Promise<void> = whenDurable(this.ctx.db)): Promise<void> {
    this.sending++;
    this.launches++;
    const flight: Flight = { at: this.ctx.clock.now(), released: false, gatedAt, launched: undefined };
    this.flights.set(row.seq, flight);
    flight.launched = this.run(row, manual, durable, flight);
    this.inflight.set(row.seq, flight.launched);
    return flight.launched;
  }

  /** A launched attempt to its end: its slot freed at the answer, its outcome recorded, then out of `inflight`. */
  private async run(row: SendableRow, manual: boolean, durable: Promise<void>, flight: Flight): Promise<void> {
    const gatedAt = flight.gatedAt;
    // A failure (a retry scheduled) or a FIFO success (the next made due) changes what is due.
    let news = true;
    try {
      let outcome: Outcome | undefined;
      try {
        outcome = await this.attempts.make(row, manual, durable);
      } catch (err) {
        // Its read is not on disk (a failed flush): not sent, still due.
        if (gatedAt !== null) this.gates.finished(row.endpoint_id, gatedAt, false, true, 0, this.ctx.clock.now());
        throw err;
      } finally {
        if (!flight.released) this.sending--;
        this.flights.delete(row.seq);
      }
      const ok = outcome !== undefined && succeeded(outcome);
      news = !ok || this.targets.cached(row.endpoint_id)?.fifo !== false;
      if (gatedAt !== null) this.gates.finished(row.endpoint_id, gatedAt, ok, true, outcome?.durationMs ?? 0, this.ctx.clock.now());
      // The slot is free now; the outcome commits with the next group.
      this.hooks.kick();
      if (outcome) await this.hooks.record(outcome);
    } catch (err) {
      this.ctx.log.error({ err, deliverySeq: row.seq }, 'webhook attempt failed to record');
    } finally {
      if (this.inflight.get(row.seq) === flight.launched) this.inflight.delete(row.seq);
      if (news) {
        this.dry = false;
        this.dueRows.restart();
      }
      this.hooks.kick();
    }
  }

  /** A rotation changed the endpoint's secret, or a PATCH its gates or FIFO: it is read again. */
  forgetTarget(endpointId: string): void {
    this.targets.forget(endpointId);
    this.gating = this.gatingOn();
  }

  private gatingOn(): boolean {
    return this.gates.breakerOn || this.ctx.config.webhooks.endpoint_max_in_flight > 0 || this.store.gatedCount() > 0;
  }

  /** Attempts of an endpoint in flight through its gates (status, tests). */
  inFlightOf(endpointId: string): number {
    return this.gates.inFlight(endpointId);
  }

  /** Whether an endpoint's circuit breaker is open or half-open. */
  breakerOpen(endpointId: string): boolean {
    return this.gates.isOpen(endpointId);
  }

  /** The endpoint's parsed URL and key, cached (undefined if the endpoint is gone). */
  targetOf(endpointId: string): Target | undefined {
    return this.targets.of(endpointId);
  }
}
