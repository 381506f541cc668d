import { whenDurable } from '../../db/wal-flush.js';
import type { Transporter } from 'nodemailer';
import { undici } from '../../system/undici.js';
import type { AppContext } from '../../context.js';

export interface Message {
  to: string;
  subject: string;
  text: string;
}

/**
 * How contracts reach customers: e-mail through the configured SMTP server (nodemailer), messaging
 * through the configured HTTP gateway (undici). A channel without configuration is unavailable;
 * a failed delivery throws so the caller can tell the customer.
 */
export class ContractDelivery {
  private transport: Transporter | undefined;

  constructor(private readonly ctx: AppContext) {}

  emailEnabled(): boolean {
    return this.ctx.config.contracts.smtp.host !== '';
  }

  messagingEnabled(): boolean {
    return this.ctx.config.contracts.messaging.url !== '';
  }

  async email(m: Message): Promise<void> {
    const c = this.ctx.config.contracts.smtp;
    if (!c.host) throw new Error('e-mail is not configured (contracts.smtp.host)');
    // What it says is on disk (and, on a chain's leading core, in the central's log) first.
    await whenDurable(this.ctx.db);
    // Loaded by the first e-mail, not at start.
    const { default: nodemailer } = await import('nodemailer');
    this.transport ??= nodemailer.createTransport({
      host: c.host,
      port: c.port,
      secure: c.secure,
      auth: c.user ? { user: c.user, pass: c.password } : undefined,
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
    });
    await this.transport.sendMail({ from: c.from, to: m.to, subject: m.subject, text: m.text });
  }

  async message(m: Message): Promise<void> {
    const c = this.ctx.config.contracts.messaging;
    if (!c.url) throw new Error('messaging is not configured (contracts.messaging.url)');
    await whenDurable(this.ctx.db);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (c.api_key) headers.authorization = `Bearer ${c.api_key}`;
    const res = await undici().request(c.url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ to: m.to, text: `${m.subject}\n${m.text}` }),
      headersTimeout: c.timeout_ms,
      bodyTimeout: c.timeout_ms,
    });
    await res.body.dump();
    if (res.statusCode < 200 || res.statusCode >= 300) throw new Error(`messaging gateway answered ${res.statusCode}`);
  }

  close(): void {
    this.transport?.close();
  }
}

const deliveries = new WeakMap<AppContext, ContractDelivery>();
export function contractDelivery(ctx: AppContext): ContractDelivery {
  let d = deliveries.get(ctx);
  if (!d) deliveries.set(ctx, (d = new ContractDelivery(ctx)));
  return d;
}
