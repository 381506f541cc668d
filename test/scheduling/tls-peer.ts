import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';

export interface CalendarPeer {
  url: string;
  ca: string;
  /** What the peer answers next: a status and a body. */
  respond: { status: number; body: string };
  hits: number;
  close(): Promise<void>;
}

/**
 * A real https server with a certificate made now by openssl, self-signed for 127.0.0.1: the test
 * trusts it by handing its certificate to the fetcher as the CA, as a store would for a private
 * channel manager. Nothing else trusts it.
 */
export async function startCalendarPeer(): Promise<CalendarPeer> {
  const dir = mkdtempSync(join(tmpdir(), 'posd-tls-'));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
    ],
    { stdio: 'ignore' },
  );
  const key = readFileSync(join(dir, 'key.pem'));
  const cert = readFileSync(join(dir, 'cert.pem'), 'utf8');
  rmSync(dir, { recursive: true, force: true });
  const peer: CalendarPeer = { url: '', ca: cert, respond: { status: 200, body: '' }, hits: 0, close: async () => undefined };
  const server: Server = createServer({ key, cert }, (_req, res) => {
    peer.hits++;
    res.writeHead(peer.respond.status, { 'content-type': 'text/calendar; charset=utf-8' });
    res.end(peer.respond.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  peer.url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  peer.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return peer;
}
