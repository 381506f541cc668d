import { invalid } from '../errors.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';

/** `page` from 1 and `items` 1 to 100 (gaps.md); a page past the end is an empty list, not an error. */
// `page` is bounded so its offset stays an integer SQLite takes (a 20-digit page was a 500).
const MAX_PAGE = 10_000_000;

export const PageQuery = {
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE, default: 1 })),
  items: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 10 })),
};

/** Bookings name the size `per_page` (spec 4.5), default 25. */
export const PerPageQuery = {
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE, default: 1 })),
  per_page: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 25 })),
};

const MAX_ECHOED_QUERY = 1024;

export interface Page {
  page: number;
  size: number;
  limit: number;
  offset: number;
}

/** gaps.md: no list serves more than 100 rows a page, whatever the route's schema lets through. */
export const MAX_PAGE_SIZE = 100;

/**
 * A route reads only its own size parameter: `GET /bookings?items=5000` once served 5000 rows,
 * since `items` was not in that route's schema and so never validated. Only what a route's schema
 * validated is a number: a raw `items=abc` handed to SQLite was a 500.
 */
export function pageOf(query: { page?: unknown; items?: unknown; per_page?: unknown }, defaultSize = 10, sizeParam: 'items' | 'per_page' = 'items'): Page {
  const page = typeof query.page === 'number' ? query.page : 1;
  const asked = query[sizeParam];
  const size = Math.min(MAX_PAGE_SIZE, typeof asked === 'number' && Number.isInteger(asked) && asked >= 1 ? asked : defaultSize);
  return { page, size, limit: size, offset: (page - 1) * size };
}

/** A Link header longer than this is left out rather than sent: proxies cut long headers. */
const MAX_LINK_LENGTH = 4096;

/**
 * Sets the list headers of gaps.md: `Link` (RFC 8288, absolute URLs keeping the other query
 * parameters), `Current-Page`, `Page-Items`, `Total-Pages`, `Total-Count`.
 */
export function setPageHeaders(req: FastifyRequest, reply: FastifyReply, page: Page, total: number, sizeParam: 'items' | 'per_page' = 'items'): void {
  const totalPages = Math.max(1, Math.ceil(total / page.size));
  const asked = new URL(req.url, `${req.protocol}://${req.headers.host ?? 'localhost'}`);
  // The links keep the caller's other parameters, but bounded: the route's declared ones are bounded
  // by its schema; undeclared ones (which the route ignores) only up to MAX_ECHOED_QUERY characters, or the header
  // would be as long as the caller likes. The other size parameter is dropped: a link carrying it
  // would be refused by the route.
  const declared = (req.routeOptions.schema?.querystring as { properties?: Record<string, unknown> } | undefined)?.properties ?? {};
  const url = new URL(asked.pathname, asked.origin);
  let echoed = 0;
  for (const [k, v] of asked.searchParams) {
    if (k === 'page' || k === 'items' || k === 'per_page') continue;
    if (!(k in declared) && (echoed += k.length + v.length + 2) > MAX_ECHOED_QUERY) continue;
    url.searchParams.append(k, v);
  }
  const link = (n: number, rel: string) => {
    url.searchParams.set('page', String(n));
    url.searchParams.set(sizeParam, String(page.size));
    return `<${url.toString()}>; rel="${rel}"`;
  };
  const links = [link(1, 'first')];
  if (page.page > 1) links.push(link(Math.min(page.page - 1, totalPages), 'prev'));
  if (page.page < totalPages) links.push(link(page.page + 1, 'next'));
  links.push(link(totalPages, 'last'));
  const header = links.join(', ');
  if (header.length <= MAX_LINK_LENGTH) reply.header('Link', header);
  reply.header('Current-Page', String(page.page));
  reply.header('Page-Items', String(page.size));
  reply.header('Total-Pages', String(totalPages));
  reply.header('Total-Count', String(total));
}

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;

/**
 * A list's `from_time`/`until_time` (spec 4.2): a date without a time means the start of that day
 * for `from_time` and its end for `until_time` (UTC); anything else must be an ISO 8601 date-time.
 */
export function parseBound(value: string, field: string, end: boolean): string {
  const text = DATE_ONLY.test(value) ? `${value}T${end ? '23:59:59.999' : '00:00:00.000'}Z` : value;
  const ms = /^\d{4}-\d{2}-\d{2}T/.test(text) ? Date.parse(text) : NaN;
  if (Number.isNaN(ms)) throw invalid({ [field]: 'must be an ISO 8601 date or date-time' });
  return new Date(ms).toISOString();
}
