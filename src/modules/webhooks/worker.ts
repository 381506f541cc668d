import { isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Agent, request } from 'undici';
import type { AppContext } from '../../context.js';
import type { Worker } from '../../api/module.js';
import { tx } from '../../db/database.js';
import { newId } from '../../ids.js';
import { isoTime } from '../../clock.js';
import { webhookBody } from '../../events/catalogue.js';
import { AccountsService } from '../accounts/service.js';
import { signedHeaders, secretKey } from './signing.js';
import type { SecretBox } from './secrets.js';
import { hostOf, type UrlGuard } from './url-guard.js';
import { webhooksStore, type DeliveryRow, type SendableRow, type WebhooksStore } from './store.js';

const FAN_OUT_BATCH = 500;

interface Outcome {
  deliveryId: string;
  manual: boolean;
  timestamp: number;
  attemptedAt: number;
  durationMs: number;
  responseCode: number | null;
  error: string | null;
  retryAfterMs: number | null;
}

/**
 * The delivery worker. It fans events out (one `webhook_deliveries` row per event and endpoint,
 * keyed by the event id, behind a cursor over `events.seq` kept in the same transaction), then sends
 * what is due with bounded concurrency, signing each attempt at the moment it is made. Outcomes are
 * committed in groups (one transaction for all attempts that finished in the same tick). Nothing
 * lives only in memory: a delivery whose attempt was in flight when the process died is still
 * `pending` and due, so it is sent again after a restart with the same `webhook-id`.
 */
export class DeliveryWorker implements Worker {
  readonly name = 'webhook-delivery';
  private readonly store: WebhooksStore;
  private readonly accounts: AccountsService;
  private readonly agent: Agent;
  private readonly inflight = new Map<string, Promise<void>>();
  private readonly parents = new Map<string, string | null>();
  private readonly keys = new Map<string, { sealed: string; key: Buffer }>();
  private readonly stopping = new AbortController();
  private outcomes: Array<{ outcome: Outcome; done: () => void }> = [];
  private flushScheduled = false;
  private wakeScheduled = false;
  private running = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly onEvents = () => this.wake();

  constructor(
    private readonly ctx: AppContext,
    readonly guard: UrlGuard,
    private readonly box: SecretBox,
  ) {
    this.store = webhooksStore(ctx.db);
    this.accounts = new AccountsService(ctx.db, ctx.clock);
    const t = ctx.config.webhooks.timeout_ms;
    this.agent = new Agent({
      connect: { lookup: guard.lookup(), timeout: t },
      headersTimeout: t,
      bodyTimeout: t,
      connections: ctx.config.webhooks.concurrency,
    });
  }

  start(): void {
    this.running = true;
    this.ctx.outbox.notifier.on('events', this.onEvents);
    this.wake();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.ctx.outbox.notifier.off('events', this.onEvents);
    clearTimeout(this.timer);
    this.stopping.abort();
    await Promise.allSettled([...this.inflight.values()]);
    await this.agent.close().catch(() => undefined);
  }

  /** Look at the table soon (after the current tick): new events, finished attempts, timers. */
  wake(): void {
    if (!this.running || this.wakeScheduled) return;
    this.wakeScheduled = true;
    setImmediate(() => {
      this.wakeScheduled = false;
      if (!this.running) return;
      try {
        this.fanOut();
        this.dispatch();
      } catch (err) {
        this.ctx.log.error({ err }, 'webhook delivery pass failed');
      }
      this.scheduleTimer();
    });
  }

  /**
   * Runs everything due now and waits until it is done (retries due immediately included). Tests
   * move a ManualClock and call this instead of sleeping; operators' tools may call it too.
   */
  async runDue(): Promise<void> {
    for (;;) {
      this.fanOut();
      this.dispatch();
      if (this.inflight.size === 0) return;
      await Promise.allSettled([...this.inflight.values()]);
    }
  }

  /** Sends one delivery now, whatever its schedule (manual retry, test send); resolves once recorded. */
  async sendNow(deliveryId: string): Promise<DeliveryRow | undefined> {
    const running = this.inflight.get(deliveryId);
    if (running) await running;
    const row = this.store.sendable(deliveryId);
    if (!row) return undefined;
    await this.launch(row, true);
    return this.store.delivery(deliveryId);
  }

  /** Creates the delivery rows of events past the cursor. Returns how many events it read. */
  fanOut(): number {
    let read = 0;
    // Most wakes come from finished attempts: skip the write lock when no event is new.
    if (this.store.maxEventSeq() <= this.store.cursor()) return 0;
    for (;;) {
      const n = this.bookkeeping(() => {
        const events = this.store.eventsAfter(this.store.cursor(), FAN_OUT_BATCH);
        if (events.length === 0) return 0;
        const byScope = new Map<string, ReturnType<WebhooksStore['activeEndpoints']>>();
        for (const ep of this.store.activeEndpoints()) {
          const k = `${ep.account_id}:${ep.live_mode}`;
          byScope.set(k, [...(byScope.get(k) ?? []), ep]);
        }
        const nowMs = this.ctx.clock.now();
        const now = isoTime(nowMs);
        for (const ev of events) {
          if (byScope.size === 0) break;
          const parent = this.parentOf(ev.account_id);
          const targets = [...(byScope.get(`${ev.account_id}:${ev.live_mode}`) ?? []), ...(parent ? (byScope.get(`${parent}:${ev.live_mode}`) ?? []) : [])];
          for (const ep of targets) {
            if (ep.from_seq >= ev.seq) continue;
            this.store.insertDelivery({
              id: newId('whd'),
              account_id: ep.account_id,
              live_mode: ep.live_mode,
              endpoint_id: ep.id,
              event_id: ev.id,
              event_type: ev.type,
              event_account_id: ev.account_id,
              payload: null,
              next_attempt_ms: nowMs,
              created_at: now,
            });
          }
        }
        this.store.setCursor(events[events.length - 1].seq);
        return events.length;
      });
      read += n;
      if (n < FAN_OUT_BATCH) return read;
    }
  }

  /**
   * A transaction for the worker's own records, committed without waiting for the disk flush
   * (`synchronous=NORMAL` for its duration; the connection's setting is restored after). They are
   * idempotent: a power cut can only lose the newest of them, after which the cursor is behind
   * (rows are made again, `ON CONFLICT DO NOTHING`) or an attempt's outcome is missing (the
   * delivery is sent again with the same webhook-id). Events themselves are committed by their
   * emitters with the configured durability. On slow store disks this halves the flushes between
   * an event and its first attempt.
   */
  private bookkeeping<T>(fn: () => T): T {
    const db = this.ctx.db;
    if (db.inTransaction) return tx(db, fn);
    const mode = this.ctx.config.database.synchronous;
    db.pragma('synchronous = NORMAL');
    try {
      return tx(db, fn);
    } finally {
      db.pragma(`synchronous = ${mode}`);
    }
  }

  private parentOf(accountId: string): string | null {
    if (!this.parents.has(accountId)) this.parents.set(accountId, this.accounts.account(accountId)?.parent_account_id ?? null);
    return this.parents.get(accountId)!;
  }

  private dispatch(): void {
    const free = this.ctx.config.webhooks.concurrency - this.inflight.size;
    if (free <= 0) return;
    const rows = this.store.due(this.ctx.clock.now(), free + this.inflight.size);
    let started = 0;
    for (const row of rows) {
      if (started >= free) break;
      if (this.inflight.has(row.id)) continue;
      started++;
      void this.launch(row, false);
    }
  }

  private launch(row: SendableRow, manual: boolean): Promise<void> {
    const p = this.attempt(row, manual)
      .then((outcome) => (outcome ? this.record(outcome) : undefined))
      .catch((err) => this.ctx.log.error({ err, delivery: row.id }, 'webhook attempt failed to record'))
      .finally(() => {
        if (this.inflight.get(row.id) === p) this.inflight.delete(row.id);
        this.wake();
      });
    this.inflight.set(row.id, p);
    return p;
  }

  private keyOf(row: SendableRow): Buffer {
    const cached = this.keys.get(row.endpoint_id);
    if (cached && cached.sealed === row.secret) return cached.key;
    const key = secretKey(this.box.open(row.secret));
    this.keys.set(row.endpoint_id, { sealed: row.secret, key });
    return key;
  }

  /** One HTTP attempt. Undefined when the daemon is stopping: that attempt is not counted. */
  private async attempt(row: SendableRow, manual: boolean): Promise<Outcome | undefined> {
    const attemptedAt = this.ctx.clock.now();
    const timestamp = Math.floor(attemptedAt / 1000);
    const t0 = performance.now();
    const out = (responseCode: number | null, error: string | null, retryAfterMs: number | null = null): Outcome => ({
      deliveryId: row.id,
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
      const body = JSON.stringify(
        webhookBody({ type: row.event_type, payload: JSON.parse(payload), account_id: row.event_account_id }, { connected: row.event_account_id !== row.account_id }),
      );
      const host = hostOf(new URL(row.url));
      // A literal address never reaches the socket's lookup, so it is checked here.
      if (isIP(host) && !this.guard.addressAllowed(host)) return out(null, `address_refused: ${host} is a private, local or metadata address`);
      const timeout = this.ctx.config.webhooks.timeout_ms;
      const res = await request(row.url, {
        method: 'POST',
        dispatcher: this.agent,
        body,
        headers: { 'content-type': 'application/json', 'user-agent': 'posd-webhooks/1', ...signedHeaders(this.keyOf(row), row.event_id, timestamp, body) },
        signal: AbortSignal.any([AbortSignal.timeout(timeout), this.stopping.signal]),
      });
      await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
      return out(res.statusCode, null, retryAfterMs(res.headers['retry-after'], this.ctx.clock.now()));
    } catch (err) {
      if (this.stopping.signal.aborted) return undefined;
      return out(null, describe(err, this.ctx.config.webhooks.timeout_ms));
    }
  }

  /** Queues an outcome for the next group commit; resolves once it is committed. */
  private record(outcome: Outcome): Promise<void> {
    return new Promise((resolve) => {
      this.outcomes.push({ outcome, done: resolve });
      if (this.flushScheduled) return;
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    });
  }

  private flush(): void {
    this.flushScheduled = false;
    const batch = this.outcomes;
    this.outcomes = [];
    try {
      this.bookkeeping(() => {
        for (const { outcome } of batch) this.apply(outcome);
      });
    } catch (err) {
      this.ctx.log.error({ err }, 'recording webhook attempts failed; they will be sent again');
    }
    for (const { done } of batch) done();
  }

  /** Applies one attempt's outcome: the attempt row, the delivery's state, the 410 rule. */
  private apply(o: Outcome): void {
    const d = this.store.delivery(o.deliveryId);
    if (!d) return; // the endpoint was deleted meanwhile
    const cfg = this.ctx.config.webhooks;
    const now = isoTime(this.ctx.clock.now());
    const attempt = d.attempts + 1;
    this.store.insertAttempt({
      delivery_id: d.id,
      attempt,
      account_id: d.account_id,
      live_mode: d.live_mode,
      manual: o.manual ? 1 : 0,
      webhook_timestamp: o.timestamp,
      attempted_at: isoTime(o.attemptedAt),
      duration_ms: o.durationMs,
      response_code: o.responseCode,
      error: o.error,
    });
    const code = o.responseCode;
    const ok = code !== null && code >= 200 && code < 300;
    const autoAttempts = d.auto_attempts + (o.manual ? 0 : 1);
    let status = d.status;
    let next = d.next_attempt_ms;
    const error = ok ? null : (o.error ?? `http_${code}`);
    if (ok) {
      status = 'succeeded';
      next = null;
    } else if (code === 410) {
      status = 'failed';
      next = null;
      const ep = this.store.endpoint(d.endpoint_id);
      if (ep && !ep.disabled) {
        this.store.updateEndpoint({ id: ep.id, description: ep.description, disabled: 1, disabled_reason: 'The receiver answered 410 Gone.', updated_at: now });
        this.store.cancelPending(ep.id, 'endpoint_disabled: the receiver answered 410 Gone', now);
      }
    } else if (o.manual) {
      // A manual resend never shortens or extends the schedule of a delivery still being retried.
      if (!(d.status === 'pending' && d.next_attempt_ms !== null)) {
        status = 'failed';
        next = null;
      }
    } else if (d.status === 'pending') {
      const delay = cfg.retry_delays_ms[autoAttempts - 1];
      if (delay === undefined) {
        status = 'failed';
        next = null;
      } else {
        const asked = o.retryAfterMs === null ? 0 : Math.min(o.retryAfterMs, cfg.max_retry_after_ms);
        next = this.ctx.clock.now() + Math.max(delay, asked);
      }
    }
    this.store.updateDelivery({
      id: d.id,
      status,
      attempts: attempt,
      auto_attempts: autoAttempts,
      next_attempt_ms: status === 'pending' ? next : null,
      last_response_code: code,
      last_error: error,
      updated_at: now,
    });
    if (!ok) this.ctx.log.warn({ delivery: d.id, endpoint: d.endpoint_id, event: d.event_id, attempt, code, error }, 'webhook attempt failed');
  }

  private scheduleTimer(): void {
    clearTimeout(this.timer);
    if (!this.running) return;
    const poll = this.ctx.config.webhooks.poll_ms;
    let delay = poll;
    if (this.inflight.size < this.ctx.config.webhooks.concurrency) {
      const next = this.store.due(Number.MAX_SAFE_INTEGER, this.inflight.size + 1).find((r) => !this.inflight.has(r.id));
      if (next?.next_attempt_ms != null) delay = Math.min(poll, Math.max(0, next.next_attempt_ms - this.ctx.clock.now()));
    }
    this.timer = setTimeout(() => this.wake(), delay);
    this.timer.unref();
  }
}

/** `Retry-After` in milliseconds from now: delta-seconds or an HTTP date. */
export function retryAfterMs(header: string | string[] | undefined, nowMs: number): number | null {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return null;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}

function describe(err: unknown, timeoutMs: number): string {
  const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
  const code = e?.code ?? e?.cause?.code;
  if (code === 'EADDRREFUSED' || e?.name === 'AddressRefusedError') return `address_refused: ${e.message}`;
  if (e?.name === 'TimeoutError' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') {
    return `timeout: no complete response within ${timeoutMs} ms`;
  }
  if (code === 'ECONNREFUSED') return 'connection_refused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `dns: ${e.message}`;
  return `network: ${code ?? ''} ${e?.message ?? String(err)}`.slice(0, 300);
}
