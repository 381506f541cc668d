import type { Transporter } from 'nodemailer';

/** An SMTP server's settings: `smtpSettings()` of src/config.ts. */
export interface SmtpSettings {
  host: string;
  port: number;
  secure: boolean;
  user: string;
  password: string;
  from: string;
}

export interface Mail {
  to: string;
  subject: string;
  text: string;
  /** Extra headers (a notice's Standard Webhooks id and signature, for a reader that checks them). */
  headers?: Record<string, string>;
}

/**
 * Plain-text e-mail through one configured SMTP server (nodemailer), for any part of posd that tells
 * a person something: webhook notices to integrators, managers' alerts. nodemailer is loaded by the
 * first message, not at start; a failed send throws, so the caller keeps its message for a retry.
 */
export class Mailer {
  private transport: Transporter | undefined;

  constructor(
    private readonly smtp: SmtpSettings,
    private readonly timeoutMs = 10_000,
  ) {}

  /** Whether an SMTP server is configured (an empty host: e-mail off). */
  get enabled(): boolean {
    return this.smtp.host !== '';
  }

  async send(m: Mail): Promise<void> {
    const c = this.smtp;
    if (!c.host) throw new Error('e-mail is not configured (no SMTP host)');
    if (!this.transport) {
      const { default: nodemailer } = await import('nodemailer');
      this.transport = nodemailer.createTransport({
        host: c.host,
        port: c.port,
        secure: c.secure,
        auth: c.user ? { user: c.user, pass: c.password } : undefined,
        connectionTimeout: this.timeoutMs,
        greetingTimeout: this.timeoutMs,
        socketTimeout: this.timeoutMs,
      });
    }
    await this.transport.sendMail({ from: c.from, to: m.to, subject: m.subject, text: m.text, headers: m.headers });
  }

  close(): void {
    this.transport?.close();
    this.transport = undefined;
  }
}
