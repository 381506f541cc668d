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
 * `frameAncestors` is only for the embedded checkout (docs/compatibility.md, "The embedded
 * checkout"): the origins that may frame the page (`*`: any), and with it the page's own scripts
 * (`script-src 'self'`, never inline) that tell the framing shop the outcome. Without it the page is
 * never framed (X-Frame-Options DENY for browsers that predate frame-ancestors).
 */
export function sendHtml(
  reply: FastifyReply,
  status: number,
  body: string,
  opts: { formTargets?: string[]; referrer?: 'same-origin' | 'no-referrer'; frameAncestors?: string[] } = {},
): FastifyReply {
  const formAction = ["'self'", ...new Set(opts.formTargets ?? [])].join(' ');
  const framed = opts.frameAncestors && opts.frameAncestors.length > 0;
  const ancestors = framed ? [...new Set(opts.frameAncestors)].join(' ') : "'none'";
  const scripts = framed ? " script-src 'self';" : '';
  reply
    .code(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', opts.referrer ?? 'same-origin')
    .header(
      'content-security-policy',
      `default-src 'none'; style-src 'self';${scripts} form-action ${formAction}; frame-ancestors ${ancestors}; base-uri 'none'`,
    );
  if (!framed) reply.header('x-frame-options', 'DENY');
  return reply.send(body);
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
export function cookie(
  ctx: Pick<AppContext, 'config'>,
  name: string,
  value: string,
  maxAgeSeconds: number,
  path = '/',
  opts: { framed?: boolean } = {},
): string {
  // A page framed by another site (the embedded checkout) gets its cookie only as a third party:
  // SameSite=None, which browsers take only with Secure (they accept that on https and on loopback
  // http), partitioned by the framing site (CHIPS) so it is no cross-site tracker.
  if (opts.framed) return `${name}=${encodeURIComponent(value)}; Path=${path}; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=None; Secure; Partitioned`;
  const secure = tlsEnabled(ctx.config) || ctx.config.http.public_url.startsWith('https://') ? '; Secure' : '';
  return `${name}=${encodeURIComponent(value)}; Path=${path}; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Strict${secure}`;
}

export function sameToken(a: string | undefined, b: string | undefined): boolean {
  if (!a || !b) return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
