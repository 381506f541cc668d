import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ManualClock } from '../helpers/manual-clock.js';

/**
 * Where the hosted reference is silent and real clients send something plausible (issue 34;
 * docs/compatibility.md "Where the hosted reference is silent"): a refund named by the unified
 * intent with an amount, and `GET /intents` listed by time.
 */

const T0 = Date.parse('2026-03-02T15:00:00.000Z');
const clock = new ManualClock(T0);
let s: TestServer;

beforeAll(async () => {
  s = await startTestServer({ clock });
});

afterAll(async () => {
  await s?.stop();
});

async function paidCheckout(amount: number, key?: string): Promise<{ checkout_id: string; payment_intent_id: string; intent_id: string }> {
  const ch = await s.api('POST', '/checkouts', { key, body: { items: [{ name: 'Mesa', amount_in_cents: amount, currency: 'GTQ' }] } });
  expect(ch.status, JSON.stringify(ch.body)).toBe(201);
  const paid = await s.api('POST', `/test_helpers/checkouts/${ch.body.id}/pay`, { key, body: { method: 'card', outcome: 'succeeded' } });
  expect(paid.status, JSON.stringify(paid.body)).toBe(200);
  const got = (await s.api('GET', `/checkouts/${ch.body.id}`, { key })).body;
  return { checkout_id: ch.body.id, payment_intent_id: got.payment_intent_id, intent_id: got.latest_intent.id };
}

const refundCount = () => (s.daemon.ctx.db.prepare('SELECT count(*) AS n FROM refunds').get() as { n: number }).n;

describe('POST /refunds {intent_id, amount_in_cents}', () => {
  it('refunds the whole payment named by its unified intent; a partial amount is refused and changes nothing', async () => {
    const p = await paidCheckout(12000);
    const before = refundCount();
    const partial = await s.api('POST', '/refunds', { body: { intent_id: p.intent_id, amount_in_cents: 5000 } });
    expect(partial.status).toBe(422);
    expect(partial.body).toMatchObject({ code: 'partial_refund_unsupported', errors: { amount_in_cents: [expect.stringContaining('12000')] } });
    expect(refundCount()).toBe(before);
    expect((await s.api('GET', `/checkouts/${p.checkout_id}`)).body.status).toBe('paid');

    const full = await s.api('POST', '/refunds', { body: { intent_id: p.intent_id, amount_in_cents: 12000 } });
    expect(full.status, JSON.stringify(full.body)).toBe(201);
    expect(full.body).toMatchObject({
      payment_intent_id: p.payment_intent_id,
      intent_id: p.intent_id,
      amount_in_cents: 12000,
      customer_refunded_amount_in_cents: 12000,
    });
    expect(refundCount()).toBe(before + 1);
  });

  it('takes a pa_ in intent_id, refuses two ids naming different payments or none, and answers an unknown intent 404', async () => {
    const a = await paidCheckout(3000);
    const b = await paidCheckout(4000);
    const before = refundCount();
    const mismatch = await s.api('POST', '/refunds', { body: { payment_intent_id: a.payment_intent_id, intent_id: b.intent_id } });
    expect(mismatch.status).toBe(400);
    expect(mismatch.body.errors).toHaveProperty('intent_id');
    const none = await s.api('POST', '/refunds', { body: { reason: 'no id' } });
    expect(none.status).toBe(400);
    expect(none.body.errors).toHaveProperty('payment_intent_id');
    const unknown = await s.api('POST', '/refunds', { body: { intent_id: 'in_nope0000' } });
    expect(unknown.status).toBe(404);
    const stringAmount = await s.api('POST', '/refunds', { body: { intent_id: a.intent_id, amount_in_cents: 'all' } });
    expect(stringAmount.status).toBe(400);
    expect(refundCount()).toBe(before);
    const same = await s.api('POST', '/refunds', { body: { payment_intent_id: a.payment_intent_id, intent_id: a.intent_id } });
    expect(same.status).toBe(201);
    const byPa = await s.api('POST', '/refunds', { body: { intent_id: b.payment_intent_id } });
    expect(byPa.status).toBe(201);
    expect(byPa.body.payment_intent_id).toBe(b.payment_intent_id);
  });
});

describe('GET /intents', () => {
  it('lists the intents as GET /intents/{id} answers them, newest first, paged, filtered by time, status and type', async () => {
    const base = Date.parse('2026-04-01T10:00:00.000Z');
    const made: string[] = [];
    for (let i = 0; i < 3; i++) {
      clock.set(base + i * 3_600_000);
      made.push((await paidCheckout(1000 + i)).intent_id);
    }
    const all = await s.api('GET', '/intents?items=100&from_time=2026-04-01');
    expect(all.status).toBe(200);
    expect(all.body.map((d: { id: string }) => d.id)).toEqual([...made].reverse());
    expect(all.body[0]).toEqual((await s.api('GET', `/intents/${made[2]}`)).body);
    expect(all.headers['total-count']).toBe('3');

    const paged = await s.api('GET', '/intents?items=2&page=2&from_time=2026-04-01');
    expect(paged.body.map((d: { id: string }) => d.id)).toEqual([made[0]]);
    expect(paged.headers['total-pages']).toBe('2');
    const window = await s.api('GET', '/intents?from_time=2026-04-01T10:30:00Z&until_time=2026-04-01T11:30:00Z');
    expect(window.body.map((d: { id: string }) => d.id)).toEqual([made[1]]);
    const failed = await s.api('GET', '/intents?status=failed&from_time=2026-04-01');
    expect(failed.body).toEqual([]);
    const payments = await s.api('GET', '/intents?type=payment&status=succeeded&from_time=2026-04-01');
    expect(payments.body).toHaveLength(3);

    // The live key lists the live account's own, none of the sandbox's; bad filters are 400.
    const live = await s.api('GET', '/intents?from_time=2026-04-01', { key: s.installation.keys.live });
    expect(live.status).toBe(200);
    expect(live.body).toEqual([]);
    expect((await s.api('GET', '/intents?status=done')).status).toBe(400);
    expect((await s.api('GET', '/intents?from_time=yesterday')).status).toBe(400);
    expect((await s.api('GET', '/intents?colour=red')).status).toBe(400);
  });
});
