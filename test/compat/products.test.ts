import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { PageClient } from '../helpers/page-client.js';

/**
 * Products as the hosted reference documents them (shared/spec/hosted-api.md section 4), over real
 * HTTP against a real daemon: inventory, payment settings honoured by the checkout page, price
 * changes and deletions that leave existing checkouts alone, `amount_as_decimal`, and the public
 * product page of `storefront_link`.
 */

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

const price = { amount_in_cents: 5000, currency: 'GTQ', charge_type: 'one_time' };
const pay = (id: string) => s.api('POST', `/test_helpers/checkouts/${id}/pay`, { body: { method: 'card', outcome: 'succeeded' } });

describe('products (hosted section 4)', () => {
  it('stores and answers the payment settings, storefront_link and custom_fields, wrapped or flat', async () => {
    const body = {
      name: 'Taza',
      has_dynamic_pricing: true,
      custom_payment_method_settings: true,
      card_payments_enabled: false,
      bank_transfer_payments_enabled: true,
      available_installments: [3, 6],
      inventory_quantity: 5,
      prices_attributes: [price],
    };
    const made = await s.api('POST', '/products', { body: { product: body } });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const { prices_attributes: _p, ...fields } = body;
    expect(made.body).toMatchObject({ ...fields, status: 'active', custom_fields: [] });
    expect(made.body.storefront_link).toMatch(new RegExp(`/storefront/${made.body.id}$`));
    const flat = await s.api('POST', '/products', { body: { name: 'Plato', prices_attributes: [price] } });
    expect(flat.body).toMatchObject({
      has_dynamic_pricing: false,
      custom_payment_method_settings: false,
      card_payments_enabled: true,
      bank_transfer_payments_enabled: true,
      available_installments: [],
      inventory_quantity: null,
    });
    const put = await s.api('PUT', `/products/${flat.body.id}`, {
      body: { product: { card_payments_enabled: false, custom_payment_method_settings: true, inventory_quantity: 2 } },
    });
    expect(put.body).toMatchObject({ card_payments_enabled: false, custom_payment_method_settings: true, inventory_quantity: 2, name: 'Plato' });
    const none = await s.api('PATCH', `/products/${flat.body.id}`, { body: { bank_transfer_payments_enabled: false } });
    expect(none.status).toBe(400);
    expect(Object.keys(none.body.errors)).toEqual(['custom_payment_method_settings']);
  });

  it('the checkout page offers only the methods the product allows, and its lines carry the settings', async () => {
    const p = await s.api('POST', '/products', {
      body: {
        name: 'Solo transferencia',
        custom_payment_method_settings: true,
        card_payments_enabled: false,
        available_installments: [3],
        prices_attributes: [price],
      },
    });
    const ch = await s.api('POST', '/checkouts', { body: { items: [{ product_id: p.body.id }] } });
    expect(ch.status).toBe(201);
    expect(ch.body.items[0]).toMatchObject({ payment_method_types: ['bank_transfer'], available_installments: [3] });
    const page = await new PageClient(s.url).get(`/checkout-session/${ch.body.id}`);
    expect(page.text).toContain('id="bank_transfer"');
    expect(page.text).not.toContain('id="pay"');
    expect(page.text).not.toContain('id="decline"');
  });

  it('inventory_quantity: a paid checkout takes its units off; at 0 the product is sold_out and a new checkout is a 422', async () => {
    const p = await s.api('POST', '/products', { body: { name: 'Edición limitada', inventory_quantity: 3, prices_attributes: [price] } });
    const two = await s.api('POST', '/checkouts', { body: { items: [{ product_id: p.body.id, quantity: 2 }] } });
    // An unpaid checkout reserves nothing: only a payment takes units.
    expect((await s.api('GET', `/products/${p.body.id}`)).body.inventory_quantity).toBe(3);
    expect((await pay(two.body.id)).status).toBe(200);
    expect((await s.api('GET', `/products/${p.body.id}`)).body).toMatchObject({ inventory_quantity: 1, status: 'active' });

    const tooMany = await s.api('POST', '/checkouts', { body: { items: [{ product_id: p.body.id, quantity: 2 }] } });
    expect(tooMany.status).toBe(422);
    expect(tooMany.body).toMatchObject({ code: 'product_sold_out', errors: { 'items.0.product_id': ['has only 1 units left'] } });

    const last = await s.api('POST', '/checkouts', { body: { items: [{ product_id: p.body.id }] } });
    await pay(last.body.id);
    expect((await s.api('GET', `/products/${p.body.id}`)).body).toMatchObject({ inventory_quantity: 0, status: 'sold_out' });
    const refused = await s.api('POST', '/checkouts', { body: { items: [{ price_id: p.body.prices[0].id }] } });
    expect(refused.status).toBe(422);
    expect(refused.body).toMatchObject({ code: 'product_sold_out', errors: { 'items.0.product_id': ['is sold out'] } });

    // More stock reopens it.
    const restocked = await s.api('PATCH', `/products/${p.body.id}`, { body: { inventory_quantity: 10 } });
    expect(restocked.body).toMatchObject({ inventory_quantity: 10, status: 'active' });
    expect((await s.api('POST', '/checkouts', { body: { items: [{ product_id: p.body.id }] } })).status).toBe(201);
  });

  it('prices_attributes changes a price by id, deletes one with _destroy, takes amount_as_decimal; existing checkouts keep their amount', async () => {
    const p = await s.api('POST', '/products', { body: { name: 'Cuadro', prices_attributes: [{ amount_as_decimal: '123.12', currency: 'GTQ' }] } });
    expect(p.status, JSON.stringify(p.body)).toBe(201);
    const priceId = p.body.prices[0].id;
    expect(p.body.prices[0].amount_in_cents).toBe(12312);
    const before = await s.api('POST', '/checkouts', { body: { items: [{ price_id: priceId }] } });
    expect(before.body.total_in_cents).toBe(12312);

    const changed = await s.api('PUT', `/products/${p.body.id}`, { body: { product: { prices_attributes: [{ id: priceId, amount_in_cents: 15000 }] } } });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    expect(changed.body.prices).toHaveLength(1);
    expect(changed.body.prices[0]).toMatchObject({ id: priceId, amount_in_cents: 15000 });
    // The checkout made before the change charges what it was made with, through its payment.
    expect((await s.api('GET', `/checkouts/${before.body.id}`)).body).toMatchObject({
      total_in_cents: 12312,
      items: [{ price_id: priceId, amount_in_cents: 12312 }],
    });
    const paid = await pay(before.body.id);
    expect((await s.api('GET', `/payment_intents/${paid.body.payment_intent_id}`)).body.amount_in_cents).toBe(12312);
    expect((await s.api('POST', '/checkouts', { body: { items: [{ price_id: priceId }] } })).body.total_in_cents).toBe(15000);

    const decimal = await s.api('PATCH', `/products/${p.body.id}`, {
      body: {
        prices_attributes: [
          { id: priceId, amount_as_decimal: '99.5' },
          { amount_as_decimal: '10', currency: 'GTQ' },
        ],
      },
    });
    expect(decimal.body.prices.map((x: { amount_in_cents: number }) => x.amount_in_cents)).toEqual([9950, 1000]);

    const open = await s.api('POST', '/checkouts', { body: { items: [{ price_id: priceId }] } });
    const destroyed = await s.api('PATCH', `/products/${p.body.id}`, { body: { prices_attributes: [{ id: priceId, _destroy: true }] } });
    expect(destroyed.body.prices.map((x: { id: string }) => x.id)).not.toContain(priceId);
    const gone = await s.api('POST', '/checkouts', { body: { items: [{ price_id: priceId }] } });
    expect(gone.status).toBe(400);
    expect(Object.keys(gone.body.errors)).toEqual(['items.0.price_id']);
    // A checkout that already named it still pays what it was made with.
    expect((await pay(open.body.id)).status).toBe(200);
    expect((await s.api('GET', `/checkouts/${open.body.id}`)).body).toMatchObject({ status: 'paid', total_in_cents: 9950 });

    const bad = await Promise.all([
      s.api('PATCH', `/products/${p.body.id}`, { body: { prices_attributes: [{ id: 'price_nope', amount_in_cents: 100 }] } }),
      s.api('PATCH', `/products/${p.body.id}`, { body: { prices_attributes: [{ amount_as_decimal: '1.234', currency: 'GTQ' }] } }),
      s.api('PATCH', `/products/${p.body.id}`, { body: { prices_attributes: [{ amount_in_cents: 100, amount_as_decimal: '1.00', currency: 'GTQ' }] } }),
      s.api('PATCH', `/products/${p.body.id}`, { body: { prices_attributes: [{ id: decimal.body.prices[1].id, charge_type: 'recurring' }] } }),
    ]);
    expect(bad.map((r) => r.status)).toEqual([400, 400, 400, 400]);
  });
});

describe('the product page of storefront_link', () => {
  it('sandbox: shows the product, opens a checkout of it with its URLs and sends the buyer to its checkout page', async () => {
    const p = await s.api('POST', '/products', {
      body: {
        name: 'Clase de yoga',
        description: 'Una hora',
        success_url: 'https://shop.example/ok',
        cancel_url: 'https://shop.example/back',
        prices_attributes: [price],
      },
    });
    const path = new URL(p.body.storefront_link).pathname;
    const browser = new PageClient(s.url);
    const page = await browser.get(path);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Clase de yoga');
    expect(page.text).toContain('GTQ 50.00');
    expect(page.text).toContain('id="sandbox"');

    // Without the page's cookie (a form on another site) nothing is made.
    const before = (await s.api('GET', '/checkouts?items=100')).body.length;
    const forged = await new PageClient(s.url).post(path, { _csrf: PageClient.csrf(page.text) });
    expect(forged.status).toBe(303);
    expect(forged.headers.location).toBe(path);
    expect((await s.api('GET', '/checkouts?items=100')).body.length).toBe(before);

    const bought = await browser.post(path, { _csrf: PageClient.csrf(page.text) });
    expect(bought.status).toBe(303);
    const id = /^\/checkout-session\/(ch_\w+)$/.exec(String(bought.headers.location))![1];
    const checkout = await s.api('GET', `/checkouts/${id}`);
    expect(checkout.body).toMatchObject({
      status: 'unpaid',
      total_in_cents: 5000,
      success_url: 'https://shop.example/ok',
      cancel_url: 'https://shop.example/back',
      items: [{ product_id: p.body.id, price_id: p.body.prices[0].id, quantity: 1 }],
    });
    expect((await browser.get(`/checkout-session/${id}`)).text).toContain('id="pay"');
  });

  it('a sold-out product shows so and offers no button; live products open live checkouts; unknown ids are 404', async () => {
    const p = await s.api('POST', '/products', { body: { name: 'Agotado', inventory_quantity: 0, prices_attributes: [price] } });
    expect(p.body.status).toBe('sold_out');
    const page = await new PageClient(s.url).get(new URL(p.body.storefront_link).pathname);
    expect(page.text).toContain('data-status="unavailable"');
    expect(page.text).not.toContain('id="buy"');

    const live = await s.api('POST', '/products', { key: s.installation.keys.live, body: { name: 'En vivo', prices_attributes: [price] } });
    const browser = new PageClient(s.url);
    const livePage = await browser.get(new URL(live.body.storefront_link).pathname);
    expect(livePage.text).not.toContain('id="sandbox"');
    const bought = await browser.post(new URL(live.body.storefront_link).pathname, { _csrf: PageClient.csrf(livePage.text) });
    const id = /(ch_\w+)$/.exec(String(bought.headers.location))![1];
    expect((await s.api('GET', `/checkouts/${id}`, { key: s.installation.keys.live })).body).toMatchObject({ live_mode: true, status: 'unpaid' });
    expect((await browser.get(`/checkout-session/${id}`)).text).toContain('id="live-note"');

    expect((await new PageClient(s.url).get('/storefront/prod_doesnotexist00')).status).toBe(404);
  });
});
