import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TestServer } from '../helpers/server.js';
import { addStoreAccount, http, pushAndProject, startCentral } from './helpers.js';
import { tableRows } from './replay.js';

/**
 * Issue 36: a store's offline-policy changes and stored payments are pushed facts like any other,
 * and a hostile or buggy box's are refused at the central with a code and the field, before they
 * reach its audit or its stored payments: an audit entry dated apart from its record, an account's
 * change without every cap, an override with no end or one past 7 days, a revoke of no override, a
 * terminal another store reported, a stored payment whose amount, currency or times no box writes.
 * The honest changes around them apply, and the central's reads show only those.
 */
const cleanup: Array<() => Promise<void> | void> = [];
let central: TestServer;
let acct: ReturnType<typeof addStoreAccount>;
let other: ReturnType<typeof addStoreAccount>;

beforeAll(async () => {
  central = await startCentral();
  cleanup.push(() => central.stop());
  acct = addStoreAccount(central, 'Store A');
  other = addStoreAccount(central, 'Store B');
});
afterAll(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const seqs = new Map<string, number>();
let n = 0;
/** Pushes one record on a store's stream and projects it; returns its outcome at the central. */
async function push(storeId: string, key: string, accountId: string, kind: string, payload: Record<string, unknown>, createdAt: string) {
  const seq = (seqs.get(storeId) ?? 0) + 1;
  const id = `sync_hoff${++n}`;
  const res = await pushAndProject(central, key, {
    store_id: storeId,
    records: [{ seq, prev_seq: seq - 1, id, kind, account_id: accountId, live_mode: true, payload, created_at: createdAt }],
  });
  expect(res.status).toBe(200);
  seqs.set(storeId, seq);
  return { id, ...tableRows<{ outcome: string; reason: string | null }>(central, 'SELECT outcome, reason FROM sync_received WHERE id = ?', id)[0] };
}

const CAPS = { allowed: true, max_payment_in_cents: 50_000, max_total_in_cents: 500_000, max_count: 100, max_age_hours: 48 };
const iso = (ms: number) => new Date(ms).toISOString();

function change(at: string, extra: Record<string, unknown> = {}) {
  return {
    id: `oa_h${++n}`,
    terminal_id: null,
    action: 'caps_set',
    actor: 'Ana López',
    reason: 'small float',
    before: CAPS,
    after: { ...CAPS, max_count: 5 },
    at,
    ...extra,
  };
}

function stored(at: number, extra: Record<string, unknown> = {}) {
  return {
    id: `sp_h${++n}`,
    terminal_id: 'trm_a1',
    command_id: `tsc_h${n}`,
    checkout_id: `ch_h${n}`,
    payment_intent_id: null,
    offline_reference: `R-${n}`,
    status: 'approved',
    amount_in_cents: 1500,
    currency: 'GTQ',
    card_network: 'visa',
    card_last4: '4242',
    over_cap: null,
    reason: null,
    stored_at: iso(at - 60_000),
    forward_by: iso(at + 47 * 3_600_000),
    forwarded_at: iso(at - 1000),
    settled_at: iso(at),
    ...extra,
  };
}

it("refuses a box's impossible policy changes and stored payments with code and field, and keeps its honest ones", async () => {
  const now = Date.now();
  const at = iso(now);
  const A = (kind: string, payload: Record<string, unknown>, createdAt = at) => push('store_a', acct.key, acct.accountId, kind, payload, createdAt);
  // Another store reports its terminal first.
  const b = await push(
    'store_b',
    other.key,
    other.accountId,
    'offline_policy_change',
    change(at, { action: 'terminal_caps_set', terminal_id: 'trm_b1', before: { max_count: null }, after: { max_count: 2 } }),
    at,
  );
  expect(b.outcome).toBe('applied');

  const cases: Array<[string, string, Record<string, unknown>, string, string]> = [
    ['an audit entry dated a day before its record', 'offline_policy_change', change(iso(now - 86_400_000)), 'inconsistent_payload', 'payload.at'],
    [
      "an account's caps without max_count",
      'offline_policy_change',
      change(at, { after: { ...CAPS, max_count: undefined } }),
      'inconsistent_payload',
      'payload.after.max_count',
    ],
    [
      'an override for 30 days',
      'offline_policy_change',
      change(at, { action: 'override_allow', after: { ...CAPS, until: iso(now + 30 * 86_400_000) } }),
      'inconsistent_payload',
      'payload.after.until',
    ],
    [
      'an override without an end',
      'offline_policy_change',
      change(at, { action: 'override_allow', after: CAPS }),
      'inconsistent_payload',
      'payload.after.until',
    ],
    [
      'an override that stores nothing',
      'offline_policy_change',
      change(at, { action: 'override_allow', after: { ...CAPS, allowed: false, until: iso(now + 3_600_000) } }),
      'inconsistent_payload',
      'payload.after.allowed',
    ],
    [
      'caps with an end',
      'offline_policy_change',
      change(at, { after: { ...CAPS, until: iso(now + 3_600_000) } }),
      'inconsistent_payload',
      'payload.after.until',
    ],
    ['a revoke of no override', 'offline_policy_change', change(at, { action: 'override_revoke' }), 'transition_not_allowed', 'payload.action'],
    [
      "caps on another store's terminal",
      'offline_policy_change',
      change(at, { action: 'terminal_caps_set', terminal_id: 'trm_b1', before: { max_count: null }, after: { max_count: 500 } }),
      'foreign_reference',
      'payload.terminal_id',
    ],
    ['a stored payment of 1e15 cents', 'stored_payment', stored(now, { amount_in_cents: 1e15 }), 'amount_out_of_range', 'payload.amount_in_cents'],
    ['a stored payment in XXX', 'stored_payment', stored(now, { currency: 'XXX' }), 'invalid_currency', 'payload.currency'],
    [
      'a stored payment settled before it was stored',
      'stored_payment',
      stored(now, { stored_at: iso(now + 1000) }),
      'inconsistent_payload',
      'payload.settled_at',
    ],
    ['an approval never forwarded', 'stored_payment', stored(now, { forwarded_at: null }), 'inconsistent_payload', 'payload.forwarded_at'],
    [
      'a stored payment waiting 30 days',
      'stored_payment',
      stored(now, { forward_by: iso(now + 30 * 86_400_000) }),
      'inconsistent_payload',
      'payload.forward_by',
    ],
    ["a stored payment on another store's terminal", 'stored_payment', stored(now, { terminal_id: 'trm_b1' }), 'foreign_reference', 'payload.terminal_id'],
  ];
  for (const [what, kind, payload, code, field] of cases) {
    const r = await A(kind, payload);
    expect(r.outcome, what).toBe('rejected');
    expect(r.reason, what).toContain(`${code} (${field})`);
    // The box is told, in its feed only.
    const told = tableRows<{ payload: string }>(central, "SELECT payload FROM sync_feed WHERE kind = 'record_rejected' AND object_id = ?", r.id);
    expect(JSON.parse(told[0].payload), what).toMatchObject({ code, field, store_id: 'store_a' });
  }
  expect(tableRows(central, "SELECT id FROM central_offline_audit WHERE origin_store_id = 'store_a'")).toEqual([]);
  expect(tableRows(central, 'SELECT id FROM central_stored_payments')).toEqual([]);

  // The honest ones apply: caps, an override for 6 hours and its revoke, a stored payment on its own terminal.
  const honest = [
    change(at),
    change(at, { action: 'override_allow', after: { ...CAPS, max_count: 150, until: iso(now + 6 * 3_600_000) } }),
    change(iso(now + 1000), { action: 'override_revoke', before: { ...CAPS, max_count: 150 }, after: CAPS }),
  ];
  expect((await A('offline_policy_change', honest[0])).outcome).toBe('applied');
  expect((await A('offline_policy_change', honest[1])).outcome).toBe('applied');
  expect((await A('offline_policy_change', honest[2], iso(now + 1000))).outcome).toBe('applied');
  // Once revoked, a second revoke has nothing to end.
  const again = await A('offline_policy_change', change(iso(now + 2000), { action: 'override_revoke' }), iso(now + 2000));
  expect(again.reason).toContain('transition_not_allowed (payload.action)');
  const sp = stored(now);
  expect((await A('stored_payment', sp)).outcome).toBe('applied');

  const audit = await http('GET', `${central.url}/api/offline_audit`, acct.key);
  expect(audit.status).toBe(200);
  expect(audit.body.map((e: { id: string }) => e.id).sort()).toEqual(honest.map((h) => h.id).sort());
  const payments = await http('GET', `${central.url}/api/stored_payments`, acct.key);
  expect(payments.body.map((p: { id: string }) => p.id)).toEqual([sp.id]);
}, 60_000);

it("refuses a box's impossible outage windows with code and field, and serves its honest ones across stores", async () => {
  const store = addStoreAccount(central, 'Store C');
  const now = Date.now();
  const at = iso(now);
  const min = (m: number) => iso(now - m * 60_000);
  const C = (payload: Record<string, unknown>, createdAt = at) => push('store_c', store.key, store.accountId, 'outage_window', payload, createdAt);
  const taken = (extra: Record<string, unknown> = {}) => ({
    terminal_id: 'trm_c1',
    account_id: store.accountId,
    live_mode: true,
    currency: 'GTQ',
    count: 2,
    amount_in_cents: 3000,
    ...extra,
  });
  const win = (extra: Record<string, unknown> = {}) => ({ link: 'processor', started_at: min(40), ended_at: min(30), taken_offline: [taken()], ...extra });

  // The honest processor window first, then a stored payment of its terminal the central now holds.
  expect((await C(win())).outcome).toBe('applied');
  const sp = stored(now, { terminal_id: 'trm_c2', stored_at: min(20), forwarded_at: min(15), settled_at: min(10) });
  expect((await push('store_c', store.key, store.accountId, 'stored_payment', sp, at)).outcome).toBe('applied');

  const cases: Array<[string, Record<string, unknown>, string, string]> = [
    ['a window that ends before it starts', win({ started_at: min(5), ended_at: min(8) }), 'inconsistent_payload', 'payload.ended_at'],
    ['a window that ends tomorrow', win({ started_at: min(5), ended_at: iso(now + 86_400_000) }), 'record_in_future', 'payload.ended_at'],
    ['a window overlapping one reported', win({ started_at: min(35), ended_at: min(25) }), 'inconsistent_payload', 'payload.started_at'],
    ['the same window ending elsewhere', win({ ended_at: min(29) }), 'inconsistent_payload', 'payload.started_at'],
    [
      "another store's terminal",
      win({ started_at: min(9), ended_at: min(8), taken_offline: [taken({ terminal_id: 'trm_b1' })] }),
      'foreign_reference',
      'payload.taken_offline.0.terminal_id',
    ],
    [
      "another store's account",
      win({ started_at: min(9), ended_at: min(8), taken_offline: [taken({ account_id: other.accountId })] }),
      'foreign_reference',
      'payload.taken_offline.0.account_id',
    ],
    [
      'an account the central never had',
      win({ started_at: min(9), ended_at: min(8), taken_offline: [taken({ account_id: 'acct_nowhere' })] }),
      'unknown_reference',
      'payload.taken_offline.0.account_id',
    ],
    [
      'a billion cards on one terminal',
      win({ started_at: min(9), ended_at: min(8), taken_offline: [taken({ count: 1e9 })] }),
      'invalid_payload',
      'payload.taken_offline.0.count',
    ],
    [
      'no card, counted',
      win({ started_at: min(9), ended_at: min(8), taken_offline: [taken({ count: 0 })] }),
      'invalid_payload',
      'payload.taken_offline.0.count',
    ],
    [
      'two cards worth 1e15 cents',
      win({ started_at: min(9), ended_at: min(8), taken_offline: [taken({ amount_in_cents: 1e15 })] }),
      'amount_out_of_range',
      'payload.taken_offline.0.amount_in_cents',
    ],
    [
      'cards in XXX',
      win({ started_at: min(9), ended_at: min(8), taken_offline: [taken({ currency: 'XXX' })] }),
      'invalid_currency',
      'payload.taken_offline.0.currency',
    ],
    [
      'a terminal listed twice',
      win({ started_at: min(9), ended_at: min(8), taken_offline: [taken(), taken()] }),
      'inconsistent_payload',
      'payload.taken_offline.1',
    ],
    [
      'cards stored with the processor reachable',
      win({ link: 'central', started_at: min(9), ended_at: min(8) }),
      'inconsistent_payload',
      'payload.taken_offline',
    ],
    ['a window leaving out a card the central holds', win({ started_at: min(22), ended_at: min(18) }), 'inconsistent_payload', 'payload.taken_offline'],
  ];
  for (const [what, payload, code, field] of cases) {
    const r = await C(payload);
    expect(r.outcome, what).toBe('rejected');
    expect(r.reason, what).toContain(`${code} (${field})`);
    const told = tableRows<{ payload: string }>(central, "SELECT payload FROM sync_feed WHERE kind = 'record_rejected' AND object_id = ?", r.id);
    expect(JSON.parse(told[0].payload), what).toMatchObject({ code, field, store_id: 'store_c' });
  }
  expect(tableRows(central, "SELECT started_at FROM central_outage_windows WHERE origin_store_id = 'store_c'")).toEqual([{ started_at: min(40) }]);

  // The honest ones: the central link's window over the first (one outage), the same window again
  // (nothing new), and a window listing the stored payment the central holds.
  expect((await C({ link: 'central', started_at: min(45), ended_at: min(35), taken_offline: [] })).outcome).toBe('applied');
  expect((await C(win())).outcome).toBe('applied');
  const second = win({ started_at: min(22), ended_at: min(18), taken_offline: [taken({ terminal_id: 'trm_c2', count: 1, amount_in_cents: 1500 })] });
  expect((await C(second)).outcome).toBe('applied');
  expect(tableRows(central, "SELECT count(*) AS n FROM central_outage_windows WHERE origin_store_id = 'store_c'")).toEqual([{ n: 3 }]);

  const res = await http('GET', `${central.url}/api/outage_reports?limit=10`, store.key);
  expect(res.status).toBe(200);
  expect(res.body.offline_now).toEqual({ offline: false, silent_stores: [] });
  expect(res.body.outages).toHaveLength(2);
  const [late, early] = res.body.outages;
  expect(early).toMatchObject({
    store_id: 'store_c',
    started_at: min(45),
    ended_at: min(30),
    links: [
      { link: 'central', started_at: min(45), ended_at: min(35) },
      { link: 'processor', started_at: min(40), ended_at: min(30) },
    ],
    taken_offline: [taken()],
    stored_payments: [],
    open_checkouts: null,
  });
  expect(late).toMatchObject({
    store_id: 'store_c',
    started_at: min(22),
    taken_offline: [taken({ terminal_id: 'trm_c2', count: 1, amount_in_cents: 1500 })],
    stored_payments: [{ status: 'approved', currency: 'GTQ', count: 1, amount_in_cents: 1500 }],
  });
  // One store's, by its id; none of another store's key, and none under another store's id.
  expect((await http('GET', `${central.url}/api/outage_reports?store_id=store_c`, store.key)).body.outages).toHaveLength(2);
  expect((await http('GET', `${central.url}/api/outage_reports?store_id=store_a`, store.key)).body.outages).toEqual([]);
  expect((await http('GET', `${central.url}/api/outage_reports`, other.key)).body.outages).toEqual([]);
  // The OpenAPI describes it.
  const spec = await http('GET', `${central.url}/openapi.json`, null);
  expect(spec.body.paths['/outage_reports'].get.parameters.map((p: { name: string }) => p.name)).toContain('store_id');
}, 60_000);
