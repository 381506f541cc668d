import type { TestServer } from '../helpers/server.js';

export async function ok<T = any>(p: Promise<{ status: number; body: T; text: string }>, status = 201): Promise<T> {
  const r = await p;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${r.text}`);
  return r.body;
}

export function rows<T = any>(s: TestServer, sql: string, ...args: unknown[]): T[] {
  return s.daemon.ctx.db.prepare(sql).all(...args) as T[];
}

/** A salon: a haircut (60 min), a colour with 30 min processing, a stylist and a chair. */
export async function salon(s: TestServer, opts: { key?: string } = {}) {
  const key = opts.key;
  const cut = await ok(s.api('POST', '/services', { key, body: { kind: 'appointment', name: 'Haircut', duration_minutes: 60, price_in_cents: 15_000 } }));
  const colour = await ok(
    s.api('POST', '/services', {
      key,
      body: {
        kind: 'appointment',
        name: 'Colour',
        duration_minutes: 30,
        processing_minutes: 30,
        final_minutes: 15,
        price_in_cents: 40_000,
        payment_policy: 'deposit',
        deposit_in_cents: 10_000,
      },
    }),
  );
  const stylist = await ok(s.api('POST', '/staff_members', { key, body: { name: 'Ana' } }));
  const chair = await ok(s.api('POST', '/resources', { key, body: { name: 'Chair 1', kind: 'chair' } }));
  return { cut, colour, stylist, chair };
}

export const customer = { name: 'María López', email: 'maria@example.com', phone: '+50255550000' };

/** Pays a checkout through the sandbox test helper (money area). */
export async function pay(s: TestServer, checkoutId: string, key?: string) {
  return ok(s.api('POST', `/test_helpers/checkouts/${checkoutId}/pay`, { key, body: { method: 'card', outcome: 'succeeded' } }), 200);
}
