import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Issue 14 part 4: `custom_account_id` on `POST /checkouts` (hosted sections 3.1 and 14) makes the
 * checkout the connected child's, so the charge lands on the child's ledger and not the platform's.
 * Before this the field was refused. Real daemon over HTTP; the ledger rows are read from its database.
 */

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

const ledger = (sourceId: string) =>
  s.daemon.ctx.db.prepare('SELECT account_id, type, amount_in_cents FROM balance_transactions WHERE source_id = ? ORDER BY seq').all(sourceId) as Array<{
    account_id: string;
    type: string;
    amount_in_cents: number;
  }>;

describe('custom_account_id', () => {
  it('puts the checkout, its payment and the ledger charge on the connected child, by its sandbox or live id', async () => {
    const platform = s.installation.sandbox_id;
    const made = await s.api('POST', '/connected_accounts', { body: { email: 'tienda@example.com', name: 'Tienda hija' } });
    expect(made.status).toBe(201);
    const child = made.body.id as string;
    const childLive = (s.daemon.ctx.db.prepare('SELECT sandbox_of FROM accounts WHERE id = ?').get(child) as { sandbox_of: string }).sandbox_of;

    for (const named of [child, childLive]) {
      const ch = await s.api('POST', '/checkouts', {
        body: { checkout: { custom_account_id: named, items: [{ name: 'Servicio', amount_in_cents: 10000, currency: 'GTQ' }], metadata: { order: named } } },
      });
      expect(ch.status, JSON.stringify(ch.body)).toBe(201);
      expect(ch.body.account_id).toBe(child);
      // The platform acts inside its child with X-ACCOUNT-ID (spec 5 rule 2) to pay it in the sandbox.
      const paid = await s.api('POST', `/test_helpers/checkouts/${ch.body.id}/pay`, {
        headers: { 'x-account-id': child },
        body: { method: 'card', outcome: 'succeeded' },
      });
      expect(paid.status, JSON.stringify(paid.body)).toBe(200);
      const rows = ledger(paid.body.payment_intent_id);
      expect(rows).toEqual([{ account_id: child, type: 'charge', amount_in_cents: 10000 }]);
      expect(rows.some((r) => r.account_id === platform)).toBe(false);
      const pa = await s.api('GET', `/payment_intents/${paid.body.payment_intent_id}`, { headers: { 'x-account-id': child } });
      expect(pa.status).toBe(200);
    }
    // The platform's own ledger took nothing.
    const platformRows = s.daemon.ctx.db.prepare('SELECT count(*) AS n FROM balance_transactions WHERE account_id = ?').get(platform) as { n: number };
    expect(platformRows.n).toBe(0);
  });

  it('refuses an account that is not a direct child, rather than charging the platform', async () => {
    for (const id of ['ac_nothere1', s.installation.account_id]) {
      const r = await s.api('POST', '/checkouts', { body: { custom_account_id: id, items: [{ amount_in_cents: 10000 }] } });
      expect(r.status, id).toBe(400);
      expect(r.body.errors).toHaveProperty('custom_account_id');
    }
    // Through X-ACCOUNT-ID the request already acts inside a child; naming another hop is refused.
    const child = (await s.api('POST', '/connected_accounts', { body: { email: 'otra@example.com' } })).body.id;
    const sibling = (await s.api('POST', '/connected_accounts', { body: { email: 'tercera@example.com' } })).body.id;
    const hop = await s.api('POST', '/checkouts', {
      headers: { 'x-account-id': child },
      body: { custom_account_id: sibling, items: [{ amount_in_cents: 10000 }] },
    });
    expect(hop.status).toBe(400);
    // Naming the acting account itself is the same as not naming one.
    const self = await s.api('POST', '/checkouts', { body: { custom_account_id: s.installation.sandbox_id, items: [{ amount_in_cents: 10000 }] } });
    expect(self.status).toBe(201);
    expect(self.body.account_id).toBe(s.installation.sandbox_id);
  });
});
