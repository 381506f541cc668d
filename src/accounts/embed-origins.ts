import type { Account } from './service.js';

/**
 * The account setting `embed_origins`: the shops' origins that may frame a live checkout page with
 * `embed=true` (the embedded checkout, docs/compatibility.md). A sandbox's page may be framed by any
 * origin, so a shop can try the library before it asks for its origin to be allowed.
 */
export const EMBED_ORIGINS_SETTING = 'embed_origins';

/** More would be a list nobody reads; a CSP header with hundreds of origins is no policy. */
export const MAX_EMBED_ORIGINS = 20;

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * One origin as a browser writes it (`https://shop.example`, `https://shop.example:8443`): scheme,
 * host and port only. Plain http is taken only for loopback hosts (a shop developing on its own
 * machine): a shop served over http elsewhere can be impersonated on the way, and with it the
 * messages the page posts to it. Returns the normalised origin or why it is refused.
 */
export function parseEmbedOrigin(value: string): { origin: string } | { error: string } {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return { error: `${value}: not a URL` };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { error: `${value}: only http(s) origins frame a page` };
  if (url.username || url.password || url.search || url.hash || (url.pathname !== '/' && url.pathname !== '')) {
    return { error: `${value}: an origin is scheme, host and port only (no path, query or user)` };
  }
  if (/[*]/.test(url.hostname)) return { error: `${value}: no wildcards; name each origin` };
  if (url.protocol === 'http:' && !LOOPBACK.has(url.hostname)) return { error: `${value}: plain http only for localhost; use https` };
  return { origin: url.origin };
}

/** A comma-separated list (the CLI's form): every origin checked, duplicates dropped. */
export function parseEmbedOrigins(list: string): { origins: string[] } | { error: string } {
  const origins: string[] = [];
  for (const part of list
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const parsed = parseEmbedOrigin(part);
    if ('error' in parsed) return parsed;
    if (!origins.includes(parsed.origin)) origins.push(parsed.origin);
  }
  if (origins.length > MAX_EMBED_ORIGINS) return { error: `at most ${MAX_EMBED_ORIGINS} origins` };
  return { origins };
}

/**
 * Who may frame this account's checkout pages: `any` in a sandbox, else the live account's list
 * (kept only when every entry still parses, so a hand-edited setting cannot widen the policy).
 */
export function embedOriginsOf(account: Pick<Account, 'live_mode' | 'settings'>): { any: true } | { any: false; origins: string[] } {
  if (!account.live_mode) return { any: true };
  const raw = account.settings[EMBED_ORIGINS_SETTING];
  if (!Array.isArray(raw)) return { any: false, origins: [] };
  const origins = raw.flatMap((o) => {
    const parsed = typeof o === 'string' ? parseEmbedOrigin(o) : { error: 'not a string' };
    return 'origin' in parsed ? [parsed.origin] : [];
  });
  return { any: false, origins };
}
