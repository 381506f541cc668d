import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { tx } from '../../db/database.js';
import { deleteExpiredSessions, deleteSession, findSession, insertSession, type SessionRow } from './store.js';

export const SESSION_COOKIE = 'posd_session';
/** Double-submit token for the login form, which has no session yet to hold a CSRF token. */
export const LOGIN_COOKIE = 'posd_login';

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const token = () => randomBytes(32).toString('base64url');

export function parseCookies(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (header ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i < 1) continue;
    const name = part.slice(0, i).trim();
    try {
      out[name] = decodeURIComponent(part.slice(i + 1).trim());
    } catch {
      /* a malformed cookie is ignored like a missing one */
    }
  }
  return out;
}

/**
 * Secure is set when the page is published over https (`http.public_url` starting with https://,
 * i.e. behind a TLS proxy): a browser never sends a Secure cookie over plain http, so setting it on
 * a plain-http box would make logging in impossible.
 */
export function cookie(ctx: AppContext, name: string, value: string, maxAgeSeconds: number): string {
  const secure = ctx.config.http.public_url.startsWith('https://') ? '; Secure' : '';
  return `${name}=${encodeURIComponent(value)}; Path=/; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Strict${secure}`;
}

export function sameToken(a: string | undefined, b: string | undefined): boolean {
  if (!a || !b) return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export function currentSession(ctx: AppContext, req: FastifyRequest): SessionRow | undefined {
  const value = parseCookies(req.headers.cookie)[SESSION_COOKIE];
  if (!value) return undefined;
  return findSession(ctx.db, sha256(value), isoTime(ctx.clock.now()));
}

/** Starts a session after a correct password: a fresh cookie value (never reused) and CSRF token. */
export function startSession(ctx: AppContext, reply: FastifyReply): void {
  const value = token();
  const now = ctx.clock.now();
  const seconds = ctx.config.ops.session_hours * 3600;
  tx(ctx.db, () => {
    deleteExpiredSessions(ctx.db, isoTime(now));
    insertSession(ctx.db, { token_hash: sha256(value), csrf: token(), created_at: isoTime(now), expires_at: isoTime(now + seconds * 1000) });
  });
  reply.header('set-cookie', [cookie(ctx, SESSION_COOKIE, value, seconds), cookie(ctx, LOGIN_COOKIE, '', 0)]);
}

export function endSession(ctx: AppContext, req: FastifyRequest, reply: FastifyReply): void {
  const value = parseCookies(req.headers.cookie)[SESSION_COOKIE];
  if (value) tx(ctx.db, () => deleteSession(ctx.db, sha256(value)));
  reply.header('set-cookie', cookie(ctx, SESSION_COOKIE, '', 0));
}

export function newLoginToken(): string {
  return token();
}
