import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import type { Transporter } from 'nodemailer';
import type { Worker } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { accountsOf } from '../../accounts/service.js';
import { diskFullState } from '../../db/disk-full.js';
import { syncStatus } from '../../sync/status.js';
import { guardedAgent, literalRefused, outboundGuard, describeOutboundError } from '../../system/url-guard.js';
import { undici } from '../../system/undici.js';
import { signedHeaders } from '../webhooks/index.js';
import { dataFolder, recordedChecks } from './doctor.js';
import { outageNow } from './outage.js';
import { storedDeadlineProblem } from './panels.js';
import { storedNearProblems } from './stored-near.js';

/** One condition that turns the page red, under a key that stays the same while it lasts (its text may change). */
export interface AlertCondition {
  key: string;
  problem: string;
  fix: string;
}

/**
 * What the page's verdict turns red for, each under a stable key: doctor's checks by name (free
 * disk, disk full, backups, the signing key, webhooks, tax invoicing, the data folder), sync's
 * alerts by code (a link down past sync.alert_link_down_ms, records stalled or parked, a central's
 * silent stores), a stored card payment near its deadline, and stored payments near their caps or
 * window (stored-near.ts). Not the terminals the page lists as
 * disconnected: a terminal switched off at closing would mail every night.
 */
export function alertConditions(ctx: AppContext, nowMs: number): AlertCondition[] {
  const out: AlertCondition[] = [];
  for (const c of [...dataFolder(ctx.config, diskFullState(ctx.db)), ...recordedChecks(ctx.config, ctx.db, nowMs)]) {
    if (!c.ok && c.name !== 'sync') out.push({ key: `check:${c.name}`, problem: `${c.name}: ${c.detail}`, fix: c.fix ?? '' });
  }
  // A full disk is still a low one: "free disk" does not clear (an all-clear mailed as the disk
  // fills up) while "disk full" stands in its place.
  const full = out.find((c) => c.key === 'check:disk full');
  if (full && !out.some((c) => c.key === 'check:free disk')) out.push({ ...full, key: 'check:free disk' });
  for (const a of syncStatus(ctx.config, ctx.db, nowMs).alerts) out.push({ key: `sync:${a.code}`, problem: `sync: ${a.message}`, fix: a.fix });
  let deadline = null;
  try {
    deadline = storedDeadlineProblem(outageNow(ctx), nowMs);
  } catch {
    // no stored payments on this box (or unreadable now): the next check looks again
  }
  if (deadline) out.push({ key: 'stored:deadline', ...deadline });
  try {
    out.push(...storedNearProblems(ctx, nowMs));
  } catch {
    // as above
  }
  return out;
}

export interface AlertNotice {
  kind: 'raised' | 'cleared';
  key: string;
  problem: string;
  fix: string;
  /** When the condition was first announced. */
  since: string;
  at: string;
  box: string;
}

interface Channel {
  name: 'email' | 'webhook';
  send(n: AlertNotice): Promise<void>;
  close?(): void;
}

/** What each channel announced and not yet cleared, by key: kept in the database, so a restart resends nothing. */
type Announced = Record<string, Record<string, { problem: string; fix: string; since: string }>>;
const STATE_KEY = 'ops.alerts_announced';

function emailChannel(ctx: AppContext): Channel | null {
  const a = ctx.config.alerts;
  if (!a.email_to || !a.smtp.host) return null;
  let transport: Transporter | undefined;
  return {
    name: 'email',
    async send(n) {
      // Loaded by the first alert, not at start.
      const { default: nodemailer } = await import('nodemailer');
      transport ??= nodemailer.createTransport({
        host: a.smtp.host,
        port: a.smtp.port,
        secure: a.smtp.secure,
        auth: a.smtp.user ? { user: a.smtp.user, pass: a.smtp.password } : undefined,
        connectionTimeout: a.timeout_ms,
        greetingTimeout: a.timeout_ms,
        socketTimeout: a.timeout_ms,
      });
      const head = n.kind === 'raised' ? n.problem : `cleared: ${n.problem}`;
      await transport.sendMail({
        from: a.smtp.from,
        to: a.email_to,
        subject: `[posd ${n.box}] ${head.length > 140 ? `${head.slice(0, 139)}…` : head}`,
        text:
          n.kind === 'raised'
            ? `${n.problem}\n\nWhat to do: ${n.fix || 'see the status page'}\n\nSince ${n.since} on ${n.box}. You get one more message when it clears.\n`
            : `All clear: this no longer stands (at ${n.at}, since ${n.since}) on ${n.box}:\n\n${n.problem}\n`,
      });
    },
    close: () => transport?.close(),
  };
}

function webhookChannel(ctx: AppContext): Channel | null {
  const a = ctx.config.alerts;
  if (!a.webhook_url) return null;
  const guard = outboundGuard(ctx);
  const agent = guardedAgent(guard, { timeoutMs: a.timeout_ms, connections: 1 });
  return {
    name: 'webhook',
    async send(n) {
      if (literalRefused(guard, a.webhook_url)) throw new Error('address_refused: the host is a private, local or metadata address (webhooks.allow_cidrs)');
      // The same notice has the same id however often it is retried: a receiver drops repeats by it.
      const id = `alert_${createHash('sha256').update(`${n.kind}\n${n.key}\n${n.since}`).digest('hex').slice(0, 24)}`;
      const body = JSON.stringify({
        type: `alert.${n.kind}`,
        timestamp: n.at,
        data: { key: n.key, problem: n.problem, fix: n.fix, since: n.since, box: n.box },
      });
      const ts = Math.floor(Date.parse(n.at) / 1000);
      let res;
      try {
        res = await undici().request(a.webhook_url, {
          method: 'POST',
          dispatcher: agent,
          headers: { 'content-type': 'application/json', 'user-agent': 'posd-alerts', ...signedHeaders(a.webhook_secret, id, ts, body) },
          body,
        });
      } catch (err) {
        throw new Error(describeOutboundError(err));
      }
      await res.body.dump();
      if (res.statusCode < 200 || res.statusCode > 299) throw new Error(`the receiver answered ${res.statusCode}`);
    },
    close: () => void agent.close(),
  };
}

/**
 * Sends each condition once by each channel when it starts, and the all-clear once when it ends.
 * What was announced is written after each send that succeeded: a failed send is tried again at the
 * next check, and a restart sends nothing twice.
 */
export class AlertNotifier implements Worker {
  readonly name = 'alerts';
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private readonly channels: Channel[];
  private readonly box: string;

  constructor(private readonly ctx: AppContext) {
    this.channels = [emailChannel(ctx), webhookChannel(ctx)].filter((c): c is Channel => c !== null);
    this.box = `${hostname()}:${ctx.config.data_dir}`;
  }

  enabled(): boolean {
    return this.channels.length > 0;
  }

  start(): void {
    this.schedule();
  }

  private schedule(): void {
    if (this.stopped || this.ctx.shutdown.aborted) return;
    this.timer = setTimeout(() => void this.check().finally(() => this.schedule()), this.ctx.config.alerts.check_interval_ms);
    this.timer.unref();
  }

  /** Read from the database once, then kept here: a disk too full to record a send must not send it again. */
  private state: Announced | undefined;

  private announced(): Announced {
    if (this.state) return this.state;
    try {
      this.state = JSON.parse(accountsOf(this.ctx).meta(STATE_KEY) ?? '{}') as Announced;
    } catch {
      this.state = {};
    }
    return this.state;
  }

  /** Best effort: what was sent stays known in memory; the database has it for a restart once it can write. */
  private save(state: Announced): void {
    try {
      accountsOf(this.ctx).setMeta(STATE_KEY, JSON.stringify(state));
    } catch (err) {
      this.ctx.log.warn({ err: (err as Error).message }, 'alerts: could not record what was sent; kept in memory until the database can');
    }
  }

  /** Looks at the conditions now and sends what changed (also what the timer calls); one at a time. */
  check(): Promise<void> {
    this.running ??= this.checkOnce().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async checkOnce(): Promise<void> {
    const now = this.ctx.clock.now();
    let current: AlertCondition[];
    try {
      current = alertConditions(this.ctx, now);
    } catch (err) {
      this.ctx.log.warn({ err: (err as Error).message }, 'alerts: could not read the conditions');
      return;
    }
    const at = new Date(now).toISOString();
    const state = this.announced();
    const save = () => this.save(state);
    for (const ch of this.channels) {
      const sent = (state[ch.name] ??= {});
      const notices: Array<{ n: AlertNotice; done: () => void }> = [
        ...current
          .filter((c) => !sent[c.key])
          .map((c) => ({
            n: { kind: 'raised' as const, ...c, since: at, at, box: this.box },
            done: () => (sent[c.key] = { problem: c.problem, fix: c.fix, since: at }),
          })),
        ...Object.entries(sent)
          .filter(([key]) => !current.some((c) => c.key === key))
          .map(([key, was]) => ({ n: { kind: 'cleared' as const, key, ...was, at, box: this.box }, done: () => delete sent[key] })),
      ];
      for (const { n, done } of notices) {
        if (this.stopped) return;
        try {
          await ch.send(n);
          done();
          save();
          this.ctx.log.info({ event: `alert_${n.kind}`, channel: ch.name, key: n.key }, `alert ${n.kind} sent by ${ch.name}: ${n.problem}`);
        } catch (err) {
          this.ctx.log.warn(
            { channel: ch.name, key: n.key, err: (err as Error).message },
            `alerts: could not send by ${ch.name}; tried again at the next check`,
          );
        }
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running?.catch(() => undefined);
    for (const ch of this.channels) ch.close?.();
  }
}
