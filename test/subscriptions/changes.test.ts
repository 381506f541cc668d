import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { subscriptionBiller } from '../../src/modules/subscriptions/index.js';

const clock = new ManualClock(Date.parse('2026-05-10T09:00:00.000Z'));
let s: TestServer;
let sub: any;
const prices: Record<string, string> = {};
let otherCustomer: string;

function events(): Array<[string, string]> {
  return (
    s.daemon.ctx.db.prepare("SELECT type, object_id FROM events WHERE type LIKE 'subscription.%' OR type LIKE 'setup_intent.%' ORDER BY seq").all() as any[]
  ).map((e) => [e.type, e.object_id]);
}
const lastPayload = (type: string) =>
  JSON.parse((s.daemon.ctx.db.prepare('SELECT payload FROM events WHERE type = ? ORDER BY seq DESC').get(type) as any).payload);
const runDue = () => subscriptionBiller(s.daemon.ctx).runDue();
const patch = (body: unknown) => s.api('PATCH', `/subscriptions/${sub.id}`, { body });

async function price(name: string, attrs: Record<string, unknown>): Promise<string> {
  const r = await s.api('POST', '/products', { body: { product: { name, prices_attributes: [{ currency: 'GTQ', ...attrs }] } } });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.prices[0].id;
}

beforeAll(async () => {
  s = await startTestServer({ clock });
  prices.base = await price('Plan básico', { amount_in_cents: 10000, charge_type: 'recurring', billing_interval: 'month' });
  prices.addon = await price('Casillero', { amount_in_cents: 2500, charge_type: 'recurring', billing_interval: 'month' });
  prices.yearly = await price('Anual', { amount_in_cents: 90000, charge_type: 'recurring', billing_interval: 'year' });
  prices.oneTime = await price('Toalla', { amount_in_cents: 500 });
  const customer = (await s.api('POST', '/customers', { body: { email: 'leo@example.com', name: 'Leo' } })).body.id;
  otherCustomer = (await s.api('POST', '/customers', { body: { email: 'mia@example.com', name: 'Mia' } })).body.id;
  const ch = await s.api('POST', '/checkouts', { body: { items: [{ price_id: prices.base }], customer_id: customer } });
  await s.api('POST', `/test_helpers/checkouts/${ch.body.id}/pay`, { body: { method: 'card', outcome: 'succeeded' } });
  sub = (await s.api('GET', '/subscriptions')).body[0];
  expect(sub).toMatchObject({ items: [], pending_invoice_items: [] });
});
afterAll(() => s.stop());

describe('PATCH /subscriptions/{id}: items, invoice items, general updates (spec 6.2)', () => {
  it('refuses bad changes with 400 and writes nothing', async () => {
    const before = events().length;
    expect((await patch({})).status).toBe(400);
    const r = await patch({
      add_items: [{ price_id: prices.yearly }, { price_id: prices.oneTime }, { price_id: 'price_nope' }],
      invoice_items: [{ description: 'x', amount_in_cents: 100 }],
    });
    expect(r.status).toBe(400);
    expect(Object.keys(r.body.errors).sort()).toEqual(['add_items.0.price_id', 'add_items.1.price_id', 'add_items.2.price_id']);
    expect((await patch({ remove_items: ['sitem_nope'] })).body.errors).toHaveProperty(['remove_items.0']);
    expect((await patch({ customer_id: 'cus_nope', card: { last4: '1111' } })).status).toBe(400);
    expect((await patch({ invoice_items: [{ description: 'x', amount_in_cents: 0 }] })).status).toBe(400);
    expect(events().length).toBe(before);
    expect((await s.api('GET', `/subscriptions/${sub.id}`)).body).toMatchObject({ items: [], pending_invoice_items: [], card: { last4: '4242' } });
  });

  it('adds a recurring item: subscription.item_added once; the next renewal charges it', async () => {
    const before = events().length;
    const r = await patch({ add_items: [{ price_id: prices.addon, quantity: 2 }] });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.items).toEqual([
      expect.objectContaining({ id: expect.stringMatching(/^sitem_/), price_id: prices.addon, name: 'Casillero', amount_in_cents: 2500, quantity: 2 }),
    ]);
    expect(events().slice(before)).toEqual([['subscription.item_added', sub.id]]);
    expect(lastPayload('subscription.item_added')).toMatchObject({ event_type: 'subscription.item_added', item: { id: r.body.items[0].id, quantity: 2 } });
  });

  it('adds one-time invoice items: subscription.invoice_item_added each, once; charged with the next renewal only', async () => {
    const before = events().length;
    const r = await patch({
      invoice_items: [
        { description: 'Inscripción', amount_in_cents: 5000 },
        { description: 'Toalla', amount_in_cents: 500 },
      ],
    });
    expect(r.status).toBe(200);
    expect(r.body.pending_invoice_items.map((i: any) => i.description)).toEqual(['Inscripción', 'Toalla']);
    expect(events().slice(before)).toEqual([
      ['subscription.invoice_item_added', sub.id],
      ['subscription.invoice_item_added', sub.id],
    ]);
    // A failed renewal keeps them pending; the recovered charge takes them.
    const failed = await s.api('POST', `/test_helpers/subscriptions/${sub.id}/advance`, { body: { outcome: 'failed' } });
    expect(failed.body.pending_invoice_items).toHaveLength(2);
    clock.set(Date.parse(failed.body.next_retry_at));
    await s.api('POST', `/test_helpers/subscriptions/${sub.id}/advance`, { body: { outcome: 'succeeded' } });
    const after = (await s.api('GET', `/subscriptions/${sub.id}`)).body;
    expect(after).toMatchObject({ status: 'active', pending_invoice_items: [] });
    const renewal = (await s.api('GET', `/checkouts/${after.latest_checkout_id}`)).body;
    expect(renewal).toMatchObject({ status: 'paid', amount_in_cents: 10000 + 2 * 2500 + 5000 + 500 });
    // The renewal after that charges the recurring lines only.
    clock.set(Date.parse(after.current_period_end));
    expect(runDue()).toBe(1);
    const next = (await s.api('GET', `/subscriptions/${sub.id}`)).body;
    expect((await s.api('GET', `/checkouts/${next.latest_checkout_id}`)).body.amount_in_cents).toBe(15000);
  });

  it('removes an item: subscription.item_removed once; no longer charged; removing it again is 400', async () => {
    const current = (await s.api('GET', `/subscriptions/${sub.id}`)).body;
    const itemId = current.items[0].id;
    const before = events().length;
    const r = await patch({ remove_items: [itemId] });
    expect(r.status).toBe(200);
    expect(r.body.items).toEqual([]);
    expect(events().slice(before)).toEqual([['subscription.item_removed', sub.id]]);
    expect(lastPayload('subscription.item_removed')).toMatchObject({ item: { id: itemId, removed_at: expect.any(String) } });
    expect((await patch({ remove_items: [itemId] })).status).toBe(400);
    clock.set(Date.parse(current.current_period_end));
    expect(runDue()).toBe(1);
    const next = (await s.api('GET', `/subscriptions/${sub.id}`)).body;
    expect((await s.api('GET', `/checkouts/${next.latest_checkout_id}`)).body.amount_in_cents).toBe(10000);
    expect(events().slice(before)).toHaveLength(1);
  });

  it('general updates (card, customer): subscription.update once, none when nothing differs; renewals use the new card', async () => {
    const before = events().length;
    const r = await patch({ card: { network: 'mastercard', last4: '5454' }, customer_id: otherCustomer });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ card: { network: 'mastercard', last4: '5454' }, customer_id: otherCustomer });
    expect(events().slice(before)).toEqual([['subscription.update', sub.id]]);
    expect(lastPayload('subscription.update')).toMatchObject({ changed: ['card', 'customer_id'], subscription: { card: { last4: '5454' } } });
    expect((await patch({ card: { network: 'mastercard', last4: '5454' } })).status).toBe(200);
    expect(events().slice(before)).toHaveLength(1);
  });

  it('status still pauses; a canceled subscription takes no changes (422) unless reactivated in the same request', async () => {
    expect((await patch({ status: 'paused' })).body.status).toBe('paused');
    expect((await patch({ status: 'active' })).body.status).toBe('active');
    await s.api('DELETE', `/subscriptions/${sub.id}`);
    const before = events().length;
    const refused = await patch({ invoice_items: [{ description: 'x', amount_in_cents: 100 }] });
    expect(refused.status).toBe(422);
    expect(refused.body.code).toBe('subscription_transition_invalid');
    expect(events().length).toBe(before);
    const both = await patch({ status: 'active', invoice_items: [{ description: 'Reingreso', amount_in_cents: 1000 }] });
    expect(both.status).toBe(200);
    expect(both.body).toMatchObject({ status: 'active', pending_invoice_items: [{ description: 'Reingreso' }] });
    expect(events().slice(before)).toEqual([
      ['subscription.reactivate', sub.id],
      ['subscription.invoice_item_added', sub.id],
    ]);
  });
});
