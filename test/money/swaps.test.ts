import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Receiver } from '../helpers/receiver.js';
import { deliveryWorkerOf } from '../../src/modules/webhooks/index.js';
import { tx } from '../../src/db/database.js';
import { postBalanceTransaction } from '../../src/modules/ledger/service.js';
import { AccountsService } from '../../src/accounts/service.js';
import { swapMachine } from '../../src/modules/swaps/machine.js';
import { nextState } from '../../src/lifecycle.js';

// Issue 15: a stablecoin swap. USD becomes USDC (and back) at par: the source is debited when the
// swap is made (swap.create, pending), the exchange's answer completes it (the USDC credited,
// swap.update completed) or fails it (the source returned). USDC shows in GET /balances once the
// account holds it. Real daemon over HTTP, real receiver, signatures verified.

let s: TestServer;
const r = new Receiver();
let secret: string;

beforeAll(async () => {
  await r.start();
  s = await startTestServer({ config: { webhooks: { allow_cidrs: ['127.0.0.1/32'] } } });
  secret = (await s.api('POST', '/webhook_endpoints', { body: { url: r.url } })).body.signingSecret;
});
afterAll(async () => {
  await s.stop();
  await r.stop();
});

async function deliveredSince(from: number): Promise<Array<Record<string, any>>> {
  await deliveryWorkerOf(s.daemon.ctx)!.runDue();
  return r.received.slice(from).map((x) => new Webhook(secret).verify(x.body, x.headers as Record<string, string>) as Record<string, any>);
}

async function balances(): Promise<Record<string, number>> {
  const res = await s.api('GET', '/balances');
  expect(res.status).toBe(200);
  return Object.fromEntries(res.body.map((b: { currency: string; available_in_cents: number }) => [b.currency, b.available_in_cents]));
}

/** Dollars earned by a sandbox card sale in USD (the fee taken). */
async function earnUsd(cents: number): Promise<void> {
  const ch = await s.api('POST', '/checkouts', { body: { items: [{ name: 'Consulta', amount_in_cents: cents, currency: 'USD', quantity: 1 }] } });
  expect(ch.status, JSON.stringify(ch.body)).toBe(201);
  expect(ch.body.currency).toBe('USD');
  expect((await s.api('POST', `/test_helpers/checkouts/${ch.body.id}/pay`, { body: { method: 'card', outcome: 'succeeded' } })).status).toBe(200);
}

describe('swaps between USD and USDC', () => {
  it('the machine: pending to completed or failed, both final', () => {
    expect(nextState(swapMachine, 'pending', { type: 'COMPLETE' })).toBe('completed');
    expect(nextState(swapMachine, 'pending', { type: 'FAIL' })).toBe('failed');
    expect(nextState(swapMachine, 'completed', { type: 'FAIL' })).toBeNull();
    expect(nextState(swapMachine, 'failed', { type: 'COMPLETE' })).toBeNull();
  });

  it('USD to USDC: debit at once (swap.create), USDC credited on completion (swap.update), USDC in GET /balances', async () => {
    expect(Object.keys(await balances())).not.toContain('USDC');
    await earnUsd(50000);
    const usd = (await balances()).USD;
    expect(usd).toBeGreaterThan(20000);
    await deliveryWorkerOf(s.daemon.ctx)!.runDue();
    const from = r.received.length;

    const made = await s.api('POST', '/swaps', { body: { amount_in_cents: 20000, from_currency: 'USD', to_currency: 'USDC' } });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expect(made.body).toMatchObject({
      id: expect.stringMatching(/^sw_/),
      status: 'pending',
      amount_in_cents: 20000,
      currency: 'USD',
      to_amount_in_cents: 20000,
      to_currency: 'USDC',
      transaction_hash: null,
    });
    expect((await balances()).USD).toBe(usd - 20000);
    const debit = (await s.api('GET', `/balance_transactions/${made.body.balance_transaction_id}`)).body;
    expect(debit).toMatchObject({ type: 'swap', amount_in_cents: -20000, currency: 'USD', source_id: made.body.id, source_type: 'swap' });

    const done = await s.api('POST', `/test_helpers/swaps/${made.body.id}/advance`, { body: { outcome: 'completed' } });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body).toMatchObject({
      status: 'completed',
      transaction_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      to_balance_transaction_id: expect.stringMatching(/^txn_/),
    });
    const after = await balances();
    expect(after.USDC).toBe(20000);
    expect(after.USD).toBe(usd - 20000);
    const credit = (await s.api('GET', `/balance_transactions/${done.body.to_balance_transaction_id}`)).body;
    expect(credit).toMatchObject({ type: 'swap', amount_in_cents: 20000, currency: 'USDC', balance_after_in_cents: 20000, source_id: made.body.id });
    expect((await s.api('GET', '/balance_transactions?currency=USDC')).body.map((t: { id: string }) => t.id)).toEqual([credit.id]);
    expect((await s.api('GET', '/balance_transactions?type=swap')).body.map((t: { id: string }) => t.id)).toEqual([credit.id, debit.id]);

    const events = await deliveredSince(from);
    expect(events.map((e) => e.event_type)).toEqual(['swap.create', 'swap.update']);
    expect(events[0]).toMatchObject({
      id: made.body.id,
      status: 'pending',
      previous_status: null,
      api_version: '2025-01-01',
      transfer: { id: made.body.id, object: 'transfer', kind: 'swap', status: 'pending', amount_in_cents: 20000, currency: 'USD' },
    });
    expect(events[1]).toMatchObject({
      id: made.body.id,
      status: 'completed',
      previous_status: 'pending',
      to_currency: 'USDC',
      transfer: { status: 'completed' },
    });

    // Told again, it answers as it is; told the other outcome, 422 swap_final.
    expect((await s.api('POST', `/test_helpers/swaps/${made.body.id}/advance`, { body: { outcome: 'completed' } })).body.status).toBe('completed');
    const other = await s.api('POST', `/test_helpers/swaps/${made.body.id}/advance`, { body: { outcome: 'failed' } });
    expect(other.status).toBe(422);
    expect(other.body.code).toBe('swap_final');
    expect((await balances()).USDC).toBe(20000);
    expect((await s.api('GET', `/swaps/${made.body.id}`)).body.status).toBe('completed');
    const activities = await s.api('GET', '/activities?type=swap');
    expect(activities.status, JSON.stringify(activities.body)).toBe(200);
    expect(activities.body.map((a: { type: string }) => a.type).sort()).toEqual(['swap.create', 'swap.update']);
    expect((await s.api('GET', '/swaps')).body.map((x: { id: string }) => x.id)).toContain(made.body.id);
  });

  it('USDC back to USD; a failed swap returns the source', async () => {
    const before = await balances();
    const back = (await s.api('POST', '/swaps', { body: { amount_in_cents: 5000, from_currency: 'USDC', to_currency: 'USD' } })).body;
    await s.api('POST', `/test_helpers/swaps/${back.id}/advance`, { body: { outcome: 'completed' } });
    expect(await balances()).toMatchObject({ USDC: before.USDC - 5000, USD: before.USD + 5000 });

    await deliveryWorkerOf(s.daemon.ctx)!.runDue();
    const from = r.received.length;
    const failing = (await s.api('POST', '/swaps', { body: { amount_in_cents: 3000, from_currency: 'USDC', to_currency: 'USD' } })).body;
    expect((await balances()).USDC).toBe(before.USDC - 8000);
    const failed = await s.api('POST', `/test_helpers/swaps/${failing.id}/advance`, { body: { outcome: 'failed', failure_reason: 'network_congested' } });
    expect(failed.body).toMatchObject({
      status: 'failed',
      failure_reason: 'network_congested',
      return_balance_transaction_id: expect.stringMatching(/^txn_/),
      to_balance_transaction_id: null,
    });
    expect(await balances()).toMatchObject({ USDC: before.USDC - 5000, USD: before.USD + 5000 });
    const events = await deliveredSince(from);
    expect(events.map((e) => [e.event_type, e.status])).toEqual([
      ['swap.create', 'pending'],
      ['swap.update', 'failed'],
    ]);
  });

  it('refuses a short balance (422, nothing written), GTQ, the same currency twice and unknown fields', async () => {
    const before = await balances();
    const short = await s.api('POST', '/swaps', { body: { amount_in_cents: before.USD + 1, from_currency: 'USD', to_currency: 'USDC' } });
    expect(short.status).toBe(422);
    expect(short.body.code).toBe('insufficient_funds');
    expect(await balances()).toEqual(before);
    for (const body of [
      { amount_in_cents: 100, from_currency: 'GTQ', to_currency: 'USDC' },
      { amount_in_cents: 100, from_currency: 'USDC', to_currency: 'USDC' },
      { amount_in_cents: 100, from_currency: 'USD', to_currency: 'USDC', rate: 1 },
    ]) {
      const res = await s.api('POST', '/swaps', { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
  });

  it('another account does not see the swap; the helper is sandbox only', async () => {
    const accounts = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
    const other = accounts.createAccount({ name: 'Otra', organizationId: s.installation.organization_id });
    const key = accounts.createKey({ accountId: other.sandbox.id, environment: 'test' }).key;
    const mine = (await s.api('GET', '/swaps')).body[0];
    expect((await s.api('GET', `/swaps/${mine.id}`, { key })).status).toBe(404);
    expect((await s.api('GET', '/balances', { key })).body.map((b: { currency: string }) => b.currency)).not.toContain('USDC');
    const live = accounts.createKey({ accountId: other.account.id, environment: 'live' }).key;
    expect((await s.api('POST', `/test_helpers/swaps/${mine.id}/advance`, { key: live, body: { outcome: 'completed' } })).status).toBe(404);
  });

  it('a live key is refused with 422 exchange_not_configured: no exchange completes a live swap, so nothing is debited or left pending', async () => {
    const accounts = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
    const live = accounts.createAccount({ name: 'En vivo', organizationId: s.installation.organization_id }).account;
    const key = accounts.createKey({ accountId: live.id, environment: 'live' }).key;
    // A live USD balance to swap from (the refusal must not depend on the balance being short).
    tx(s.daemon.ctx.db, () =>
      postBalanceTransaction(s.daemon.ctx, {
        accountId: live.id,
        liveMode: true,
        type: 'adjustment',
        amountInCents: 5000,
        feeInCents: 0,
        currency: 'USD',
        sourceId: 'test',
        sourceType: 'adjustment',
      }),
    );
    const res = await s.api('POST', '/swaps', { key, body: { amount_in_cents: 1000, from_currency: 'USD', to_currency: 'USDC' } });
    expect(res.status, JSON.stringify(res.body)).toBe(422);
    expect(res.body).toEqual({
      code: 'exchange_not_configured',
      message: 'No exchange provider is configured on this posd: live swaps cannot be completed. Swaps work in a sandbox.',
    });
    expect((await s.api('GET', '/balances', { key })).body.find((b: { currency: string }) => b.currency === 'USD').available_in_cents).toBe(5000);
    expect((await s.api('GET', '/swaps', { key })).body).toEqual([]);
    const n = (sql: string) => (s.daemon.ctx.db.prepare(sql).get(live.id) as { n: number }).n;
    expect(n('SELECT count(*) AS n FROM swaps WHERE account_id = ?')).toBe(0);
    expect(n("SELECT count(*) AS n FROM events WHERE account_id = ? AND type LIKE 'swap.%'")).toBe(0);
  });
});
