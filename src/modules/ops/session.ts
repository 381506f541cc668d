import { createHash, randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { tx } from '../../db/database.js';
import { cookie, parseCookies } from '../../api/html.js';
import { deleteExpiredSessions, deleteSession, findSession, insertSession, type SessionRow } from './store.js';

export const SESSION_COOKIE = 'posd_session';
/** Double-submit token for the login form, which has no session yet to hold a CSRF token. */
export const LOGIN_COOKIE = 'posd_login';

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const token = () => randomBytes(32).toString('base64url');

export function currentSession(ctx: AppContext, req: FastifyRequest): (SessionRow & { manager_name: string }) | undefined {
  const value = parseCookies(req.headers.cookie)[SESSION_COOKIE];
  if (!value) return undefined;
  return findSession(ctx.db, sha256(value), isoTime(ctx.clock.now()));
}

/** Starts a manager's session after their correct password: a fresh cookie value (never reused) and CSRF token. */
export function startSession(ctx: AppContext, reply: FastifyReply, managerId: string): void {
  const value = token();
  const now = ctx.clock.now();
  const seconds = ctx.config.ops.session_hours * 3600;
  tx(ctx.db, () => {
    deleteExpiredSessions(ctx.db, isoTime(now));
    insertSession(ctx.db, {
      token_hash: sha256(value),
      manager_id: managerId,
      csrf: token(),
      created_at: isoTime(now),
      expires_at: isoTime(now + seconds * 1000),
    });
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
