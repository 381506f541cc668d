import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Replays calls as the hosted service's documentation and clients make them (shared/spec/hosted-api.md),
 * over real HTTP against a real daemon, in both body forms: wrapped in the resource name (the
 * official plugin, the Postman collection) and flat (the SDKs). Answers are checked against the
 * documented shapes. What posd does not serve yet is listed in docs/compatibility.md.
 */

let s: TestServer;

const wrap = (name: string, body: Record<string, unknown>) => ({ [name]: body });
const FORMS = [
  ['wrapped', (name: string, body: Record<string, unknown>) => wrap(name, body)],
  ['flat', (_name: string, body: Record<string, unknown>) => body],
] as const;

// Over plain HTTP (a client on the box itself) and over TLS trusting the box CA, as a shop's server
// or a till on the store's network reaches a box (issue 39).
const TRANSPORTS = [
  ['http', {}],
  ['https, trusting the box CA', { tls: { mode: 'on' } }],
] as const;

describe.each(TRANSPORTS)('over %s', (_transport, config) => {
  beforeAll(async () => {
    s = await startTestServer({ config });
    expect(s.url.startsWith('https://')).toBe('tls' in config);
  });
  afterAll(() => s.stop());

  describe.each(FORMS)('hosted calls, %s bodies', (form, shape) => {
    it('POST /products (hosted section 4) stores and answers the checkout-page settings', async () => {
      const product = {
        name: `Membresía ${form}`,
        description: 'Mensual',
        success_url: 'https://shop.example/gracias',
        cancel_url: 'https://shop.example/carrito',
        custom_terms_and_conditions: 'Sin reembolsos',
        phone_requirement: 'required',
        address_requirement: 'optional',
        billing_info_requirement: 'none',
        adjustable_quantity: false,
        metadata: { sku: 'M-1' },
        prices_attributes: [{ amount_in_cents: '15000', currency: 'GTQ', charge_type: 'recurring', billing_interval: 'month', billing_interval_count: '1' }],
      };
      const created = await s.api('POST', '/products', { body: shape('product', product) });
      expect(created.status).toBe(201);
      const { prices_attributes: _p, ...expected } = product;
      expect(created.body).toMatchObject({ ...expected, status: 'active' });
      expect(created.body.prices[0]).toMatchObject({ amount_in_cents: 15000, charge_type: 'recurring', billing_interval: 'month', billing_interval_count: 1 });

      // PUT (the reference) and PATCH (the Postman collection), and the `.json` spelling.
      const put = await s.api('PUT', `/products/${created.body.id}.json`, { body: shape('product', { phone_requirement: 'none', cancel_url: null }) });
      expect(put.status).toBe(200);
      expect(put.body).toMatchObject({ phone_requirement: 'none', cancel_url: null, success_url: product.success_url, adjustable_quantity: false });
      const patch = await s.api('PATCH', `/products/${created.body.id}`, { body: shape('product', { adjustable_quantity: true }) });
      expect(patch.body.adjustable_quantity).toBe(true);

      // "Archivar un producto".
      const archived = await s.api('DELETE', `/products/${created.body.id}`);
      expect(archived.status).toBe(200);
      expect(archived.body).toMatchObject({ id: created.body.id, status: 'archived' });
    });

    it('POST /checkouts (hosted section 3.1) keeps success_url, cancel_url and metadata, and answers the hosted shape', async () => {
      const checkout = {
        items: [{ name: 'Pedido #1001', amount_in_cents: '2500', currency: 'GTQ', quantity: '2' }],
        success_url: 'https://shop.example/checkout/order-received/1001',
        cancel_url: 'https://shop.example/cart',
        metadata: { order_id: '1001', order_key: 'wc_order_abc' },
      };
      const created = await s.api('POST', '/checkouts.json', { body: shape('checkout', checkout) });
      expect(created.status).toBe(201);
      const c = created.body;
      expect(c.id).toMatch(/^ch_/);
      expect(c).toMatchObject({
        status: 'unpaid',
        total_in_cents: 5000,
        subtotal_in_cents: 5000,
        discount: null,
        currency: 'GTQ',
        success_url: checkout.success_url,
        cancel_url: checkout.cancel_url,
        metadata: checkout.metadata,
      });
      expect(c.checkout_url).toMatch(new RegExp(`^https?://[^/]+/checkout-session/${c.id}$`));
      expect(c.url).toBeTypeOf('string');

      // Update of an unpaid checkout: success_url, cancel_url, metadata, expires_at (section 3.2).
      const updated = await s.api('PATCH', `/checkouts/${c.id}`, {
        body: shape('checkout', { success_url: 'https://shop.example/ok', metadata: { order_id: '1002' } }),
      });
      expect(updated.status).toBe(200);
      expect(updated.body).toMatchObject({ success_url: 'https://shop.example/ok', cancel_url: checkout.cancel_url, metadata: { order_id: '1002' } });

      const got = await s.api('GET', `/checkouts/${c.id}.json`);
      expect(got.body.success_url).toBe('https://shop.example/ok');
    });

    it('a field neither document knows is refused by name, outside metadata; metadata takes any keys', async () => {
      const bad = await s.api('POST', '/checkouts', { body: shape('checkout', { items: [{ amount_in_cents: 1000 }], colour: 'red' }) });
      expect(bad.status).toBe(400);
      expect(bad.body).toMatchObject({ code: 'unknown_parameter', errors: { colour: ['is not a known parameter'] } });
      const nested = await s.api('POST', '/checkouts', { body: shape('checkout', { items: [{ amount_in_cents: 1000, colour: 'red' }] }) });
      expect(nested.status).toBe(400);
      expect(nested.body.errors).toEqual({ 'items.0.colour': ['is not a known parameter'] });
      const free = await s.api('POST', '/checkouts', {
        body: shape('checkout', { items: [{ amount_in_cents: 1000 }], metadata: { colour: 'red', any: { nested: 1 } } }),
      });
      expect(free.status).toBe(201);
    });

    it('POST /checkouts as the official plugin itemizes an order: charge_type, payment_method_types and available_installments on each line', async () => {
      // What recurrente-woocommerce's checkout builder sends for a one-time order with the merchant's
      // settings (methods, installments): every line names charge_type one_time.
      const line = (name: string, cents: number, quantity: number) => ({
        name,
        amount_in_cents: cents,
        currency: 'GTQ',
        quantity,
        charge_type: 'one_time',
        payment_method_types: ['card', 'bank_transfer'],
        available_installments: [3, '6', 12],
      });
      const order = {
        items: [line('Camisa', 12500, 2), line('Envío: Forza', 3500, 1)],
        metadata: { wc_order_id: '77', wc_order_key: 'wc_order_k', source: 'woocommerce' },
      };
      const created = await s.api('POST', '/checkouts', { body: shape('checkout', order) });
      expect(created.status).toBe(201);
      expect(created.body.total_in_cents).toBe(28500);
      expect(created.body.items[0]).toMatchObject({
        name: 'Camisa',
        quantity: 2,
        payment_method_types: ['card', 'bank_transfer'],
        available_installments: [3, 6, 12],
      });
      // Lines that name neither answer null: whatever the account allows.
      const plain = await s.api('POST', '/checkouts', { body: shape('checkout', { items: [{ amount_in_cents: 1000 }] }) });
      expect(plain.body.items[0]).toMatchObject({ payment_method_types: null, available_installments: null });

      // Refused with a reason rather than ignored: a recurring inline line without its schedule (with
      // one it starts a subscription, test/compat/recurring-lines.test.ts), installments outside GTQ,
      // a method the hosted service does not name.
      const recurring = await s.api('POST', '/checkouts', {
        body: shape('checkout', { items: [{ ...line('Plan', 5000, 1), charge_type: 'recurring' }] }),
      });
      expect(recurring.status).toBe(400);
      expect(recurring.body.errors['items.0.billing_interval'][0]).toContain('recurring');
      const usd = await s.api('POST', '/checkouts', { body: shape('checkout', { items: [{ ...line('Camisa', 12500, 1), currency: 'USD' }] }) });
      expect(usd.status).toBe(400);
      expect(usd.body.errors).toHaveProperty(['items.0.available_installments']);
      const cash = await s.api('POST', '/checkouts', { body: shape('checkout', { items: [{ ...line('Camisa', 12500, 1), payment_method_types: ['cash'] }] }) });
      expect(cash.status).toBe(400);
    });

    it('an integer field takes "2" but not "2.5" or "two"', async () => {
      for (const bad of ['2.5', 'two', '']) {
        const r = await s.api('POST', '/checkouts', { body: shape('checkout', { items: [{ amount_in_cents: 1000, quantity: bad }] }) });
        expect(r.status, bad).toBe(400);
        expect(Object.keys(r.body.errors), bad).toContain('items.0.quantity');
      }
    });
  });

  describe('GET /checkouts filters (hosted section 1.3)', () => {
    it('honours status, from_time and until_time, and refuses a filter it does not serve', async () => {
      const made = await s.api('POST', '/checkouts', { body: { items: [{ amount_in_cents: 1000 }] } });
      const at = made.body.created_at as string;
      const inside = await s.api('GET', `/checkouts?status=unpaid&from_time=${encodeURIComponent(at)}&until_time=${encodeURIComponent(at)}&items=100`);
      expect(inside.status).toBe(200);
      expect(inside.body.map((c: { id: string }) => c.id)).toContain(made.body.id);
      expect(inside.body.every((c: { status: string; created_at: string }) => c.status === 'unpaid' && c.created_at === at)).toBe(true);
      const later = new Date(Date.parse(at) + 1000).toISOString();
      const after = await s.api('GET', `/checkouts?from_time=${encodeURIComponent(later)}`);
      expect(after.body.map((c: { id: string }) => c.id)).not.toContain(made.body.id);
      const paid = await s.api('GET', '/checkouts?status=paid&items=100');
      expect(paid.body.map((c: { id: string }) => c.id)).not.toContain(made.body.id);
      const refused = await s.api('GET', '/checkouts?colour=red');
      expect(refused.status).toBe(400);
      expect(refused.body).toMatchObject({ code: 'unknown_parameter', errors: { colour: ['is not a known parameter'] } });
    });

    it('serves the .json spelling of lists, with the pagination headers', async () => {
      const r = await s.api('GET', '/checkouts.json?items=1');
      expect(r.status).toBe(200);
      expect(r.body).toHaveLength(1);
      expect(r.headers['page-items']).toBe('1');
    });
  });
});
