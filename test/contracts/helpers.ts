import { SMTPServer } from 'smtp-server';
import type { AddressInfo } from 'node:net';

/** The text drawn on a PDF's pages (uncompressed content streams, WinAnsi text as pdfkit writes it). */
export function pdfText(pdf: Buffer): string {
  const src = pdf.toString('latin1');
  const out: string[] = [];
  for (const m of src.matchAll(/\[((?:<[0-9a-fA-F]*>|[^\]])*)\]\s*TJ|<([0-9a-fA-F]*)>\s*Tj/g)) {
    const hexes = m[1] !== undefined ? [...m[1].matchAll(/<([0-9a-fA-F]*)>/g)].map((h) => h[1]) : [m[2]];
    out.push(hexes.map((h) => Buffer.from(h, 'hex').toString('latin1')).join(''));
  }
  return out.join('\n');
}

export const squash = (s: string) => s.replace(/\s+/g, ' ').trim();

export interface Mailbox {
  port: number;
  messages: Array<{ to: string[]; raw: string }>;
  next(): Promise<{ to: string[]; raw: string }>;
  close(): Promise<void>;
}

/** A real SMTP peer (smtp-server) on port 0 that keeps what it receives. */
export async function startMailbox(): Promise<Mailbox> {
  const messages: Mailbox['messages'] = [];
  const waiters: Array<(m: Mailbox['messages'][number]) => void> = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, cb) {
      let raw = '';
      stream.setEncoding('utf8');
      stream.on('data', (c: string) => (raw += c));
      stream.on('end', () => {
        const m = { to: session.envelope.rcptTo.map((r) => r.address), raw };
        messages.push(m);
        waiters.shift()?.(m);
        cb();
      });
    },
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.server.address() as AddressInfo).port;
  let read = 0;
  return {
    port,
    messages,
    next: () => (read < messages.length ? Promise.resolve(messages[read++]) : new Promise((r) => waiters.push((m) => (read++, r(m))))),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** The decoded text of a raw message (quoted-printable bodies as nodemailer writes them). */
export function mailText(raw: string): string {
  const body = raw
    .split(/\r?\n\r?\n/)
    .slice(1)
    .join('\n\n');
  return Buffer.from(
    body.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_, h) => String.fromCharCode(parseInt(h, 16))),
    'latin1',
  ).toString('utf8');
}
