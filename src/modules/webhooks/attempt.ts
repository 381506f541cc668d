import { performance } from 'node:perf_hooks';
import type { Agent } from 'undici';
import { undici } from '../../system/undici.js';
import type { AppContext } from '../../context.js';
import { deliveryBody } from './body.js';
import { deliveryHeaders, signedHeaders } from '../../system/standard-webhooks.js';
import type { UrlGuard } from '../../system/url-guard.js';
import { describe, retryAfterMs, type Outcome } from './outcome.js';
import { AttemptDeadlines } from './deadlines.js';
import { post } from './post.js';
import type { Target } from './targets.js';
import type { SendableRow } from './store.js';

/**
 * The HTTP half of a delivery (the dispatcher, dispatch.ts, decides what to send): one POST of the
 * delivery's body, signed at the moment it is made, through the worker's keep-alive agent, within
 * one whole-attempt limit, answered as an outcome to record.
 */
export class Attempts {
  /** Made by the first delivery (undici is loaded then, not at start: issue 16). */
  private agentMade: Agent | undefined;

  /** The whole-attempt limit, one timer shared by the attempts started close together. */
  private readonly deadlines: AttemptDeadlines;

  constructor(
    private readonly ctx: AppContext,
    private readonly guard: UrlGuard,
    private readonly targetOf: (endpointId: string) => Target | undefined,
    /** Whether the daemon is stopping: an attempt cut short then is not counted. */
    private readonly stopped: () => boolean,
  ) {
    this.deadlines = new AttemptDeadlines(ctx.config.webhooks.timeout_ms);
  }

  /** Stopping: cuts the attempts on the wire short. */
  abortAll(): void {
    this.deadlines.abortAll();
  }

  async closeAgent(): Promise<void> {
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

  /** One HTTP attempt. Undefined when the daemon is stopping: that attempt is not counted. */
  make(row: SendableRow, manual: boolean, durable: Promise<void>): Promise<Outcome | undefined> {
    return this.attempt(row, manual, durable);
  }

  private async attempt(row: SendableRow, manual: boolean, durable: Promise<void>): Promise<Outcome | undefined> {
    await durable;
    const attemptedAt = this.ctx.clock.now();
    const timestamp = Math.floor(attemptedAt / 1000);
    const t0 = performance.now();
    const out = (responseCode: number | null, error: string | null, retryAfterMs: number | null = null, responseBody: string | null = null): Outcome => ({
      deliverySeq: row.seq,
      endpointId: row.endpoint_id,
      manual,
      timestamp,
      attemptedAt,
      durationMs: Math.round(performance.now() - t0),
      responseCode,
      error,
      retryAfterMs,
      responseBody,
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
          headers: {
            'content-type': 'application/json',
            'user-agent': 'posd-webhooks/1',
            ...deliveryHeaders(
              signedHeaders(
                target.key,
                row.event_id,
                timestamp,
                body,
                target.previous !== null && attemptedAt < target.previousUntil ? target.previous : undefined,
              ),
            ),
          },
          deadline,
          bodyLimit: 64 * 1024,
        });
        return out(answer.statusCode, null, retryAfterMs(answer.retryAfter, this.ctx.clock.now()), answer.excerpt);
      } finally {
        this.deadlines.leave(deadline);
      }
    } catch (err) {
      if (this.stopped()) return undefined;
      return out(null, describe(err, this.ctx.config.webhooks.timeout_ms));
    }
  }
}
