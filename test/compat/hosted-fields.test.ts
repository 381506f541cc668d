import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Every field the hosted reference documents for customers, users and checkout lines
 * (shared/spec/hosted-api.md sections 3.1, 5, 6) is stored and answered, in both body forms, over
 * real HTTP against a real daemon. Before this, customer `address` answered 400 and the official
 * plugin could not complete an order.
 */

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

const FORMS = [
  ['wrapped', (name: string, body: Record<string, unknown>) => ({ [name]: body })],
  ['flat', (_name: string, body: Record<string, unknown>) => body],
] as const;

describe.each(FORMS)('%s bodies', (form, shape) => {
  it('POST /customers as the official plugin sends it (email, full_name, phone, address) stores and answers each', async () => {
    const body = { email: `ana.${form}@example.com`, full_name: 'Ana López', phone: '+502 5555 1234', address: '6a Avenida 12-34, Zona 1' };
    const created = await s.api('POST', '/customers', { body: shape('customer', body) });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ ...body, name: 'Ana López', nit: null, metadata: null, user_id: null });
    expect(created.body.id).toMatch(/^cus_/);
    const got = await s.api('GET', `/customers/${created.body.id}.json`);
    expect(got.body).toMatchObject({ address: body.address, full_name: 'Ana López', phone: body.phone });

    // Find-or-create: the same e-mail answers the same customer (200), its stored details kept.
    const again = await s.api('POST', '/customers', { body: shape('customer', { email: body.email.toUpperCase(), address: 'otra' }) });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: created.body.id, address: body.address });
  });

  it('POST /customers with every documented field (name, nit, metadata) and PUT/PATCH change them', async () => {
    const body = { email: `nit.${form}@example.com`, name: 'Comercial S.A.', phone: null, address: null, nit: '1234567-8', metadata: { erp_id: 'C-9' } };
    const created = await s.api('POST', '/customers', { body: shape('customer', body) });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'Comercial S.A.',
      full_name: 'Comercial S.A.',
      nit: '1234567-8',
      tax_id: '1234567-8',
      metadata: { erp_id: 'C-9' },
      address: null,
    });

    const put = await s.api('PUT', `/customers/${created.body.id}`, { body: shape('customer', { address: 'Zona 10', nit: 'CF' }) });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ address: 'Zona 10', nit: 'CF', name: 'Comercial S.A.', metadata: { erp_id: 'C-9' } });
    const patch = await s.api('PATCH', `/customers/${created.body.id}.json`, { body: shape('customer', { metadata: null, phone: '+502 2222 0000' }) });
    expect(patch.status).toBe(200);
    expect(patch.body).toMatchObject({ address: 'Zona 10', nit: 'CF', metadata: null, phone: '+502 2222 0000' });
    const listed = await s.api('GET', '/customers?items=100');
    expect(listed.body.customers.find((c: { id: string }) => c.id === created.body.id)).toMatchObject({ address: 'Zona 10', nit: 'CF' });
  });

  it('POST /users takes full_name (hosted section 6) and the customer of that e-mail names the user', async () => {
    const email = `user.${form}@example.com`;
    const user = await s.api('POST', '/users', { body: shape('user', { email, full_name: 'Luis Pérez' }) });
    expect(user.status).toBe(201);
    expect(user.body).toMatchObject({ email, full_name: 'Luis Pérez', name: 'Luis Pérez' });
    const customer = await s.api('POST', '/customers', { body: shape('customer', { email }) });
    expect(customer.body.user_id).toBe(user.body.id);
  });

  it('checkout lines keep image_url, description, custom_terms_and_conditions, metadata and has_dynamic_pricing', async () => {
    const line = {
      name: 'Camisa',
      amount_in_cents: 12500,
      currency: 'GTQ',
      quantity: 1,
      charge_type: 'one_time',
      image_url: 'https://shop.example/camisa.png',
      description: 'Talla M',
      custom_terms_and_conditions: 'Cambios en 30 días',
      metadata: { sku: 'CAM-M' },
      has_dynamic_pricing: true,
    };
    const created = await s.api('POST', '/checkouts', { body: shape('checkout', { items: [line], customer_id: null }) });
    expect(created.status).toBe(201);
    const { charge_type: _c, ...answered } = line;
    expect(created.body.items[0]).toMatchObject(answered);
    const got = await s.api('GET', `/checkouts/${created.body.id}`);
    expect(got.body.items[0]).toMatchObject(answered);
    const plain = await s.api('POST', '/checkouts', { body: shape('checkout', { items: [{ amount_in_cents: 1000 }] }) });
    expect(plain.body.items[0]).toMatchObject({ image_url: null, description: null, metadata: null, has_dynamic_pricing: false });
  });
});

describe('POST /checkouts with user_id (hosted section 3.1)', () => {
  it("makes the user's customer the checkout's buyer; an unknown user or another customer is a 400", async () => {
    const user = await s.api('POST', '/users', { body: { email: 'comprador@example.com', full_name: 'Marta Ruiz' } });
    const ch = await s.api('POST', '/checkouts', { body: { checkout: { user_id: user.body.id, items: [{ amount_in_cents: 1000 }] } } });
    expect(ch.status, JSON.stringify(ch.body)).toBe(201);
    const customer = await s.api('GET', `/customers/${ch.body.customer_id}`);
    expect(customer.body).toMatchObject({ email: 'comprador@example.com', full_name: 'Marta Ruiz', user_id: user.body.id });
    const same = await s.api('POST', '/checkouts', { body: { user_id: user.body.id, customer_id: ch.body.customer_id, items: [{ amount_in_cents: 1000 }] } });
    expect(same.status).toBe(201);
    const other = await s.api('POST', '/customers', { body: { email: 'otro@example.com' } });
    const clash = await s.api('POST', '/checkouts', { body: { user_id: user.body.id, customer_id: other.body.id, items: [{ amount_in_cents: 1000 }] } });
    expect(clash.status).toBe(400);
    expect(clash.body.errors).toHaveProperty('user_id');
    const unknown = await s.api('POST', '/checkouts', { body: { user_id: 'us_nothere1', items: [{ amount_in_cents: 1000 }] } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors).toHaveProperty('user_id');
  });
});

describe('refusals that stay', () => {
  it('two names of one value must agree, a taken e-mail is refused, an unknown field is named', async () => {
    const both = await s.api('POST', '/customers', { body: { email: 'x@example.com', nit: '1', tax_id: '2' } });
    expect(both.status).toBe(400);
    expect(both.body.errors).toHaveProperty('nit');
    const a = await s.api('POST', '/customers', { body: { email: 'a.taken@example.com' } });
    const b = await s.api('POST', '/customers', { body: { email: 'b.taken@example.com' } });
    const taken = await s.api('PUT', `/customers/${b.body.id}`, { body: { email: 'A.taken@example.com' } });
    expect(taken.status).toBe(422);
    expect(taken.body.code).toBe('email_taken');
    expect(a.body.id).not.toBe(b.body.id);
    const unknown = await s.api('POST', '/customers', { body: { customer: { email: 'u@example.com', colour: 'red' } } });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ code: 'unknown_parameter', errors: { colour: ['is not a known parameter'] } });
    const missing = await s.api('PUT', '/customers/cus_nothere1', { body: { address: 'x' } });
    expect(missing.status).toBe(404);
  });
});
