import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { AccountsService } from '../../src/accounts/service.js';
import { createCheckout } from '../../src/modules/checkouts/service.js';
import { settleCheckoutPayment } from '../../src/modules/payments/service.js';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

describe('customers', () => {
  it('finds or creates by e-mail and lists as {customers: [...]}', async () => {
    const a = await s.api('POST', '/customers', { body: { email: 'Ana@Example.com', full_name: 'Ana' } });
    expect(a.status).toBe(201);
    expect(a.body).toMatchObject({ email: 'ana@example.com', full_name: 'Ana', live_mode: false });
    expect(a.body.id).toMatch(/^cus_/);
    const again = await s.api('POST', '/customers', { body: { email: 'ana@example.com', tax_id: '123' } });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: a.body.id, full_name: 'Ana', tax_id: '123' });
    const list = await s.api('GET', '/customers');
    expect(list.body.customers.map((c: any) => c.id)).toEqual([a.body.id]);
    expect(list.headers['total-count']).toBe('1');
    expect((await s.api('POST', '/customers', { body: { email: 'not-an-email' } })).status).toBe(400);
  });

  it('becomes live with its first real payment and then answers 401 to the test key', async () => {
    const testCustomer = await s.api('POST', '/customers', { body: { email: 'bea@example.com' } });
    const id = testCustomer.body.id;
    // The live key finds the same person by e-mail; the payment is real.
    const liveFound = await s.api('POST', '/customers', { key: s.installation.keys.live, body: { email: 'bea@example.com' } });
    expect(liveFound.body.id).toBe(id);
    const accounts = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
    const live = accounts.account(s.installation.account_id)!;
    const co = createCheckout(s.daemon.ctx, live, { items: [{ amount_in_cents: 5000 }], customer_id: id });
    settleCheckoutPayment(s.daemon.ctx, live, { checkoutId: co.id, method: 'terminal', outcome: 'succeeded' });

    const asLive = await s.api('GET', `/customers/${id}`, { key: s.installation.keys.live });
    expect(asLive.body).toMatchObject({ id, live_mode: true });
    const asTest = await s.api('GET', `/customers/${id}`);
    expect(asTest.status).toBe(401);
    expect(asTest.body.code).toBe('wrong_environment');
    expect((await s.api('GET', '/customers')).body.customers.map((c: any) => c.id)).not.toContain(id);
    // The sandbox may make its own test customer with that e-mail again.
    const fresh = await s.api('POST', '/customers', { body: { email: 'bea@example.com' } });
    expect(fresh.status).toBe(201);
    expect(fresh.body.id).not.toBe(id);
  });

  it('a live key never lists or resolves a customer only the sandbox has met; one gone live reports the live account (issue 15)', async () => {
    const sandboxOnly = await s.api('POST', '/customers', { body: { email: 'only-test@example.com' } });
    expect(sandboxOnly.status).toBe(201);
    const live = s.installation.keys.live;
    const listed = await s.api('GET', '/customers?items=100', { key: live });
    expect(listed.body.customers.map((c: any) => c.id)).not.toContain(sandboxOnly.body.id);
    expect(listed.body.customers.every((c: any) => c.live_mode || c.account_id === s.installation.account_id)).toBe(true);
    const read = await s.api('GET', `/customers/${sandboxOnly.body.id}`, { key: live });
    expect(read.status).toBe(401);
    expect(read.body.code).toBe('wrong_environment');
    // The till meets the same person for real: the customer moves to the live side and, once paid, reports the live account.
    const met = await s.api('POST', '/customers', { key: live, body: { email: 'only-test@example.com' } });
    expect(met.body.id).toBe(sandboxOnly.body.id);
    expect(met.body.account_id).toBe(s.installation.account_id);
    const sale = await s.api('POST', '/cash_sales', { key: live, body: { amount_in_cents: 900, customer_id: met.body.id } });
    expect(sale.status).toBe(201);
    const after = await s.api('GET', `/customers/${met.body.id}`, { key: live });
    expect(after.body).toMatchObject({ live_mode: true, account_id: s.installation.account_id });
  });

  it('answers 404 for an unknown id and for another merchant’s customer', async () => {
    expect((await s.api('GET', '/customers/cus_0000000000000000')).status).toBe(404);
    const accounts = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
    const other = accounts.createAccount({ name: 'Other', organizationId: s.installation.organization_id });
    const otherKey = accounts.createKey({ accountId: other.sandbox.id, environment: 'test' }).key;
    const c = await s.api('POST', '/customers', { key: otherKey, body: { email: 'zoe@example.com' } });
    expect((await s.api('GET', `/customers/${c.body.id}`)).status).toBe(404);
  });
});

describe('users', () => {
  it('creates (once per e-mail) and lists an account’s users', async () => {
    const u = await s.api('POST', '/users', { body: { email: 'cashier@example.com', name: 'Cashier' } });
    expect(u.status).toBe(201);
    expect(u.body.id).toMatch(/^us_/);
    expect((await s.api('POST', '/users', { body: { email: 'cashier@example.com' } })).status).toBe(200);
    const list = await s.api('GET', '/users');
    expect(list.body.map((x: any) => x.id)).toEqual([u.body.id]);
    expect((await s.api('GET', `/users/${u.body.id}`)).body).toEqual(u.body);
    expect((await s.api('GET', `/users/${u.body.id}`, { key: s.installation.keys.live })).status).toBe(404);
    expect((await s.api('POST', '/users', { body: { email: 5 } })).status).toBe(400);
  });
});

describe('cash sales and customers', () => {
  it('a live cash sale makes its customer live; a sandbox one does not', async () => {
    const c = await s.api('POST', '/customers', { key: s.installation.keys.live, body: { email: 'cash@example.com' } });
    expect(c.body.live_mode).toBe(false);
    const testSale = await s.api('POST', '/cash_sales', { body: { amount_in_cents: 900, customer_id: c.body.id } });
    expect(testSale.status).toBe(201);
    expect((await s.api('GET', `/customers/${c.body.id}`)).body.live_mode).toBe(false);
    const sale = await s.api('POST', '/cash_sales', { key: s.installation.keys.live, body: { amount_in_cents: 900, customer_id: c.body.id } });
    expect(sale.status).toBe(201);
    expect(sale.body.customer_id).toBe(c.body.id);
    expect((await s.api('GET', `/intents/${sale.body.id}`, { key: s.installation.keys.live })).body.customer).toMatchObject({
      id: c.body.id,
      email: 'cash@example.com',
    });
    expect((await s.api('GET', `/customers/${c.body.id}`, { key: s.installation.keys.live })).body.live_mode).toBe(true);
    expect((await s.api('GET', `/customers/${c.body.id}`)).status).toBe(401);
  });
});
