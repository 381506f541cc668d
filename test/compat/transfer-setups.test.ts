import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Issue 14 part 4: `transfer_setups` on `POST /checkouts` (hosted section 3.1) splits the payment
 * once it succeeds: each share is a transfer from the paid account to its recipient (no recipient:
 * the platform), as ledger `transfer` rows and `transfer.sent`/`transfer.received` events. Real
 * daemon over HTTP; ledger rows and events read from its database.
 */

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

type Row = { account_id: string; type: string; amount_in_cents: number; source_id: string };
const ledgerOf = (accountId: string) =>
  s.daemon.ctx.db
    .prepare('SELECT account_id, type, amount_in_cents, source_id FROM balance_transactions WHERE account_id = ? ORDER BY seq')
    .all(accountId) as Row[];
const eventsOf = (objectId: string) =>
  s.daemon.ctx.db.prepare('SELECT type, account_id FROM events WHERE object_id = ? ORDER BY type').all(objectId) as Array<{ type: string; account_id: string }>;

async function child(email: string): Promise<string> {
  const made = await s.api('POST', '/connected_accounts', { body: { email } });
  expect(made.status).toBe(201);
  return made.body.id;
}

describe('transfer_setups', () => {
  it('after payment, moves each share from the paid child to the platform (no recipient) and to a named account', async () => {
    const platform = s.installation.sandbox_id;
    const seller = await child('vendedor@example.com');
    const partner = await child('socio@example.com');
    const ch = await s.api('POST', '/checkouts', {
      body: {
        checkout: {
          custom_account_id: seller,
          items: [{ name: 'Tour', amount_in_cents: 10000, currency: 'GTQ' }],
          transfer_setups: [{ amount_in_cents: 2000 }, { amount_in_cents: '1000', recipient_id: partner }],
        },
      },
    });
    expect(ch.status, JSON.stringify(ch.body)).toBe(201);
    expect(ch.body.transfer_setups).toEqual([
      {
        id: expect.stringMatching(/^ts_/),
        status: 'pending',
        amount_in_cents: 2000,
        currency: 'GTQ',
        recipient_id: platform,
        transfer_id: null,
        failure_reason: null,
      },
      {
        id: expect.stringMatching(/^ts_/),
        status: 'pending',
        amount_in_cents: 1000,
        currency: 'GTQ',
        recipient_id: partner,
        transfer_id: null,
        failure_reason: null,
      },
    ]);
    // Nothing moves before the payment.
    expect(ledgerOf(platform)).toEqual([]);

    const paid = await s.api('POST', `/test_helpers/checkouts/${ch.body.id}/pay`, {
      headers: { 'x-account-id': seller },
      body: { method: 'card', outcome: 'succeeded' },
    });
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    const after = await s.api('GET', `/checkouts/${ch.body.id}`, { headers: { 'x-account-id': seller } });
    const [toPlatform, toPartner] = after.body.transfer_setups;
    expect(toPlatform).toMatchObject({ status: 'completed', transfer_id: expect.stringMatching(/^tr_/) });
    expect(toPartner).toMatchObject({ status: 'completed', transfer_id: expect.stringMatching(/^tr_/) });

    expect(ledgerOf(seller).map((r) => [r.type, r.amount_in_cents, r.source_id])).toEqual([
      ['charge', 10000, paid.body.payment_intent_id],
      ['transfer', -2000, toPlatform.transfer_id],
      ['transfer', -1000, toPartner.transfer_id],
    ]);
    expect(ledgerOf(platform).map((r) => [r.type, r.amount_in_cents, r.source_id])).toEqual([['transfer', 2000, toPlatform.transfer_id]]);
    expect(ledgerOf(partner).map((r) => [r.type, r.amount_in_cents, r.source_id])).toEqual([['transfer', 1000, toPartner.transfer_id]]);
    expect(eventsOf(toPlatform.transfer_id)).toEqual([
      { type: 'transfer.received', account_id: platform },
      { type: 'transfer.sent', account_id: seller },
    ]);
    const transfer = await s.api('GET', `/transfers/${toPartner.transfer_id}`, { headers: { 'x-account-id': seller } });
    expect(transfer.body).toMatchObject({ amount_in_cents: 1000, currency: 'GTQ' });
  });

  it('a share the balance cannot cover fails on its own (the payment stands); bad splits are a 400', async () => {
    const seller = await child('justo@example.com');
    const ch = await s.api('POST', '/checkouts', {
      body: { custom_account_id: seller, items: [{ amount_in_cents: 10000 }], transfer_setups: [{ amount_in_cents: 10000 }] },
    });
    expect(ch.status).toBe(201);
    const paid = await s.api('POST', `/test_helpers/checkouts/${ch.body.id}/pay`, {
      headers: { 'x-account-id': seller },
      body: { method: 'card', outcome: 'succeeded' },
    });
    expect(paid.status).toBe(200);
    const after = await s.api('GET', `/checkouts/${ch.body.id}`, { headers: { 'x-account-id': seller } });
    expect(after.body.status).toBe('paid');
    // The fee came off the charge, so the whole total is more than the balance holds.
    expect(after.body.transfer_setups[0]).toMatchObject({ status: 'failed', transfer_id: null, failure_reason: expect.stringContaining('insufficient_funds') });
    expect(ledgerOf(seller).map((r) => r.type)).toEqual(['charge']);

    const over = await s.api('POST', '/checkouts', {
      body: {
        items: [{ amount_in_cents: 1000 }],
        transfer_setups: [
          { amount_in_cents: 600, recipient_id: seller },
          { amount_in_cents: 600, recipient_id: seller },
        ],
      },
    });
    expect(over.status).toBe(400);
    expect(over.body.errors).toHaveProperty('transfer_setups');
    const nobody = await s.api('POST', '/checkouts', {
      body: { items: [{ amount_in_cents: 1000 }], transfer_setups: [{ amount_in_cents: 100, recipient_id: 'ac_nothere1' }] },
    });
    expect(nobody.status).toBe(400);
    expect(nobody.body.errors).toHaveProperty(['transfer_setups.0.recipient_id']);
    // The platform's own checkout has no platform above it to default to.
    const noPlatform = await s.api('POST', '/checkouts', { body: { items: [{ amount_in_cents: 1000 }], transfer_setups: [{ amount_in_cents: 100 }] } });
    expect(noPlatform.status).toBe(400);
  });
});
