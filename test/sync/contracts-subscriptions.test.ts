import { afterEach, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { SubscriptionsStore } from '../../src/modules/subscriptions/store.js';
import { http, pairStoreAndCentral, type TestStore, appliedAtCentral } from './helpers.js';
import { replayAtCentral, tableRows } from './replay.js';

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const synced = (store: TestStore) => appliedAtCentral(store);
const form = async (url: string, fields: Record<string, string>) => {
  const res = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });
  return { status: res.statusCode, text: await res.body.text() };
};
/** The contract as both boxes answer it, without the links (each box hands out its own host). */
const comparable = (c: Record<string, unknown>) => {
  const { checkout_url: _c, ...rest } = c;
  return rest;
};

describe('contracts made at the store', () => {
  it('exist at the central with the same ids and the state carried; an older record never overwrites a newer state; a replay creates nothing twice', async () => {
    const { central, store, acct } = await pairStoreAndCentral(cleanup);
    const key = acct.testKey; // the sandbox signing channel hands the code to the caller
    const t = await http('POST', `${store.url}/api/contract_templates`, key, {
      name: 'Consentimiento',
      body: '<p>Yo, {nombre}, autorizo a {comercio}.</p>',
      fields: [{ key: 'acepto', label: 'Acepto', kind: 'checkbox', required: true }],
    });
    expect(t.status, JSON.stringify(t.body)).toBe(201);
    const c = await http('POST', `${store.url}/api/contracts`, key, { template_id: t.body.id, customer: { name: 'Ana', phone: '+50255550000' } });
    expect(c.status, JSON.stringify(c.body)).toBe(201);
    await synced(store);
    expect(comparable((await http('GET', `${central.url}/api/contracts/${c.body.id}`, key)).body)).toEqual(comparable(c.body));

    const page = await form(`${c.body.signing_url}/code`, { channel: 'sandbox' });
    const code = /id="sandbox-code">[^<]*<strong>(\d{6})</.exec(page.text)?.[1];
    expect(code).toBeDefined();
    await form(`${c.body.signing_url}/complete`, { code: code!, action: 'sign', field_acepto: 'on' });
    const signed = (await http('GET', `${store.url}/api/contracts/${c.body.id}`, key)).body;
    expect(signed.status).toBe('signed');
    await synced(store);
    const atCentral = (await http('GET', `${central.url}/api/contracts/${c.body.id}`, key)).body;
    expect(comparable({ ...atCentral, pdf_available: null })).toEqual(comparable({ ...signed, pdf_available: null }));
    expect(atCentral).toMatchObject({ status: 'signed', body_sha256: signed.body_sha256, signed_at: signed.signed_at, signing_url: c.body.signing_url });
    expect((await http('GET', `${central.url}/api/contract_templates/${t.body.id}`, key)).body).toMatchObject({ id: t.body.id, body: t.body.body });
    // The central's copy cannot be signed a second time: its signing secret is not the store's.
    const token = c.body.signing_url.split('/').pop();
    expect(tableRows(central, 'SELECT id FROM contracts WHERE signing_token = ?', token)).toEqual([]);

    // The signed record first, then the older `sent` one (as after a restore): the signature stays.
    const before = tableRows(central, 'SELECT * FROM contracts ORDER BY rowid');
    const replayed = await replayAtCentral(central, store, acct.key, ['contract'], { reverse: true });
    expect(replayed.rejected).toEqual([]);
    expect(tableRows(central, 'SELECT * FROM contracts ORDER BY rowid')).toEqual(before);
    expect(tableRows(central, 'SELECT count(*) AS n FROM contract_templates')).toEqual([{ n: 1 }]);
  });
});

describe('subscriptions made at the store', () => {
  it('exist at the central with the same ids and the state carried, are never billed by the central, and a replay creates nothing twice', async () => {
    const { central, store, acct } = await pairStoreAndCentral(cleanup);
    const key = acct.testKey;
    const product = await http('POST', `${store.url}/api/products`, key, {
      product: { name: 'Membresía', prices_attributes: [{ amount_in_cents: 25_000, currency: 'GTQ', charge_type: 'recurring', billing_interval: 'month' }] },
    });
    expect(product.status, JSON.stringify(product.body)).toBe(201);
    const customer = await http('POST', `${store.url}/api/customers`, key, { email: 'ana@example.com' });
    expect(customer.status, JSON.stringify(customer.body)).toBe(201);
    const ch = await http('POST', `${store.url}/api/checkouts`, key, {
      items: [{ price_id: product.body.prices[0].id, quantity: 1 }],
      customer_id: customer.body.id,
    });
    expect(ch.status, JSON.stringify(ch.body)).toBe(201);
    expect((await http('POST', `${store.url}/api/test_helpers/checkouts/${ch.body.id}/pay`, key, { method: 'card', outcome: 'succeeded' })).status).toBe(200);
    const sub = (await http('GET', `${store.url}/api/subscriptions`, key)).body.find((s: { checkout_id: string }) => s.checkout_id === ch.body.id);
    expect(sub.status).toBe('active');
    const added = await http('PATCH', `${store.url}/api/subscriptions/${sub.id}`, key, { add_items: [{ price_id: product.body.prices[0].id, quantity: 2 }] });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    await synced(store);

    const atStore = (await http('GET', `${store.url}/api/subscriptions/${sub.id}`, key)).body;
    expect(atStore.items).toHaveLength(1);
    const atCentral = await http('GET', `${central.url}/api/subscriptions/${sub.id}`, key);
    expect(atCentral.status).toBe(200);
    // The hosted fields read from the customer and the product (subscriber, tax_*, description) are
    // the store's: both were made there, and customers are not synced (docs/compatibility.md).
    const local = ['subscriber', 'tax_name', 'tax_id', 'description'];
    const synced_ = (b: Record<string, unknown>) => Object.fromEntries(Object.entries(b).filter(([k]) => !local.includes(k)));
    expect(synced_(atCentral.body)).toEqual(synced_(atStore));
    expect(atStore.subscriber).toMatchObject({ id: customer.body.id, email: 'ana@example.com' });
    expect(atCentral.body).toMatchObject({ subscriber: null, description: null });
    // Due at the central's clock a year on, it is still the store's to bill.
    expect(new SubscriptionsStore(central.daemon.ctx.db).due('2100-01-01T00:00:00.000Z').map((s) => s.id)).not.toContain(sub.id);

    const paused = await http('PATCH', `${store.url}/api/subscriptions/${sub.id}`, key, { status: 'paused' });
    expect(paused.body.status).toBe('paused');
    await synced(store);
    expect(synced_((await http('GET', `${central.url}/api/subscriptions/${sub.id}`, key)).body)).toEqual(
      synced_((await http('GET', `${store.url}/api/subscriptions/${sub.id}`, key)).body),
    );

    const tables = ['subscriptions', 'subscription_items', 'subscription_invoice_items'];
    const before = tables.map((tb) => tableRows(central, `SELECT * FROM ${tb} ORDER BY rowid`));
    const replayed = await replayAtCentral(central, store, acct.key, ['subscription'], { reverse: true });
    expect(replayed.rejected).toEqual([]);
    expect(tables.map((tb) => tableRows(central, `SELECT * FROM ${tb} ORDER BY rowid`))).toEqual(before);
  });
});
