import { afterAll, beforeAll, expect, it } from 'vitest';
import { tx } from '../../src/db/database.js';
import type { TestServer } from '../helpers/server.js';
import { connectWsTerminal, type ScriptedTerminal } from '../terminals/helpers/scripted-terminal.js';
import { posdExit, requireBuild } from './e2e/processes.js';
import { addStoreAccount, http, removeDir, startCentral, startStore, type TestStore, appliedAtCentral, until } from './helpers.js';

/**
 * Cards stored offline at a store, as the central learns them, over real HTTP (the store's sync
 * worker against a real central) and a real terminal link: nothing of a card is pushed while it
 * waits (the central has no intent for it, and reconciliation is equal all the same); each final
 * state (approved, declined later, expired) arrives as the payment's `terminal_payment` record, its
 * `intent.*` events and one `stored_payment` record, applied once, and reconciliation compares them.
 */
const cleanup: Array<() => Promise<void> | void> = [];
let central: TestServer;
let store: TestStore;
let key: string;
let terminal: ScriptedTerminal;
const today = new Date().toISOString().slice(0, 10);

const synced = () => appliedAtCentral(store, 20_000);
const reconcile = async () => {
  const r = await posdExit(['reconcile', '--date', today, '--json', '--data', store.dataDir]);
  return { code: r.code, result: r.stdout ? JSON.parse(r.stdout) : undefined, stderr: r.stderr };
};

beforeAll(async () => {
  requireBuild();
  central = await startCentral();
  cleanup.push(() => central.stop());
  const acct = addStoreAccount(central);
  key = acct.key;
  store = await startStore(central.url, acct.key);
  cleanup.push(() => removeDir(store.dataDir));
  cleanup.push(() => store.stop());
  const t = await http('POST', `${store.url}/api/terminals`, key, { name: 'Till 1' });
  expect(t.status).toBe(201);
  terminal = await connectWsTerminal(store.url, t.body.id, t.body.pairing_token);
  cleanup.push(() => terminal.close());
  expect(await terminal.hello({ protocol: 2 })).toMatchObject({ type: 'welcome', protocol: 2 });
}, 60_000);
afterAll(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

async function storeOne(amount: number, reference: string): Promise<{ id: string; checkoutId: string; paymentIntentId: string; intentId: string }> {
  const c = await http('POST', `${store.url}/api/terminal_session_commands`, key, {
    terminal_id: terminal.terminalId,
    external_id: reference,
    amount_in_cents: amount,
    currency: 'GTQ',
  });
  expect(c.status).toBe(201);
  await terminal.next('charge', (m) => m.command_id === c.body.id);
  await terminal.ack(c.body.id);
  await terminal.result(c.body.id, 'stored', { offline_reference: reference });
  await terminal.next('result_ack', (m) => m.command_id === c.body.id);
  const checkout = (await http('GET', `${store.url}/api/checkouts/${c.body.checkout_id}`, key)).body;
  const pa = (await http('GET', `${store.url}/api/payment_intents/${checkout.payment_intent_id}`, key)).body;
  expect(pa.status).toBe('pending');
  return { id: c.body.id, checkoutId: checkout.id, paymentIntentId: pa.id, intentId: pa.intent_id };
}

it('the central learns each stored card once it is final, never while it waits, and reconciliation agrees', async () => {
  const sales = { ok: await storeOne(2_000, 'S-ok'), no: await storeOne(3_000, 'S-no'), late: await storeOne(4_000, 'S-late') };
  await synced();
  // Waiting: the central has the intent.pending events, but no payment, intent or stored payment yet.
  for (const s of Object.values(sales)) expect((await http('GET', `${central.url}/api/intents/${s.intentId}`, key)).status).toBe(404);
  expect(central.daemon.ctx.db.prepare('SELECT COUNT(*) AS n FROM central_stored_payments').get()).toEqual({ n: 0 });
  expect(central.daemon.ctx.db.prepare("SELECT COUNT(*) AS n FROM events WHERE type = 'intent.pending'").get()).toEqual({ n: 3 });
  const waiting = await reconcile();
  expect(waiting.code, waiting.stderr).toBe(0);
  expect(waiting.result.state).toBe('equal');

  for (const [s, ref, outcome] of [
    [sales.ok, 'S-ok', 'approved'],
    [sales.no, 'S-no', 'declined'],
    [sales.late, 'S-late', 'expired'],
  ] as const) {
    await terminal.forward(s.id, ref, outcome);
    await terminal.next('forward_ack', (a) => a.offline_reference === ref);
  }
  await synced();

  // The payments and intents are the store's, at the central.
  const at = async (base: string, path: string) => (await http('GET', `${base}/api${path}`, key)).body;
  for (const [s, status] of [
    [sales.ok, 'succeeded'],
    [sales.no, 'failed'],
    [sales.late, 'failed'],
  ] as const) {
    const mine = await at(store.url, `/payment_intents/${s.paymentIntentId}`);
    expect(mine.status).toBe(status);
    expect(await at(central.url, `/payment_intents/${s.paymentIntentId}`)).toEqual(mine);
    expect((await at(central.url, `/intents/${s.intentId}`)).status).toBe(status);
  }
  expect((await at(central.url, `/payment_intents/${sales.no.paymentIntentId}`)).failure_reason).toBe('insufficient_funds');
  // The events under the store's ids: one pending and one outcome per sale.
  const eventsQ = "SELECT id, type FROM events WHERE type LIKE 'intent.%' ORDER BY id";
  expect(central.daemon.ctx.db.prepare(eventsQ).all()).toEqual(store.daemon.ctx.db.prepare(eventsQ).all());
  expect(central.daemon.ctx.db.prepare("SELECT type, COUNT(*) AS n FROM events WHERE type LIKE 'intent.%' GROUP BY type ORDER BY type").all()).toEqual([
    { type: 'intent.failed', n: 2 },
    { type: 'intent.pending', n: 3 },
    { type: 'intent.succeeded', n: 1 },
  ]);
  // The stored payments' final states, with the store they came from.
  const kept = central.daemon.ctx.db
    .prepare(
      'SELECT offline_reference AS ref, status, amount_in_cents, checkout_id, payment_intent_id, origin_store_id, reason FROM central_stored_payments ORDER BY amount_in_cents',
    )
    .all();
  expect(kept).toEqual([
    {
      ref: 'S-ok',
      status: 'approved',
      amount_in_cents: 2_000,
      checkout_id: sales.ok.checkoutId,
      payment_intent_id: sales.ok.paymentIntentId,
      origin_store_id: store.storeId,
      reason: null,
    },
    {
      ref: 'S-no',
      status: 'declined',
      amount_in_cents: 3_000,
      checkout_id: sales.no.checkoutId,
      payment_intent_id: sales.no.paymentIntentId,
      origin_store_id: store.storeId,
      reason: 'insufficient_funds',
    },
    {
      ref: 'S-late',
      status: 'expired',
      amount_in_cents: 4_000,
      checkout_id: sales.late.checkoutId,
      payment_intent_id: sales.late.paymentIntentId,
      origin_store_id: store.storeId,
      reason: null,
    },
  ]);

  // Applied once: the same record again (a push repeated after a lost answer) changes nothing.
  const record = store.daemon.ctx.db.prepare("SELECT * FROM sync_outbox WHERE kind = 'stored_payment' ORDER BY seq LIMIT 1").get() as {
    id: string;
    account_id: string;
    live_mode: number;
    kind: string;
    payload: string;
    created_at: string;
  };
  const apply = central.daemon.ctx.registry.sync.applier('stored_payment')!;
  const push = {
    id: record.id,
    kind: record.kind,
    account_id: record.account_id,
    live_mode: record.live_mode === 1,
    payload: JSON.parse(record.payload),
    created_at: record.created_at,
  };
  tx(central.daemon.ctx.db, () => apply(central.daemon.ctx, push as never, { storeId: store.storeId, keyAccountId: record.account_id }));
  expect(central.daemon.ctx.db.prepare('SELECT COUNT(*) AS n FROM central_stored_payments').get()).toEqual({ n: 3 });

  // Reconciliation compares the records (count and amount) and the intents on both sides; "not
  // compared yet" (exit 2) while the central has still to apply a record of the day.
  const done = await until(
    'the day compared',
    async () => {
      const r = await reconcile();
      return r.code === 2 ? undefined : r;
    },
    20_000,
  );
  expect(done.code, done.stderr).toBe(0);
  expect(done.result.state).toBe('equal');
  const row = (measure: string) => done.result.rows.find((r: { measure: string; currency: string }) => r.measure === measure && r.currency === 'GTQ');
  expect(row('records.stored_payment')).toMatchObject({ store_count: 3, central_count: 3, store_sum: 9_000, central_sum: 9_000 });
  expect(row('intents.payment.failed')).toMatchObject({ store_count: 2, central_count: 2, store_sum: 7_000, central_sum: 7_000 });
}, 90_000);
