import type { TestServer } from '../helpers/server.js';

/** Rows of a table, straight from SQLite: tests assert what was written, not what was answered. */
export function rows<T = any>(s: TestServer, sql: string, ...args: unknown[]): T[] {
  return s.daemon.ctx.db.prepare(sql).all(...args) as T[];
}

export function count(s: TestServer, table: string): number {
  return (s.daemon.ctx.db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
}

/** A checkout of one line, paid through the sandbox helper; returns the checkout and the settle answer. */
export async function paidCheckout(
  s: TestServer,
  amount = 10_000,
  opts: { key?: string; headers?: Record<string, string>; outcome?: 'succeeded' | 'failed'; currency?: string } = {},
) {
  const co = await s.api('POST', '/checkouts', {
    key: opts.key,
    headers: opts.headers,
    body: { items: [{ name: 'Coffee', amount_in_cents: amount, currency: opts.currency ?? 'GTQ' }] },
  });
  if (co.status !== 201) throw new Error(`checkout: ${co.status} ${co.text}`);
  const pay = await s.api('POST', `/test_helpers/checkouts/${co.body.id}/pay`, {
    key: opts.key,
    headers: opts.headers,
    body: { method: 'card', outcome: opts.outcome ?? 'succeeded' },
  });
  if (pay.status !== 200) throw new Error(`pay: ${pay.status} ${pay.text}`);
  return { checkout: co.body, pay: pay.body };
}
