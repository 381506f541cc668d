import { whenDurable } from '../../db/wal-flush.js';
import type { Dispatcher } from 'undici';
import type { AppContext } from '../../context.js';
import type { Worker } from '../../api/module.js';
import { isoTime } from '../../clock.js';
import { newId } from '../../ids.js';
import { Mailer } from '../../system/mailer.js';
import type { SecretBox } from '../../system/secret-box.js';
import { postSigned } from '../../system/signed-post.js';
import { ADDRESS_REFUSED, describeOutboundError, guardedAgent, literalRefused, type UrlGuard } from '../../system/url-guard.js';
import { noticeStore, onNoticeRecorded, type NoticeRow, type NoticeStore, type NoticeType } from './notice-store.js';
import type { DeliveryRow, EndpointRow } from './store.js';

/**
 * Operational notices (docs/webhooks.md, Notices): an account's integrator is told, at the notice URL
 * and/or e-mail address of its settings, when one of its endpoints starts failing, is disabled, or a
 * message exhausts its attempts. Each notice is recorded in the transaction of the transition it
 * tells (once: `transition` is unique) and sent from there by `NoticeSender`, retried on its own
 * schedule, with the same webhook-id on every try.
 */

type Endpoint = Pick<EndpointRow, 'id' | 'account_id' | 'live_mode' | 'url' | 'description'>;

function record(
  store: NoticeStore,
  ep: Endpoint,
  type: NoticeType,
  transition: string,
  data: Record<string, unknown>,
  nowMs: number,
  emailOnceSince: string | null = null,
): boolean {
  const now = isoTime(nowMs);
  const payload = JSON.stringify({
    type,
    timestamp: now,
    data: { endpoint_id: ep.id, url: ep.url, description: ep.description, account_id: ep.account_id, live_mode: ep.live_mode === 1, ...data },
  });
  return store.insertNotice({
    id: newId('msg'),
    account_id: ep.account_id,
    live_mode: ep.live_mode,
    type,
    endpoint_id: ep.id,
    transition: `${type}:${transition}`,
    payload,
    email_once_since: emailOnceSince,
    now_ms: nowMs,
    now,
  });
}

/** The endpoint's failing streak reached `failing_notice_ms` (once per streak). */
export function noticeFailing(store: NoticeStore, ep: Endpoint & Pick<EndpointRow, 'failing_since_ms'>, nowMs: number): boolean {
  return record(store, ep, 'endpoint.failing', `${ep.id}:${ep.failing_since_ms}`, { failing_since: isoTime(ep.failing_since_ms!) }, nowMs);
}

/** The endpoint was disabled by posd (410 Gone, or failing too long): `trigger` says which. */
export function noticeDisabled(store: NoticeStore, ep: Endpoint, reason: string, trigger: 'gone' | 'failing', nowMs: number): boolean {
  return record(store, ep, 'endpoint.disabled', `${ep.id}:${nowMs}`, { disabled_reason: reason, trigger }, nowMs);
}

/**
 * A delivery gave up after its last automatic attempt. By URL every time; by e-mail once per
 * failing streak of its endpoint (a dead receiver exhausts every message it was sent).
 */
export function noticeExhausted(
  store: NoticeStore,
  ep: Endpoint & Pick<EndpointRow, 'failing_since_ms'>,
  d: Pick<DeliveryRow, 'seq' | 'id' | 'event_id' | 'event_type'>,
  last: { attempts: number; response_code: number | null; error: string },
  nowMs: number,
): boolean {
  const data = {
    delivery_id: d.id,
    event_id: d.event_id,
    event_type: d.event_type,
    attempts: last.attempts,
    last_response_code: last.response_code,
    last_error: last.error,
  };
  // A seq is unique only within its endpoint: a deleted endpoint's may be taken again.
  return record(store, ep, 'message.attempt.exhausted', `${ep.id}:${d.seq}`, data, nowMs, isoTime(ep.failing_since_ms ?? nowMs));
}

const SUBJECTS: Record<NoticeType, string> = {
  'endpoint.failing': 'A webhook endpoint is failing',
  'endpoint.disabled': 'A webhook endpoint was disabled',
  'message.attempt.exhausted': 'A webhook message was given up',
};

/** Notices sent per look, in due order. */
const BATCH = 50;
/** How often (clock time) settled notices past the retention are deleted. */
const PRUNE_MS = 3_600_000;

/** Sends the notices due: a worker of the webhooks module. */
export class NoticeSender implements Worker {
  readonly name = 'webhook-notices';
  private readonly store: NoticeStore;
  private readonly mailer: Mailer;
  private agent: Dispatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private pass: Promise<void> | undefined;
  private again = false;
  private unlisten: (() => void) | undefined;
  private lastPrune = Number.NEGATIVE_INFINITY;
  /** Notices being sent now (by a kick's look or `runDue`): never sent twice at once. */
  private readonly sending = new Set<number>();

  constructor(
    private readonly ctx: AppContext,
    private readonly guard: UrlGuard,
    private readonly box: SecretBox,
  ) {
    this.store = noticeStore(ctx.db);
    const cfg = ctx.config.webhooks.notices;
    this.mailer = new Mailer(cfg.smtp, cfg.timeout_ms);
  }

  /** Whether notices can go by e-mail (an SMTP server is configured). */
  get emailEnabled(): boolean {
    return this.mailer.enabled;
  }

  start(): void {
    this.running = true;
    this.unlisten = onNoticeRecorded(this.ctx.db, () => setImmediate(() => this.kick()));
    this.kick();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.unlisten?.();
    clearTimeout(this.timer);
    await this.pass;
    this.mailer.close();
    await this.agent?.close();
  }

  /** Sends what is due now, soon (one look at a time; a kick during one makes another after it). */
  kick(): void {
    if (!this.running) return;
    if (this.pass) this.again = true;
    else void this.look();
  }

  /** Sends everything due now and waits for it (tests move a ManualClock and call this). */
  async runDue(): Promise<void> {
    while (this.pass) await this.pass;
    await this.look();
  }

  private look(): Promise<void> {
    const run = this.sendDue()
      .catch((err) => this.ctx.log.error({ err }, 'webhook notices: a look failed; the timer tries again'))
      .finally(() => {
        this.pass = undefined;
        if (this.again) {
          this.again = false;
          this.kick();
        } else this.schedule();
      });
    this.pass = run;
    return run;
  }

  private schedule(): void {
    clearTimeout(this.timer);
    if (!this.running) return;
    const next = this.store.nextNoticeDue();
    const poll = this.ctx.config.webhooks.notices.poll_ms;
    const delay = next === null ? poll : Math.min(poll, Math.max(0, next - this.ctx.clock.now()));
    this.timer = setTimeout(() => this.kick(), delay);
    this.timer.unref();
  }

  private async sendDue(): Promise<void> {
    const now = this.ctx.clock.now();
    if (now - this.lastPrune >= PRUNE_MS) {
      this.lastPrune = now;
      this.store.pruneNotices(isoTime(now - this.ctx.config.webhooks.retention_days * 86_400_000));
    }
    for (;;) {
      const due = this.store.dueNotices(this.ctx.clock.now(), BATCH).filter((n) => !this.sending.has(n.seq));
      if (due.length === 0) return;
      for (const n of due) this.sending.add(n.seq);
      // Nothing leaves that a power cut (or, on a chain's leading core, a lost append) could take back.
      await whenDurable(this.ctx.db).catch(() => undefined);
      await Promise.all(due.map((n) => this.send(n).finally(() => this.sending.delete(n.seq))));
      if (due.length < BATCH) return;
    }
  }

  private async send(n: NoticeRow): Promise<void> {
    const settings = this.store.noticeSettings(n.account_id);
    const errors: string[] = [];
    let url = n.url_status;
    let email = n.email_status;
    if (url === 'pending') {
      if (!settings?.url || !settings.secret) {
        url = 'failed';
        errors.push('url: the account names no notice URL any more');
      } else if (await this.post(n, settings.url, settings.secret, errors)) url = 'sent';
    }
    if (email === 'pending') {
      if (!settings?.email) {
        email = 'failed';
        errors.push('email: the account names no notice e-mail address any more');
      } else if (await this.mail(n, settings.email, errors)) email = 'sent';
    }
    const attempts = n.attempts + 1;
    let next: number | null = null;
    if (url === 'pending' || email === 'pending') {
      const delay = this.ctx.config.webhooks.notices.retry_delays_ms[n.attempts];
      if (delay === undefined) {
        if (url === 'pending') url = 'failed';
        if (email === 'pending') email = 'failed';
      } else next = this.ctx.clock.now() + delay;
    }
    this.store.updateNotice({
      seq: n.seq,
      from_attempts: n.attempts,
      url_status: url,
      email_status: email,
      attempts,
      next_attempt_ms: next,
      last_error: errors.length === 0 ? null : errors.join('; '),
      now: isoTime(this.ctx.clock.now()),
    });
    if (errors.length > 0) this.ctx.log.warn({ notice: n.id, type: n.type, endpoint: n.endpoint_id, attempts, errors }, 'webhook notice not taken');
  }

  private async post(n: NoticeRow, url: string, sealedSecret: string, errors: string[]): Promise<boolean> {
    try {
      if (literalRefused(this.guard, url)) throw Object.assign(new Error(ADDRESS_REFUSED), { code: 'EADDRREFUSED' });
      const timeoutMs = this.ctx.config.webhooks.notices.timeout_ms;
      this.agent ??= guardedAgent(this.guard, { timeoutMs, connections: 4 });
      const at = Math.floor(this.ctx.clock.now() / 1000);
      const answer = await postSigned(this.agent, url, this.box.open(sealedSecret), { id: n.id, body: n.payload, timestampSeconds: at }, timeoutMs);
      if (answer.statusCode >= 200 && answer.statusCode < 300) return true;
      errors.push(`url: http_${answer.statusCode}`);
    } catch (err) {
      errors.push(`url: ${describeOutboundError(err)}`);
    }
    return false;
  }

  private async mail(n: NoticeRow, to: string, errors: string[]): Promise<boolean> {
    if (!this.mailer.enabled) {
      errors.push('email: no SMTP server is configured (webhooks.notices.smtp.host)');
      return false;
    }
    const body = JSON.parse(n.payload) as { data: Record<string, unknown> };
    const lines = Object.entries(body.data).map(([k, v]) => `${k}: ${v === null ? '-' : String(v)}`);
    try {
      await this.mailer.send({
        to,
        subject: `${SUBJECTS[n.type]}: ${String(body.data.url)}`,
        text: `${SUBJECTS[n.type]} (${n.type}).\n\n${lines.join('\n')}\n\nNotice ${n.id}, ${n.created_at}.\n`,
        headers: { 'X-Posd-Notice-Id': n.id, 'X-Posd-Notice-Type': n.type },
      });
      return true;
    } catch (err) {
      errors.push(`email: ${String((err as Error).message ?? err).slice(0, 200)}`);
      return false;
    }
  }
}
