import { timingSafeEqual } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import type { AppContext } from '../context.js';
import { tlsEnabled } from '../config.js';
import type { ApiApp } from './module.js';

/**
 * What the pages outside `/api` share (the manager's status page, the buyer's checkout page): plain
 * server-rendered HTML with no scripts, forms posted urlencoded, cookies set by hand.
 */

export function esc(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/**
 * Headers for every page: never cached, never framed, nothing loaded from elsewhere. `formTargets`
 * are the other origins a form may end on: CSP's form-action also governs the redirect a form's
 * answer makes, so a page whose forms end on a shop's success_url must name the shop.
 */
export function sendHtml(
  reply: FastifyReply,
  status: number,
  body: string,
  opts: { formTargets?: string[]; referrer?: 'same-origin' | 'no-referrer' } = {},
): FastifyReply {
  const formAction = ["'self'", ...new Set(opts.formTargets ?? [])].join(' ');
  return reply
    .code(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('x-frame-options', 'DENY')
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', opts.referrer ?? 'same-origin')
    .header('content-security-policy', `default-src 'none'; style-src 'self'; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`)
    .send(body);
}

export function seeOther(reply: FastifyReply, to: string): FastifyReply {
  return reply.code(303).header('location', to).header('cache-control', 'no-store').send('');
}

/** HTML forms post urlencoded bodies: parsed in the page's own plugin scope only (`/api` reads JSON). */
export function parseForms(scope: ApiApp): void {
  scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(String(body))));
  });
}

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
 * Secure is set when the page is served over TLS (`tls.mode`, src/config.ts) or published over https
 * (`http.public_url` starting with https://, i.e. behind a TLS proxy): a browser never sends a Secure
 * cookie over plain http, so setting it on a plain-http box would make the page's forms unusable.
 */
export function cookie(ctx: Pick<AppContext, 'config'>, name: string, value: string, maxAgeSeconds: number, path = '/'): string {
  const secure = tlsEnabled(ctx.config) || ctx.config.http.public_url.startsWith('https://') ? '; Secure' : '';
  return `${name}=${encodeURIComponent(value)}; Path=${path}; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Strict${secure}`;
}

export function sameToken(a: string | undefined, b: string | undefined): boolean {
  if (!a || !b) return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
