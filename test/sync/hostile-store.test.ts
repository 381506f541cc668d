import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../helpers/server.js';
import { addStoreAccount, appliedAtCentral, http, pairStoreAndCentral, pushAndProject, startCentral, type TestStore } from './helpers.js';
import { applyHeldRecords, projected } from '../../src/sync/central/projector.js';
import { centralSide } from '../../src/sync/central/sync-store.js';
import { tableRows } from './replay.js';
import { forgedCashSale, wireRecord, type OutboxRow, type WireRecord } from './wire-records.js';

// Issue 32: a store box is untrusted input. Each class of hostile record a compromised or buggy box
// could push (measured applied before: a 1e12-cent payment, 1e15 and 2^53+1 cash sales, currency
// XXX; negative, zero and 12.5 stopped only by a constraint; a huge seq wedging the stream) is
// refused with a code and the field, nothing the central holds changes, and the box's next honest
// record applies. Templates are real records made by a real store box.
const cleanup: Array<() => Promise<void> | void> = [];
let central: TestServer;
let store: TestStore;
let acct: ReturnType<typeof addStoreAccount>;
let other: ReturnType<typeof addStoreAccount>;
let template: WireRecord;

beforeAll(async () => {
  ({ central, store, acct } = await pairStoreAndCentral(cleanup));
  other = addStoreAccount(central, 'Another store');
  const sale = await http('POST', `${store.url}/api/cash_sales`, acct.key, { amount_in_cents: 1500, currency: 'GTQ', description: 'Honest' });
  expect(sale.status).toBe(201);
  await appliedAtCentral(store);
  template = wireRecord(store.daemon.ctx.db.prepare("SELECT * FROM sync_outbox WHERE kind = 'cash_sale' ORDER BY seq LIMIT 1").get() as OutboxRow);
}, 60_000);
afterAll(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

let n = 0;
/** A cash sale like the template under fresh ids, with `change` applied to its payload. */
function cashSale(change?: (p: Record<string, any>) => void, over: Record<string, unknown> = {}) {
  return forgedCashSale(template, 'hostile', ++n, change, over as Partial<WireRecord>);
}

/** What must not move: the central's money and the rows a sale writes. */
const snapshot = () => ({
  ledger: tableRows(central, 'SELECT * FROM balance_transactions ORDER BY id'),
  intents: tableRows(central, "SELECT id, amount_in_cents, currency FROM intents WHERE id LIKE 'int_hostile%' ORDER BY id"),
  checkouts: tableRows(central, "SELECT id FROM checkouts WHERE id LIKE 'chk_hostile%' ORDER BY id"),
});

let seq = 0;
async function pushOne(storeId: string, record: Record<string, unknown>, key = acct.key) {
  const res = await pushAndProject(central, key, { store_id: storeId, records: [{ seq: seq + 1, prev_seq: seq, ...record } as unknown as { id: string }] });
  if (res.status === 200) seq += 1;
  return res;
}

describe('a hostile store box', () => {
  it('has each class of bad record refused with code and field, nothing moved, and its next honest record applied', async () => {
    const storeId = 'store_hostile1';
    const cases: Array<[string, ReturnType<typeof cashSale>, string, string]> = [
      ['1e15 cents', cashSale((p) => (p.sale.amount_in_cents = 1e15)), 'amount_out_of_range', 'payload.sale.amount_in_cents'],
      ['2^53+1 cents', cashSale((p) => (p.sale.amount_in_cents = 2 ** 53 + 2)), 'amount_out_of_range', 'payload.sale.amount_in_cents'],
      ['currency XXX', cashSale((p) => (p.sale.currency = 'XXX')), 'invalid_currency', 'payload.sale.currency'],
      ['negative', cashSale((p) => (p.sale.amount_in_cents = -1500)), 'amount_out_of_range', 'payload.sale.amount_in_cents'],
      ['zero', cashSale((p) => (p.sale.amount_in_cents = 0)), 'amount_out_of_range', 'payload.sale.amount_in_cents'],
      ['12.5', cashSale((p) => (p.sale.amount_in_cents = 12.5)), 'amount_out_of_range', 'payload.sale.amount_in_cents'],
      ['a day in the future', cashSale(() => {}, { created_at: new Date(Date.now() + 86_400_000).toISOString() }), 'record_in_future', 'created_at'],
      ['before the account existed', cashSale(() => {}, { created_at: '2001-01-01T00:00:00.000Z' }), 'record_before_join', 'created_at'],
      ['without its sale', cashSale((p) => delete p.sale), 'invalid_payload', 'payload.sale'],
    ];
    const before = snapshot();
    for (const [what, record, code, field] of cases) {
      const res = await pushOne(storeId, record);
      expect(res.status, what).toBe(200);
      const outcome = tableRows<{ outcome: string; reason: string }>(central, 'SELECT outcome, reason FROM sync_received WHERE id = ?', record.id)[0];
      expect(outcome.outcome, what).toBe('rejected');
      expect(outcome.reason, what).toContain(`${code} (${field})`);
      // The box is told, in its feed only.
      const told = tableRows<{ payload: string }>(central, "SELECT payload FROM sync_feed WHERE kind = 'record_rejected' AND object_id = ?", record.id);
      expect(JSON.parse(told[0].payload), what).toMatchObject({ code, field, store_id: storeId });
    }
    // A 1e12-cent checkout payment is refused at receipt, before any applier could pay it out.
    const payment = {
      id: 'sync_hostile_pay',
      kind: 'checkout_payment',
      account_id: acct.accountId,
      live_mode: true,
      created_at: new Date().toISOString(),
      payload: {
        payment_intent: {
          id: 'pi_hostile1',
          intent_id: 'int_hostilepay',
          checkout_id: 'chk_hostilepay',
          amount_in_cents: 1e12,
          currency: 'GTQ',
          status: 'succeeded',
        },
        checkout: { id: 'chk_hostilepay', items: [] },
        intent: {},
        balance_transaction: { id: 'txn_hostile1', amount_in_cents: 1e12, fee_in_cents: -1000, currency: 'GTQ' },
      },
    };
    const paid = await pushOne(storeId, payment);
    expect(paid.status).toBe(200);
    expect(tableRows<{ reason: string }>(central, 'SELECT reason FROM sync_received WHERE id = ?', payment.id)[0].reason).toContain(
      'amount_out_of_range (payload.payment_intent.amount_in_cents)',
    );
    // A refund of a payment the central does not hold under this account is refused at projection.
    const refund = {
      id: 'sync_hostile_refund',
      kind: 'refund',
      account_id: acct.accountId,
      live_mode: true,
      created_at: new Date().toISOString(),
      payload: {
        refund: {
          id: 'ref_hostile1',
          payment_intent_id: 'pi_nowhere',
          intent_id: 'int_nowhere',
          amount_in_cents: 500,
          currency: 'GTQ',
          created_at: new Date().toISOString(),
        },
        balance_transaction: null,
      },
    };
    expect((await pushOne(storeId, refund)).body.rejected).toEqual([
      { id: refund.id, reason: expect.stringContaining('unknown_reference (payload.refund.payment_intent_id)') },
    ]);

    expect(snapshot()).toEqual(before);
    const balance = await http('GET', `${central.url}/api/balances`, acct.key);

    // A seq past the received seq + batch length is a 400 naming the field, and nothing is taken ...
    const huge = await http('POST', `${central.url}/sync/push`, acct.key, {
      protocol: 1,
      store_id: storeId,
      records: [{ seq: 9007199254741002, prev_seq: seq, ...cashSale() }],
    });
    expect(huge.status).toBe(400);
    expect(JSON.stringify(huge.body)).toContain('seq');
    const far = await http('POST', `${central.url}/sync/push`, acct.key, {
      protocol: 1,
      store_id: storeId,
      records: [{ seq: seq + 2_000_000, prev_seq: seq, ...cashSale() }],
    });
    expect(far.status).toBe(400);
    expect(far.body.errors).toHaveProperty('records.0.seq');
    // ... a record naming another store's account is refused whole, as before ...
    const foreign = await http('POST', `${central.url}/sync/push`, acct.key, {
      protocol: 1,
      store_id: storeId,
      records: [{ seq: seq + 1, prev_seq: seq, ...cashSale(() => {}, { account_id: other.accountId }) }],
    });
    expect(foreign.status).toBe(403);
    // ... and a conflicting record at a seq the central holds says what it holds there.
    const conflict = await http('POST', `${central.url}/sync/push`, acct.key, {
      protocol: 1,
      store_id: storeId,
      records: [{ seq: 1, prev_seq: 0, ...cashSale() }],
    });
    expect(conflict.status).toBe(409);
    expect(conflict.body.message).toContain('the central holds record sync_hostile1');

    // The stream is not wedged: the box's next honest record applies.
    const honest = cashSale();
    const ok = await pushOne(storeId, honest);
    expect(ok.status).toBe(200);
    expect(ok.body.rejected).toEqual([]);
    expect(tableRows(central, 'SELECT id, amount_in_cents FROM intents WHERE id = ?', honest.payload.sale.id)).toEqual([
      { id: honest.payload.sale.id, amount_in_cents: 1500 },
    ]);
    // Cash sales post no ledger row: the balance is what it was.
    expect((await http('GET', `${central.url}/api/balances`, acct.key)).body).toEqual(balance.body);

    // The central shows the refusals per store: /sync/stores and /metrics.
    const stores = await http('GET', `${central.url}/sync/stores`, acct.key);
    expect(stores.body.find((s: { store_id: string }) => s.store_id === storeId)).toMatchObject({ rejected_records: cases.length + 2 });
    const metrics = await fetch(`${central.url}/metrics`).then((r) => r.text());
    expect(metrics).toContain(`posd_sync_store_records{store_id="${storeId}",outcome="rejected"} ${cases.length + 2}`);
  }, 120_000);
});

describe('money past the review thresholds', () => {
  it('is held for review (the stream goes on), then released or rejected by an operator, audited', async () => {
    const c = await startCentral({ config: { sync: { review: { per_record_cents: 2000, per_day_cents: 4000 } } } });
    cleanup.push(() => c.stop());
    const a = addStoreAccount(c, 'Reviewed store');
    let s = 0;
    const push = async (amount: number) => {
      const r = cashSale((p) => (p.sale.amount_in_cents = amount), { account_id: a.accountId });
      const res = await pushAndProject(c, a.key, { store_id: 'store_review1', records: [{ seq: s + 1, prev_seq: s, ...r } as unknown as { id: string }] });
      expect(res.status).toBe(200);
      s += 1;
      return {
        id: r.id,
        intent: r.payload.sale.id as string,
        outcome: tableRows<{ outcome: string; reason: string }>(c, 'SELECT outcome, reason FROM sync_received WHERE id = ?', r.id)[0],
      };
    };
    const intentOf = (id: string) => tableRows(c, 'SELECT id FROM intents WHERE id = ?', id).length;
    const first = await push(1500);
    expect(first.outcome.outcome).toBe('applied');
    const big = await push(2500);
    expect(big.outcome).toMatchObject({
      outcome: 'held',
      reason: expect.stringContaining('review: held_for_review (payload): 2500 GTQ cents is over sync.review.per_record_cents'),
    });
    expect(intentOf(big.intent)).toBe(0);
    // The stream goes on past it; the day's sum reaches its threshold on the third sale.
    const second = await push(1500);
    expect(second.outcome.outcome).toBe('applied');
    const third = await push(1500);
    expect(third.outcome.reason).toContain('over sync.review.per_day_cents (4000)');
    expect(intentOf(third.intent)).toBe(0);
    // The held sweep passes records held for review by.
    applyHeldRecords(c.daemon.ctx);
    expect(
      centralSide(c.daemon.ctx.db)
        .inReview('store_review1', 10)
        .map((r) => r.id),
    ).toEqual([big.id, third.id]);

    // An operator releases one: applied past the thresholds, the reason kept.
    expect(centralSide(c.daemon.ctx.db).releaseReview(big.id, 'checked with the store manager', new Date().toISOString())).toBe(true);
    applyHeldRecords(c.daemon.ctx);
    await projected(c.daemon.ctx);
    expect(tableRows(c, 'SELECT outcome, note FROM sync_received WHERE id = ?', big.id)).toEqual([
      { outcome: 'applied', note: 'checked with the store manager' },
    ]);
    expect(intentOf(big.intent)).toBe(1);
    // ... and rejects the other: refused for good, nothing applied.
    expect(centralSide(c.daemon.ctx.db).rejectReview(third.id, 'review_rejected (payload): not a sale', 'not a sale', new Date().toISOString())).toBe(true);
    applyHeldRecords(c.daemon.ctx);
    expect(tableRows(c, 'SELECT outcome FROM sync_received WHERE id = ?', third.id)).toEqual([{ outcome: 'rejected' }]);
    expect(intentOf(third.intent)).toBe(0);
  }, 60_000);
});
