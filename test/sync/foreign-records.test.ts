import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../helpers/server.js';
import { addStoreAccount, http, pushAndProject, startCentral } from './helpers.js';
import { tableRows } from './replay.js';

let central: TestServer;
let mine: ReturnType<typeof addStoreAccount>;
let other: ReturnType<typeof addStoreAccount>;
beforeAll(async () => {
  central = await startCentral();
  mine = addStoreAccount(central, 'Store A');
  other = addStoreAccount(central, 'Store B');
});
afterAll(async () => central?.stop());

let n = 0;
const push = (kind: string, accountId: string, payload: Record<string, unknown>) =>
  pushAndProject(central, mine.key, {
    store_id: `store_forge${++n}`,
    records: [{ seq: 1, prev_seq: 0, id: `sync_forge${n}`, kind, account_id: accountId, live_mode: true, payload, created_at: new Date().toISOString() }],
  });

describe('records that reach beyond the pushing store’s accounts', () => {
  it('a connection under another platform is refused and creates no account', async () => {
    const before = tableRows(central, 'SELECT count(*) AS n FROM accounts');
    const res = await push('connected_account', mine.accountId, {
      live_account_id: 'ac_forgedchild0001',
      sandbox_id: 'sbx_forgedchild001',
      parent_account_id: other.accountId,
      email: 'x@example.com',
    });
    expect(res.status).toBe(200);
    expect(res.body.rejected).toEqual([{ id: expect.any(String), reason: expect.stringContaining(other.accountId) }]);
    expect(tableRows(central, 'SELECT count(*) AS n FROM accounts')).toEqual(before);
  });

  it('a booking naming another account’s service is refused; rows it carries are written under the pushing account only', async () => {
    const svc = await http('POST', `${central.url}/api/services`, other.key, {
      kind: 'appointment',
      name: 'Theirs',
      duration_minutes: 30,
      price_in_cents: 1000,
    });
    expect(svc.status).toBe(201);
    const row = tableRows<Record<string, unknown>>(central, 'SELECT * FROM sched_services WHERE id = ?', svc.body.id)[0];
    const starts = new Date(Date.now() + 86_400_000).toISOString();
    const booking = (id: string, serviceId: string) => ({
      id,
      account_id: mine.accountId,
      live_mode: 1,
      status: 'confirmed',
      source: 'api',
      kind: 'appointment',
      service_id: serviceId,
      requires_acceptance: 0,
      starts_at: starts,
      ends_at: starts,
      customer_id: 'cus_x',
      customer_name: null,
      customer_email: null,
      customer_phone: null,
      segments: '[]',
      staff_member_id: null,
      resource_id: null,
      class_session_id: null,
      stay: null,
      payment_policy: 'none',
      currency: 'GTQ',
      total_in_cents: 1000,
      due_in_cents: 0,
      paid_in_cents: 0,
      balance_in_cents: 1000,
      balance_paid_outside_at: null,
      checkout_id: null,
      checkout_url: null,
      balance_checkout_id: null,
      balance_checkout_url: null,
      no_show_fee_checkout_id: null,
      booking_series_id: null,
      access_token: 'secret',
      customer_note: null,
      merchant_note: null,
      accepted_at: null,
      hold_expires_at: null,
      cancelled_by: null,
      cancellation_reason: null,
      rescheduled_from_id: null,
      payment_intent_ids: '[]',
      refund_due: 0,
      refund_reason: null,
      refunded_at: null,
      refund_ids: '[]',
      refunded_intent_ids: '[]',
      refund_error: null,
      metadata: '{}',
      // Written now for tomorrow: a booking's own times are never after its record.
      created_at: new Date().toISOString(),
      updated_at: new Date().toISOString(),
      origin_store_id: null,
    });
    const refs = (services: unknown[]) => ({ services, staff_members: [], resources: [], class_session: null, series: null });

    const theirs = await push('booking', mine.accountId, {
      op: 'create',
      booking: {},
      row: booking('bk_forged00000001', svc.body.id),
      occupancy: [],
      refs: refs([row]),
    });
    expect(theirs.body.rejected).toEqual([{ id: expect.any(String), reason: expect.stringContaining(svc.body.id) }]);
    expect(tableRows(central, 'SELECT id FROM sched_bookings WHERE id = ?', 'bk_forged00000001')).toEqual([]);

    // A service row claiming another account is written as the pushing account's.
    const claimed = { ...row, id: 'svc_claimed0000001', account_id: other.accountId };
    const ok = await push('booking', mine.accountId, {
      op: 'create',
      booking: {},
      row: booking('bk_forged00000002', 'svc_claimed0000001'),
      occupancy: [],
      refs: refs([claimed]),
    });
    expect(ok.body.rejected).toEqual([]);
    expect(tableRows(central, 'SELECT account_id FROM sched_services WHERE id = ?', 'svc_claimed0000001')).toEqual([{ account_id: mine.accountId }]);
  });
});
