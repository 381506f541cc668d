import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { AccountsService } from '../../src/accounts/service.js';

let s: TestServer;
let recipient: { id: string; key: string };

beforeAll(async () => {
  s = await startTestServer();
  const accounts = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
  const r = accounts.createAccount({ name: 'Recipient', organizationId: s.installation.organization_id });
  recipient = { id: r.sandbox.id, key: accounts.createKey({ accountId: r.sandbox.id, environment: 'test' }).key };
});
afterAll(() => s.stop());

async function gtq(key?: string): Promise<number> {
  const res = await s.api('GET', '/balances', { key });
  return res.body.find((b: { currency: string }) => b.currency === 'GTQ').available_in_cents;
}

describe('a sale, a transfer and a withdrawal, through the API only', () => {
  it('moves the balance exactly and keeps the ledger chain', async () => {
    const co = await s.api('POST', '/checkouts', { body: { items: [{ name: 'Oil', amount_in_cents: 10_000, quantity: 1 }] } });
    expect(co.status).toBe(201);
    const pay = await s.api('POST', `/test_helpers/checkouts/${co.body.id}/pay`, { body: { method: 'card', outcome: 'succeeded' } });
    expect(pay.body.status).toBe('succeeded');
    const earned = await gtq();
    expect(earned).toBeGreaterThan(0);
    expect(earned).toBeLessThan(10_000);

    const sent = await s.api('POST', '/transfers', { body: { amount_in_cents: 1550, currency: 'GTQ', recipient_id: recipient.id, note: 'Share' } });
    expect(sent.status).toBe(201);
    expect(await gtq()).toBe(earned - 1550);
    expect(await gtq(recipient.key)).toBe(1550);
    const rtx = await s.api('GET', `/balance_transactions/${sent.body.balance_transaction_id}`);
    expect(rtx.body).toMatchObject({ type: 'transfer', amount_in_cents: -1550, balance_after_in_cents: earned - 1550, source_id: sent.body.id });

    const bank = await s.api('POST', '/bank_accounts', {
      body: { holder_name: 'Tienda', number: '44445555', bank_name: 'BAM', currency: 'GTQ', account_type: 'ahorro', is_preferred: true },
    });
    const rest = earned - 1550;
    const wd = await s.api('POST', '/withdrawals', { body: { amount_in_cents: rest, currency: 'GTQ', bank_account_id: bank.body.id } });
    expect(wd.status).toBe(201);
    expect(await gtq()).toBe(0);
    const more = await s.api('POST', '/withdrawals', { body: { amount_in_cents: 1, currency: 'GTQ', bank_account_id: bank.body.id } });
    expect([more.status, more.body.code]).toEqual([422, 'insufficient_funds']);
    await s.api('POST', `/test_helpers/withdrawals/${wd.body.id}/advance`, { body: { outcome: 'failed' } });
    expect(await gtq()).toBe(rest);

    const rows = (await s.api('GET', '/balance_transactions?currency=GTQ&items=100')).body as Array<Record<string, number>>;
    expect(rows.map((r) => r.type)).toEqual(['payout', 'payout', 'transfer', 'charge']);
    let running = 0;
    for (const r of [...rows].reverse()) {
      expect(r.amount_in_cents + r.fee_in_cents).toBe(r.net_amount_in_cents);
      running += r.net_amount_in_cents;
      expect(r.balance_after_in_cents).toBe(running);
    }
    expect(running).toBe(rest);

    const activities = await s.api('GET', '/activities?type=transfer');
    expect(activities.body).toEqual([
      expect.objectContaining({ type: 'transfer.sent', object_id: sent.body.id, amount_in_cents: 1550, description: 'Transfer sent: Share' }),
    ]);
    const theirs = await s.api('GET', '/activities', { key: recipient.key });
    expect(theirs.body.map((a: { type: string }) => a.type)).toEqual(['transfer.received']);
  });
});
