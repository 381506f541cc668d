import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../helpers/server.js';
import { addStoreAccount, pushAndProject, startCentral } from './helpers.js';
import { tableRows } from './replay.js';

/**
 * Issue 32, the hostile-store suite continued kind by kind: what needs the central's state (the
 * referenced object exists and is the pushing store's, the object's machine allows the step, a
 * payload's own time neither after its record nor before the store) is checked at projection. Each
 * hostile record is refused with its code and field, nothing the central holds moves, and the
 * store's next honest record applies. The objects another store owns are made by that store's own
 * honest pushes.
 */
const cleanup: Array<() => Promise<void> | void> = [];
let central: TestServer;
let a: ReturnType<typeof addStoreAccount>;
let b: ReturnType<typeof addStoreAccount>;

beforeAll(async () => {
  central = await startCentral();
  cleanup.push(() => central.stop());
  a = addStoreAccount(central, 'Store A');
  b = addStoreAccount(central, 'Store B');
});
afterAll(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const seqs = new Map<string, number>();
let n = 0;
/** Pushes one record on a store's stream and projects it; returns its outcome at the central. */
async function push(
  c: TestServer,
  storeId: string,
  key: string,
  accountId: string,
  kind: string,
  payload: Record<string, unknown>,
  createdAt = new Date().toISOString(),
) {
  const seq = (seqs.get(storeId) ?? 0) + 1;
  const id = `sync_hkind${++n}`;
  const res = await pushAndProject(c, key, {
    store_id: storeId,
    records: [{ seq, prev_seq: seq - 1, id, kind, account_id: accountId, live_mode: true, payload, created_at: createdAt }],
  });
  expect(res.status).toBe(200);
  seqs.set(storeId, seq);
  return { id, ...tableRows<{ outcome: string; reason: string | null }>(c, 'SELECT outcome, reason FROM sync_received WHERE id = ?', id)[0] };
}

function cashSale(accountId: string, extra: { amount?: number; checkoutId?: string; at?: string } = {}) {
  const i = ++n;
  const at = extra.at ?? new Date().toISOString();
  const amount = extra.amount ?? 1500;
  const checkoutId = extra.checkoutId ?? `chk_hk${i}`;
  return {
    sale: {
      id: `int_hk${i}`,
      amount_in_cents: amount,
      currency: 'GTQ',
      created_at: at,
      checkout: { id: checkoutId },
      description: 'Sale',
      customer_id: null,
      tax_id: null,
      tax_invoice_url: null,
    },
    cash_intent: {
      id: `ci_hk${i}`,
      account_id: accountId,
      live_mode: 1,
      intent_id: `int_hk${i}`,
      checkout_id: checkoutId,
      amount_in_cents: amount,
      currency: 'GTQ',
      description: 'Sale',
      tax_id: null,
      customer_id: null,
      created_at: at,
    },
    intent: { created_at: at },
  };
}

function coupon(id: string, accountId: string) {
  return {
    id,
    account_id: accountId,
    name: `SAVE${id}`,
    discount_mode: 'code',
    display_name: null,
    amount_off_in_cents: 500,
    percent_off: null,
    automatically_applies: false,
    max_redemptions: null,
    times_redeemed: 0,
    currency: 'GTQ',
    duration: 'once',
    duration_in_payments: null,
    minimum_amount_in_cents: null,
    once_per_customer: false,
    product_ids: [],
    starts_at: null,
    expires_at: null,
    status: 'active',
    live_mode: true,
    created_at: new Date().toISOString(),
  };
}

/** What must not move: the central's money and every row the kinds below write. */
const snapshot = () =>
  Object.fromEntries(
    [
      'balance_transactions',
      'intents',
      'checkouts',
      'cash_intents',
      'balance_payments',
      'coupons',
      'coupon_redemptions',
      'subscriptions',
      'sched_bookings',
      'disputes',
      'bank_accounts',
      'contracts',
      'accounts',
      'connected_profiles',
    ].map((t) => [t, tableRows(central, `SELECT * FROM ${t} ORDER BY rowid`)]),
  );

describe('a hostile store box, kind by kind', () => {
  it('has each record naming what is not its own, or dated outside its store, refused at projection; its next honest record applies', async () => {
    // Store B's own honest objects: a cash sale's checkout and a coupon.
    const bSale = cashSale(b.accountId);
    expect((await push(central, 'store_hk_b', b.key, b.accountId, 'cash_sale', bSale)).outcome).toBe('applied');
    expect((await push(central, 'store_hk_b', b.key, b.accountId, 'coupon', coupon('cpn_hk_b', b.accountId))).outcome).toBe('applied');
    const now = new Date().toISOString();
    const payer = {
      id: 'pi_hk_bal',
      intent_id: 'int_hk_bal',
      checkout_id: 'chk_hk_bal',
      amount_in_cents: 1500,
      currency: 'GTQ',
      status: 'succeeded',
      method: 'balance',
    };
    // Store A's own withdrawal account, archived: it stays archived at the central.
    const bank = (change: string, status: string, preferred: boolean) => ({
      change,
      bank_account: {
        id: 'ba_hk_a',
        number: '000123',
        holder_name: 'Store A',
        bank_name: 'Banco',
        bank_code: '01',
        account_type: 'monetaria',
        currency: 'GTQ',
        is_preferred: preferred,
        status,
        live_mode: true,
        created_at: now,
        archived_at: status === 'archived' ? now : null,
      },
    });
    expect((await push(central, 'store_hk_a', a.key, a.accountId, 'bank_account', bank('created', 'active', true))).outcome).toBe('applied');
    expect((await push(central, 'store_hk_a', a.key, a.accountId, 'bank_account', bank('archived', 'archived', false))).outcome).toBe('applied');
    const cases: Array<[string, string, Record<string, unknown>, string, string]> = [
      [
        'a cash sale on another store’s checkout',
        'cash_sale',
        cashSale(a.accountId, { checkoutId: bSale.sale.checkout.id }),
        'foreign_reference',
        'payload.sale.checkout.id',
      ],
      [
        'a cash sale dated before the store',
        'cash_sale',
        cashSale(a.accountId, { at: '2001-01-01T00:00:00.000Z' }),
        'record_before_join',
        'payload.sale.created_at',
      ],
      [
        'a balance payment debiting another store’s account',
        'balance_payment',
        {
          payment_intent: payer,
          checkout: { id: 'chk_hk_bal', items: [] },
          intent: {},
          balance_transaction: null,
          payer_account_id: b.accountId,
          payer: {
            balance_payment: {
              id: 'bp_hk1',
              payment_intent_id: payer.id,
              merchant_account_id: a.accountId,
              payer_account_id: b.accountId,
              payer_intent_id: 'int_hk_payer',
              payer_balance_transaction_id: 'txn_hk_payer',
              amount_in_cents: 1500,
              currency: 'GTQ',
              created_at: now,
            },
            intent: { id: 'int_hk_payer', payment_id: 'pay_hk1', created_at: now },
            balance_transaction: { id: 'txn_hk_payer', account_id: b.accountId, amount_in_cents: -1500, fee_in_cents: 0, currency: 'GTQ', created_at: now },
          },
        },
        'foreign_reference',
        'payload.payer_account_id',
      ],
      [
        'a redemption of another store’s coupon',
        'coupon_redemption',
        { id: 'coupred_hk1', coupon_id: 'cpn_hk_b', checkout_id: 'chk_hk_red', customer_id: null, amount_off_in_cents: 500, currency: 'GTQ', created_at: now },
        'unknown_reference',
        'payload.coupon_id',
      ],
      ['a coupon under another store’s coupon id', 'coupon', coupon('cpn_hk_b', a.accountId), 'foreign_reference', 'payload.id'],
      [
        'a subscription of the other environment',
        'subscription',
        { row: { id: 'sub_hk1', live_mode: 0, status: 'active', updated_at: now, current_period_end: now }, item_rows: [], invoice_item_rows: [] },
        'inconsistent_payload',
        'payload.row.live_mode',
      ],
      [
        'a booking of the other environment',
        'booking',
        {
          op: 'create',
          row: { id: 'bk_hk1', live_mode: 0, status: 'confirmed', service_id: 'svc_hk1', updated_at: now },
          occupancy: [],
          refs: { services: [], staff_members: [], resources: [] },
        },
        'inconsistent_payload',
        'payload.row.live_mode',
      ],
      [
        'a dispute holding money of a payment the central does not hold',
        'dispute',
        {
          change: 'created',
          dispute: {
            id: 'dp_hk1',
            payment_intent_id: 'pi_nowhere',
            intent_id: 'int_nowhere',
            status: 'needs_response',
            reason: 'fraudulent',
            amount_in_cents: 1500,
            currency: 'GTQ',
            balance_transaction_id: 'txn_hk_dp',
            created_at: now,
            updated_at: now,
          },
          balance_transactions: [{ id: 'txn_hk_dp', account_id: a.accountId, amount_in_cents: -1500, fee_in_cents: 0, currency: 'GTQ', created_at: now }],
        },
        'unknown_reference',
        'payload.dispute.payment_intent_id',
      ],
      [
        'a withdrawal account made preferred that the central never had',
        'bank_account',
        {
          change: 'preferred_changed',
          bank_account: {
            id: 'ba_hk1',
            number: '000123',
            holder_name: 'Mallory',
            currency: 'GTQ',
            is_preferred: true,
            status: 'active',
            live_mode: true,
            created_at: now,
          },
        },
        'unknown_reference',
        'payload.bank_account.id',
      ],
      [
        'an archived withdrawal account made preferred again',
        'bank_account',
        bank('preferred_changed', 'active', true),
        'transition_not_allowed',
        'payload.bank_account.status',
      ],
      [
        'a contract of the other environment',
        'contract',
        {
          row: { id: 'ctr_hk1', live_mode: 0, template_id: 'ctt_hk1', status: 'sent', body: 'Terms', updated_at: now },
          template: { id: 'ctt_hk1', body: 'Terms' },
        },
        'inconsistent_payload',
        'payload.row.live_mode',
      ],
      [
        'a child connected under another store’s account',
        'connected_account',
        { live_account_id: 'acct_hk_child', sandbox_id: 'acct_hk_childsb', parent_account_id: b.accountId, email: 'child@example.com' },
        'foreign_reference',
        'payload.parent_account_id',
      ],
      [
        'another account’s verification',
        'connected_account_verification',
        { account_id: b.accountId, status: 'verified', document_errors: {} },
        'unknown_reference',
        'payload.account_id',
      ],
    ];
    const before = snapshot();
    for (const [what, kind, payload, code, field] of cases) {
      const r = await push(central, 'store_hk_a', a.key, a.accountId, kind, payload);
      expect(r.outcome, what).toBe('rejected');
      expect(r.reason, what).toContain(`${code} (${field})`);
      const told = tableRows<{ payload: string }>(central, "SELECT payload FROM sync_feed WHERE kind = 'record_rejected' AND object_id = ?", r.id);
      expect(JSON.parse(told[0].payload), what).toMatchObject({ code, field, store_id: 'store_hk_a' });
    }
    expect(snapshot()).toEqual(before);
    // The stream is not wedged: store A's next honest records apply.
    const honest = cashSale(a.accountId);
    expect((await push(central, 'store_hk_a', a.key, a.accountId, 'cash_sale', honest)).outcome).toBe('applied');
    expect(tableRows(central, 'SELECT id FROM intents WHERE id = ?', honest.sale.id)).toEqual([{ id: honest.sale.id }]);
    expect((await push(central, 'store_hk_a', a.key, a.accountId, 'coupon', coupon('cpn_hk_a', a.accountId))).outcome).toBe('applied');
  }, 60_000);
});

describe('the review thresholds', () => {
  it('weigh only records that move money: a stored card payment counts neither alone nor toward the day', async () => {
    const c = await startCentral({ config: { sync: { review: { per_record_cents: 2000, per_day_cents: 3000 } } } });
    cleanup.push(() => c.stop());
    const s = addStoreAccount(c, 'Reviewed store');
    const at = Date.now();
    const iso = (ms: number) => new Date(ms).toISOString();
    const stored = (amount: number) => ({
      id: `sp_hk${++n}`,
      terminal_id: 'trm_hk1',
      command_id: `tsc_hk${n}`,
      checkout_id: `ch_hk${n}`,
      payment_intent_id: null,
      offline_reference: `R-${n}`,
      status: 'declined',
      amount_in_cents: amount,
      currency: 'GTQ',
      card_network: 'visa',
      card_last4: '4242',
      over_cap: null,
      reason: 'declined',
      stored_at: iso(at - 60_000),
      forward_by: iso(at + 3_600_000),
      forwarded_at: iso(at - 1000),
      settled_at: iso(at),
    });
    // Over the per-record threshold, and past the day's with what follows: neither held.
    expect((await push(c, 'store_hk_r', s.key, s.accountId, 'stored_payment', stored(2500))).outcome).toBe('applied');
    expect((await push(c, 'store_hk_r', s.key, s.accountId, 'stored_payment', stored(1500))).outcome).toBe('applied');
    expect((await push(c, 'store_hk_r', s.key, s.accountId, 'cash_sale', cashSale(s.accountId, { amount: 1500 }))).outcome).toBe('applied');
    expect((await push(c, 'store_hk_r', s.key, s.accountId, 'cash_sale', cashSale(s.accountId, { amount: 1000 }))).outcome).toBe('applied');
    // The sales themselves still count: the next one takes the day past 3000.
    const over = await push(c, 'store_hk_r', s.key, s.accountId, 'cash_sale', cashSale(s.accountId, { amount: 1000 }));
    expect(over).toMatchObject({ outcome: 'held', reason: expect.stringContaining('would reach 3500 cents, over sync.review.per_day_cents (3000)') });
  }, 60_000);
});
