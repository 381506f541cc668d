/** What a terminal outcome does to money: checkout, intent, ledger charge with fee, events. */
import { afterEach, expect, it } from 'vitest';
import { startHarness, type Harness } from './helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

function events(h: Harness, type: string) {
  return (h.server.daemon.ctx.db.prepare('SELECT type, payload FROM events WHERE type = ?').all(type) as Array<{ payload: string }>).map((e) =>
    JSON.parse(e.payload),
  );
}

async function run(h: Harness, outcome: 'approved' | 'declined') {
  const created = await h.charge({ amount_in_cents: 10_000, installments: 3 });
  const id = created.body.id;
  await h.terminal.next('charge');
  await h.terminal.ack(id);
  await h.terminal.result(id, outcome);
  await h.terminal.next('result_ack');
  return h.get(id);
}

it('approved: consumed, checkout paid, intent and ledger charge with its fee, intent.succeeded (and the legacy event)', async () => {
  h = await startHarness('websocket');
  // An account on the older format also takes the legacy per-method event.
  h.server.daemon.ctx.db.prepare(`UPDATE accounts SET event_format = 'both' WHERE id = ?`).run(h.server.installation.sandbox_id);
  const done = await run(h, 'approved');
  expect(done).toMatchObject({ status: 'consumed', final: true, checkout_status: 'paid' });

  const checkout = (await h.server.api('GET', `/checkouts/${done.checkout_id}`)).body;
  expect(checkout.status).toBe('paid');
  const intent = (await h.server.api('GET', `/intents/${checkout.latest_intent.id}`)).body;
  expect(intent).toMatchObject({ type: 'payment', status: 'succeeded', amount_in_cents: 10_000, checkout: { id: done.checkout_id, status: 'paid' } });
  expect(intent.details).toMatchObject({ installments: 3 });

  const ledger = (await h.server.api('GET', '/balance_transactions')).body as Array<Record<string, any>>;
  const charges = ledger.filter((r) => r.type === 'charge' && r.amount_in_cents === 10_000);
  expect(charges).toHaveLength(1);
  expect(charges[0].fee_in_cents).toBeLessThan(0);
  expect(charges[0].amount_in_cents + charges[0].fee_in_cents).toBe(charges[0].net_amount_in_cents);

  expect(events(h, 'intent.succeeded').filter((e) => e.checkout?.id === done.checkout_id)).toHaveLength(1);
  expect(events(h, 'payment_intent.succeeded')).toHaveLength(1);

  // The same result again (a lost result_ack) moves no money.
  await h.terminal.result(done.id, 'approved');
  await h.terminal.next('result_ack');
  const after = (await h.server.api('GET', '/balance_transactions')).body as Array<Record<string, any>>;
  expect(after.filter((r) => r.type === 'charge' && r.amount_in_cents === 10_000)).toHaveLength(1);
  expect(events(h, 'intent.succeeded')).toHaveLength(1);
});

it('declined: failed, checkout failed, intent.failed, no ledger row', async () => {
  h = await startHarness('websocket');
  const done = await run(h, 'declined');
  expect(done).toMatchObject({ status: 'failed', final: true, checkout_status: 'failed' });
  const failed = events(h, 'intent.failed');
  expect(failed).toHaveLength(1);
  expect(failed[0]).toMatchObject({ checkout: { id: done.checkout_id } });
  expect(failed[0].details.failure_reason).toBe('insufficient_funds');
  const ledger = (await h.server.api('GET', '/balance_transactions')).body as unknown[];
  expect(ledger).toHaveLength(0);
  expect(events(h, 'intent.succeeded')).toHaveLength(0);
});
