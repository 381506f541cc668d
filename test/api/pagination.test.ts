import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { AccountsService } from '../../src/accounts/service.js';

let s: TestServer;
let children: string[];
beforeAll(async () => {
  s = await startTestServer();
  const accounts = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
  children = [];
  for (let i = 0; i < 7; i++) children.push(accounts.createAccount({ name: `Child ${i}`, parentId: s.installation.account_id }).account.id);
});
afterAll(() => s.stop());

function links(header: string): Record<string, URL> {
  const out: Record<string, URL> = {};
  for (const part of header.split(',')) {
    const m = /<([^>]+)>;\s*rel="(\w+)"/.exec(part.trim());
    if (m) out[m[2]] = new URL(m[1]);
  }
  return out;
}

describe('list pagination headers (gaps.md)', () => {
  it('gives Link, Current-Page, Page-Items, Total-Pages and Total-Count, newest first', async () => {
    // A filter the list does not know is refused, never ignored (issue 14 part 7).
    const unknown = await s.api('GET', '/connected_accounts?page=2&items=3&extra=kept', { key: s.installation.keys.live });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ code: 'unknown_parameter', errors: { extra: ['is not a known parameter'] } });
    const r = await s.api('GET', '/connected_accounts?page=2&items=3', { key: s.installation.keys.live });
    expect(r.status).toBe(200);
    expect(r.body).toHaveLength(3);
    expect(r.headers['current-page']).toBe('2');
    expect(r.headers['page-items']).toBe('3');
    expect(r.headers['total-pages']).toBe('3');
    expect(r.headers['total-count']).toBe('7');
    const l = links(r.headers.link as string);
    expect(Object.keys(l).sort()).toEqual(['first', 'last', 'next', 'prev']);
    expect(l.next.searchParams.get('page')).toBe('3');
    expect(l.prev.searchParams.get('page')).toBe('1');
    expect(l.last.searchParams.get('page')).toBe('3');
    expect(l.next.searchParams.get('items')).toBe('3');
    expect(l.next.origin).toBe(s.url);
    const first = await s.api('GET', '/connected_accounts?items=100', { key: s.installation.keys.live });
    expect(first.body.map((a: { id: string }) => a.id)).toEqual([...children].reverse());
  });

  it('GET /bookings serves at most 100 a page, refuses a size parameter or filter it does not know by name, and every link it writes answers 200 and stays bounded (issue 14, 15)', async () => {
    const r = await s.api('GET', '/bookings?per_page=100');
    expect(r.status).toBe(200);
    expect(Number(r.headers['page-items'])).toBeLessThanOrEqual(100);
    const header = r.headers.link as string;
    expect(header.length).toBeLessThanOrEqual(4096);
    for (const u of Object.values(links(header))) {
      const again = await s.api('GET', u.pathname.replace(/^\/api/, '') + u.search);
      expect(again.status).toBe(200);
    }
    // `items` is the other lists' size parameter: here it is unknown, and said so rather than ignored.
    for (const q of [
      'items=5000',
      'per_page=100&items=5000',
      `per_page=100&junk=${'x'.repeat(5000)}&${Array.from({ length: 50 }, (_, i) => `k${i}=v`).join('&')}`,
    ]) {
      const refused = await s.api('GET', `/bookings?${q}`);
      expect(refused.status).toBe(400);
      expect(refused.body.code).toBe('unknown_parameter');
      expect(JSON.stringify(refused.body).length).toBeLessThan(8192);
    }
    expect((await s.api('GET', '/bookings?per_page=5000')).status).toBe(400);
    expect((await s.api('GET', `/bookings?customer_id=${'c'.repeat(5000)}`)).status).toBe(400);
  });

  it('walking the next links visits every row once', async () => {
    const seen: string[] = [];
    let path: string | undefined = '/connected_accounts?items=2';
    while (path) {
      const r: { body: Array<{ id: string }>; headers: Record<string, unknown> } = await s.api('GET', path, { key: s.installation.keys.live });
      seen.push(...r.body.map((a) => a.id));
      const next: URL | undefined = links(r.headers.link as string).next;
      path = next ? next.pathname.replace(/^\/api/, '') + next.search : undefined;
    }
    expect(seen.sort()).toEqual([...children].sort());
  });

  it('a page past the end is an empty list; bad values are 400 with errors', async () => {
    const past = await s.api('GET', '/connected_accounts?page=9', { key: s.installation.keys.live });
    expect(past.status).toBe(200);
    expect(past.body).toEqual([]);
    expect(links(past.headers.link as string).next).toBeUndefined();
    for (const q of ['page=0', 'items=0', 'items=101', 'page=abc', 'items=2.5']) {
      const bad = await s.api('GET', `/connected_accounts?${q}`, { key: s.installation.keys.live });
      expect(bad.status, q).toBe(400);
      expect(bad.body.code).toBe('validation_error');
    }
  });
});

describe('deep pages (decision 0310)', () => {
  it('a walk by the Link header through a 2,500-product list gives each row once, in order, also across a write', async () => {
    const db = s.daemon.ctx.db;
    const sandbox = s.installation.sandbox_id;
    db.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2500)
       INSERT INTO products (id, account_id, live_mode, name, tax_category, status, created_at, updated_at)
       SELECT 'prod_deep' || i, ?, 0, 'Deep ' || i, 'good', 'active', strftime('%Y-%m-%dT%H:%M:%fZ', '2025-01-01', '+' || (i / 2) || ' seconds'),
         '2025-01-01T00:00:00.000Z' FROM n`,
    ).run(sandbox);
    const expected = () =>
      (db.prepare('SELECT id FROM products WHERE account_id = ? AND live_mode = 0 ORDER BY created_at DESC, id DESC').all(sandbox) as { id: string }[]).map(
        (r) => r.id,
      );
    let want = expected();
    expect(want.length).toBeGreaterThanOrEqual(2500);
    let path = '/products?items=50&page=21';
    let page = 21;
    while (path) {
      const r = await s.api('GET', path);
      expect(r.status).toBe(200);
      expect(r.body.map((p: { id: string }) => p.id)).toEqual(want.slice((page - 1) * 50, page * 50));
      expect(r.headers['total-count']).toBe(String(want.length));
      if (page === 30) {
        // A product made mid-walk shifts every later page by one; the next page must show it.
        const made = await s.api('POST', '/products', {
          body: { product: { name: 'Mid-walk', prices_attributes: [{ amount_in_cents: 100, currency: 'GTQ' }] } },
        });
        expect(made.status).toBe(201);
        want = expected();
      }
      const next = links(r.headers.link as string).next;
      path = next ? `${next.pathname.replace(/^\/api/, '')}${next.search}` : '';
      page += 1;
    }
    expect(page - 1).toBe(Math.ceil(want.length / 50));
    // The last page, reached by its link from the first.
    const first = await s.api('GET', '/products?items=50');
    const last = links(first.headers.link as string).last;
    const end = await s.api('GET', `${last.pathname.replace(/^\/api/, '')}${last.search}`);
    const n = Number(last.searchParams.get('page'));
    expect(end.body.map((p: { id: string }) => p.id)).toEqual(want.slice((n - 1) * 50, n * 50));
  });
});
