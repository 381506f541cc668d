import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import type { WebhooksStore } from './store.js';
import type { WriteOp } from './writer.js';
import { noticeDisabled, noticeExhausted } from './notices.js';

/** What one attempt came to; committed in groups by the worker (`successOps` through its writer, `applyFailure`). */
export interface Outcome {
  deliverySeq: number;
  endpointId: string;
  manual: boolean;
  timestamp: number;
  attemptedAt: number;
  durationMs: number;
  responseCode: number | null;
  error: string | null;
  retryAfterMs: number | null;
  /** The start of the answer's body (post.ts: 1 KiB at most); null without one. */
  responseBody: string | null;
}

/** Whether an answer settles the delivery: any 2xx. */
export function succeeded(o: Outcome): boolean {
  return o.responseCode !== null && o.responseCode >= 200 && o.responseCode < 300;
}

/**
 * 2xx attempts' records for the worker's writer: each delivery settled and its attempt's row. The
 * successes of a group that share a response code and kind (automatic or manual) are two
 * statements in all; a delivery twice in one group (not expected: it is not sent again before its
 * outcome commits) gets its own statements, in order, so each attempt keeps its number.
 */
export function successOps(outcomes: Outcome[], now: string): WriteOp[] {
  const groups = new Map<string, { seqs: number[]; rows: unknown[][]; auto: number; manual: number; response_code: number | null }>();
  const seen = new Set<number>();
  const single: WriteOp[] = [];
  for (const o of outcomes) {
    const attempted = isoTime(o.attemptedAt);
    if (seen.has(o.deliverySeq)) {
      const params = {
        seq: o.deliverySeq,
        auto: o.manual ? 0 : 1,
        manual: o.manual ? 1 : 0,
        response_code: o.responseCode,
        updated_at: now,
        webhook_timestamp: o.timestamp,
        attempted_at: attempted,
        duration_ms: o.durationMs,
        response_body: o.responseBody,
      };
      single.push(['markSucceeded', params], ['insertSucceededAttempt', params]);
      continue;
    }
    seen.add(o.deliverySeq);
    const key = `${o.responseCode}:${o.manual ? 1 : 0}`;
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { seqs: [], rows: [], auto: o.manual ? 0 : 1, manual: o.manual ? 1 : 0, response_code: o.responseCode }));
    g.seqs.push(o.deliverySeq);
    g.rows.push([o.deliverySeq, o.timestamp, attempted, o.durationMs, o.responseBody]);
  }
  const ops: WriteOp[] = [];
  for (const g of groups.values()) {
    const common = { auto: g.auto, manual: g.manual, response_code: g.response_code, updated_at: now };
    ops.push(
      ['markSucceededMany', { ...common, seqs: JSON.stringify(g.seqs) }],
      ['insertSucceededAttempts', { manual: g.manual, response_code: g.response_code, rows: JSON.stringify(g.rows) }],
    );
  }
  return [...ops, ...single];
}

/**
 * Applies a failed attempt's outcome (not a 2xx; see `successOps` for those): the attempt row, the
 * delivery's state (the retry schedule with `Retry-After`, giving up), and the 410 rule (the
 * endpoint is disabled, its pending deliveries canceled). Runs inside the worker's bookkeeping
 * transaction on the daemon's connection: failures are few, and they read before they write.
 */
export function applyFailure(ctx: AppContext, store: WebhooksStore, o: Outcome): void {
  const code = o.responseCode;
  const d = store.deliveryBySeq(o.deliverySeq);
  if (!d) return; // the endpoint was deleted meanwhile
  const cfg = ctx.config.webhooks;
  const now = isoTime(ctx.clock.now());
  const attempt = d.attempts + 1;
  store.insertAttempt(attemptRow(o, attempt, d));
  // An automatic attempt's failure starts (or continues) the endpoint's failing streak.
  if (!o.manual) store.markFailing(d.endpoint_id, o.attemptedAt);
  const autoAttempts = d.auto_attempts + (o.manual ? 0 : 1);
  let status = d.status;
  let next = d.next_attempt_ms;
  let exhausted = false;
  const error = o.error ?? `http_${code}`;
  if (code === 410) {
    status = 'failed';
    next = null;
  } else if (o.manual) {
    // A manual resend never shortens or extends the schedule of a delivery still being retried, nor
    // takes a parked one (first-in-first-out, waiting its turn) out of its endpoint's order.
    if (!(d.status === 'pending' && (d.next_attempt_ms !== null || d.fifo === 1))) {
      status = 'failed';
      next = null;
    }
  } else if (d.status === 'pending' && d.fifo === 1 && d.next_attempt_ms === null) {
    // Parked while its attempt was in flight (FIFO turned on meanwhile): it waits its turn.
    next = null;
  } else if (d.status === 'pending') {
    const delay = cfg.retry_delays_ms[autoAttempts - 1];
    if (delay === undefined) {
      status = 'failed';
      next = null;
      exhausted = true;
    } else {
      const asked = o.retryAfterMs === null ? 0 : Math.min(o.retryAfterMs, cfg.max_retry_after_ms);
      next = ctx.clock.now() + Math.max(delay, asked);
    }
  }
  const written = store.updateDelivery({
    seq: d.seq,
    from: d.status,
    status,
    attempts: attempt,
    auto_attempts: autoAttempts,
    next_attempt_ms: status === 'pending' ? next : null,
    last_response_code: code,
    last_error: error,
    updated_at: now,
  });
  // Read and written in one transaction, so only a bug gets here: roll back rather than keep an
  // attempt row whose delivery moved on without it.
  if (!written) throw new Error(`webhook delivery ${d.id} left ${d.status} while its failure was recorded`);
  // A first-in-first-out head given up: the next in its endpoint's order is due now.
  if (d.fifo === 1 && status !== 'pending') store.promoteNext(d.endpoint_id, ctx.clock.now());
  if (code === 410) {
    // After this delivery's own write: it ends failed (the receiver answered), its siblings canceled.
    const ep = store.endpoint(d.endpoint_id);
    if (ep && !ep.disabled) {
      const reason = 'The receiver answered 410 Gone.';
      store.updateEndpoint({ id: ep.id, description: ep.description, disabled: 1, disabled_reason: reason, updated_at: now });
      store.cancelPending(ep.id, 'endpoint_disabled: the receiver answered 410 Gone', now);
      store.markDisabled(ep.id, ctx.clock.now(), store.cursor());
      noticeDisabled(store, ep, reason, 'gone', ctx.clock.now());
    }
  } else if (exhausted) {
    // Told in this transaction, so once: the integrator hears of each message given up.
    const ep = store.endpoint(d.endpoint_id);
    if (ep) noticeExhausted(store, ep, d, { attempts: attempt, response_code: code, error }, ctx.clock.now());
  }
  ctx.log.warn({ delivery: d.id, endpoint: d.endpoint_id, event: d.event_id, attempt, code, error }, 'webhook attempt failed');
}

function attemptRow(o: Outcome, attempt: number, d: { account_id: string; live_mode: number }) {
  return {
    delivery_seq: o.deliverySeq,
    attempt,
    account_id: d.account_id,
    live_mode: d.live_mode,
    manual: o.manual ? 1 : 0,
    webhook_timestamp: o.timestamp,
    attempted_at: isoTime(o.attemptedAt),
    duration_ms: o.durationMs,
    response_code: o.responseCode,
    response_body: o.responseBody,
    error: o.error,
  };
}

export class TimeoutError extends Error {
  constructor() {
    super('attempt timed out');
    this.name = 'TimeoutError';
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

export function describe(err: unknown, timeoutMs: number): string {
  const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
  const code = e?.code ?? e?.cause?.code;
  // Not a network problem: the box's key does not open the endpoint's secret.
  if (e?.name === 'KeyMismatchError') return e.message.slice(0, 500);
  if (code === 'EADDRREFUSED' || e?.name === 'AddressRefusedError') return `address_refused: ${e.message}`;
  if (e?.name === 'TimeoutError' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') {
    return `timeout: no complete response within ${timeoutMs} ms`;
  }
  if (code === 'ECONNREFUSED') return 'connection_refused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `dns: ${e.message}`;
  return `network: ${code ?? ''} ${e?.message ?? String(err)}`.slice(0, 300);
}
