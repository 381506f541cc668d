import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { AccountsService } from '../../src/accounts/service.js';
import { available, chainHolds, fund, ledgerRows } from './money-helpers.js';

let s: TestServer;
let sbx: string;
let otherKey: string;
let gtqBank: { id: string };
let usdBank: { id: string };
const clock = new ManualClock(Date.parse('2026-02-01T12:00:00.000Z'));

function counts() {
  const n = (sql: string) => (s.daemon.ctx.db.prepare(sql).get() as { n: number }).n;
  return {
    transfers: n('SELECT count(*) AS n FROM transfers'),
    ledger: n('SELECT count(*) AS n FROM balance_transactions'),
    events: n('SELECT count(*) AS n FROM events'),
    sync: n("SELECT count(*) AS n FROM sync_outbox WHERE kind = 'withdrawal'"),
  };
}

function eventsFor(objectId: string) {
  return (
    s.daemon.ctx.db.prepare('SELECT type, payload FROM events WHERE object_id = ? ORDER BY seq').all(objectId) as Array<{ type: string; payload: string }>
  ).map((e) => ({ type: e.type, payload: JSON.parse(e.payload) }));
}

const bankBody = { holder_name: 'Tienda La Esquina', number: '0123456789', bank_name: 'Banrural', currency: 'GTQ', account_type: 'monetaria' };

beforeAll(async () => {
  s = await startTestServer({ clock });
  sbx = s.installation.sandbox_id;
  const accounts = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
  const other = accounts.createAccount({ name: 'Other', organizationId: s.installation.organization_id });
  otherKey = accounts.createKey({ accountId: other.sandbox.id, environment: 'test' }).key;
  gtqBank = (await s.api('POST', '/bank_accounts', { body: bankBody })).body;
  usdBank = (await s.api('POST', '/bank_accounts', { body: { ...bankBody, currency: 'USD' } })).body;
  fund(s.daemon.ctx, sbx, 80_000);
});
afterAll(() => s.stop());

const balance = (currency = 'GTQ') => available(s.daemon.ctx, sbx, currency);
const ledger = (currency = 'GTQ') => ledgerRows(s.daemon.ctx, sbx, currency);

describe('withdrawals', () => {
  let paidId: string;

  it('creates a pending withdrawal: a negative payout row, withdrawal.create with the unified transfer, one sync record', async () => {
    const before = counts();
    const res = await s.api('POST', '/withdrawals', { body: { amount_in_cents: 30_000, currency: 'GTQ', bank_account_id: gtqBank.id } });
    expect(res.status).toBe(201);
    const w = res.body;
    paidId = w.id;
    expect(w).toMatchObject({
      object: 'withdrawal',
      account_id: sbx,
      amount_in_cents: 30_000,
      currency: 'GTQ',
      status: 'pending',
      bank_account_id: gtqBank.id,
      bank_account: { id: gtqBank.id, number: '******6789', bank_name: 'Banrural' },
      return_balance_transaction_id: null,
      in_transit_at: null,
      paid_at: null,
    });
    expect(w.id).toMatch(/^wd_[0-9a-z]{16}$/);
    expect(counts()).toEqual({ transfers: before.transfers + 1, ledger: before.ledger + 1, events: before.events + 1, sync: before.sync + 1 });
    const rows = ledger();
    expect(rows[0]).toMatchObject({
      id: w.balance_transaction_id,
      type: 'payout',
      amount_in_cents: -30_000,
      net_amount_in_cents: -30_000,
      balance_after_in_cents: 50_000,
      source_id: w.id,
    });
    // Spec 2.10: the balance has withdrawals in progress already deducted.
    expect(balance()).toBe(50_000);

    const unified = await s.api('GET', `/transfers/${w.id}`);
    expect(unified.status).toBe(200);
    expect(unified.body).toMatchObject({
      id: w.id,
      kind: 'withdrawal',
      direction: 'outgoing',
      status: 'pending',
      recipient_id: null,
      balance_transaction_id: w.balance_transaction_id,
    });
    const events = eventsFor(w.id);
    expect(events).toHaveLength(1);
    expect(events[0].type).toBe('withdrawal.create');
    expect(events[0].payload).toEqual({
      event_type: 'withdrawal.create',
      api_version: expect.any(String),
      ...w,
      previous_status: null,
      transfer: unified.body,
    });
    expect((await s.api('GET', `/withdrawals/${w.id}`)).body).toEqual(w);
  });

  it('the sandbox helper drives it to paid through in_transit, one withdrawal.update per status', async () => {
    const ledgerBefore = counts().ledger;
    clock.advance(60_000);
    const res = await s.api('POST', `/test_helpers/withdrawals/${paidId}/advance`, { body: { outcome: 'paid' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'paid', in_transit_at: '2026-02-01T12:01:00.000Z', paid_at: '2026-02-01T12:01:00.000Z', failed_at: null });
    expect(counts().ledger).toBe(ledgerBefore);
    const updates = eventsFor(paidId).filter((e) => e.type === 'withdrawal.update');
    expect(updates.map((e) => [e.payload.previous_status, e.payload.status, e.payload.transfer.status])).toEqual([
      ['pending', 'in_transit', 'in_transit'],
      ['in_transit', 'paid', 'paid'],
    ]);
    const again = await s.api('POST', `/test_helpers/withdrawals/${paidId}/advance`, { body: { outcome: 'failed' } });
    expect(again.status).toBe(422);
    expect(again.body.code).toBe('withdrawal_final');
    expect(eventsFor(paidId)).toHaveLength(3);
    expect(balance()).toBe(50_000);
  });

  it('a failed withdrawal returns the money with a ledger row', async () => {
    const w = (await s.api('POST', '/withdrawals', { body: { amount_in_cents: 20_000, currency: 'GTQ', bank_account_id: gtqBank.id } })).body;
    expect(balance()).toBe(30_000);
    const moving = await s.api('POST', `/test_helpers/withdrawals/${w.id}/advance`, { body: { outcome: 'in_transit' } });
    expect(moving.body.status).toBe('in_transit');
    const twice = await s.api('POST', `/test_helpers/withdrawals/${w.id}/advance`, { body: { outcome: 'in_transit' } });
    expect(twice.status).toBe(400);
    const failed = await s.api('POST', `/test_helpers/withdrawals/${w.id}/advance`, { body: { outcome: 'failed', failure_reason: 'account_closed' } });
    expect(failed.status).toBe(200);
    expect(failed.body).toMatchObject({ status: 'failed', failure_reason: 'account_closed', return_balance_transaction_id: expect.stringMatching(/^txn_/) });
    expect(balance()).toBe(50_000);
    const rows = ledger();
    expect(rows[0]).toMatchObject({
      id: failed.body.return_balance_transaction_id,
      type: 'payout',
      amount_in_cents: 20_000,
      balance_after_in_cents: 50_000,
      source_id: w.id,
    });
    const last = eventsFor(w.id).at(-1)!;
    expect(last.payload).toMatchObject({
      status: 'failed',
      previous_status: 'in_transit',
      transfer: { status: 'failed', return_balance_transaction_id: failed.body.return_balance_transaction_id },
    });
    // A pending withdrawal may fail at once, too.
    const w2 = (await s.api('POST', '/withdrawals', { body: { amount_in_cents: 100, currency: 'GTQ', bank_account_id: gtqBank.id } })).body;
    const f2 = await s.api('POST', `/test_helpers/withdrawals/${w2.id}/advance`, { body: { outcome: 'failed' } });
    expect(f2.body).toMatchObject({ status: 'failed', failure_reason: 'returned_by_bank', in_transit_at: null });
    expect(balance()).toBe(50_000);
  });

  it('keeps the ledger chain: amount + fee = net, balance_after = previous + net', () => {
    const rows = ledger();
    expect(rows.length).toBeGreaterThanOrEqual(6);
    expect(chainHolds(rows)).toBe(true);
    expect(rows[0].balance_after_in_cents).toBe(balance());
  });

  it('refuses more than the balance (422 insufficient_funds) and bad destinations, writing nothing', async () => {
    const before = counts();
    const cases: Array<[Record<string, unknown>, number, string]> = [
      [{ amount_in_cents: 50_001, currency: 'GTQ', bank_account_id: gtqBank.id }, 422, 'insufficient_funds'],
      [{ amount_in_cents: 1, currency: 'USD', bank_account_id: usdBank.id }, 422, 'insufficient_funds'],
      [{ amount_in_cents: 100, currency: 'USD', bank_account_id: gtqBank.id }, 400, 'validation_error'],
      [{ amount_in_cents: 100, currency: 'GTQ', bank_account_id: 'bacc_nope000000000000' }, 400, 'validation_error'],
      [{ amount_in_cents: 0, currency: 'GTQ', bank_account_id: gtqBank.id }, 400, 'validation_error'],
      [{ amount_in_cents: 100, currency: 'GTQ' }, 400, 'validation_error'],
    ];
    for (const [body, status, code] of cases) {
      const res = await s.api('POST', '/withdrawals', { body });
      expect([res.status, res.body.code]).toEqual([status, code]);
    }
    // Another account's bank account is not a destination.
    const foreign = await s.api('POST', '/withdrawals', { key: otherKey, body: { amount_in_cents: 1, currency: 'GTQ', bank_account_id: gtqBank.id } });
    expect(foreign.status).toBe(400);
    expect(foreign.body.errors.bank_account_id).toBeDefined();
    const archived = (await s.api('POST', '/bank_accounts', { body: bankBody })).body;
    await s.api('DELETE', `/bank_accounts/${archived.id}`);
    const toArchived = await s.api('POST', '/withdrawals', { body: { amount_in_cents: 100, currency: 'GTQ', bank_account_id: archived.id } });
    expect([toArchived.status, toArchived.body.code]).toEqual([422, 'bank_account_archived']);
    expect(counts()).toEqual(before);
  });

  it('one withdrawal under concurrent identical requests with one Idempotency-Key', async () => {
    const before = counts();
    const body = { amount_in_cents: 1000, currency: 'GTQ', bank_account_id: gtqBank.id };
    const responses = await Promise.all(Array.from({ length: 6 }, () => s.api('POST', '/withdrawals', { body, headers: { 'idempotency-key': 'wd-once' } })));
    for (const r of responses) expect([201, 409]).toContain(r.status);
    expect(new Set(responses.filter((r) => r.status === 201).map((r) => r.body.id)).size).toBe(1);
    expect(counts()).toEqual({ transfers: before.transfers + 1, ledger: before.ledger + 1, events: before.events + 1, sync: before.sync + 1 });
  });

  it('lists withdrawals (status filter) and shows them among transfers', async () => {
    const all = await s.api('GET', '/withdrawals?items=100');
    expect(all.status).toBe(200);
    expect(all.body.length).toBe(4);
    expect(all.headers['total-count']).toBe('4');
    const paid = await s.api('GET', '/withdrawals?status=paid');
    expect(paid.body.map((w: { id: string }) => w.id)).toEqual([paidId]);
    const transfers = await s.api('GET', '/transfers?kind=withdrawal&items=100');
    expect(transfers.body.map((t: { id: string }) => t.id).sort()).toEqual(all.body.map((w: { id: string }) => w.id).sort());
    expect((await s.api('GET', '/withdrawals', { key: otherKey })).body).toEqual([]);
    expect((await s.api('GET', `/withdrawals/${paidId}`, { key: otherKey })).status).toBe(404);
  });

  it('the test helper is for sandbox keys only: 404 to a live key', async () => {
    const res = await s.api('POST', `/test_helpers/withdrawals/${paidId}/advance`, { key: s.installation.keys.live, body: { outcome: 'paid' } });
    expect(res.status).toBe(404);
  });

  it('withdrawal events appear as activities', async () => {
    const res = await s.api('GET', '/activities?type=withdrawal&items=100');
    expect(res.body.length).toBe(eventsFor(paidId).length + 3 + 2 + 1);
    const created = res.body.filter((a: { type: string }) => a.type === 'withdrawal.create');
    expect(created[created.length - 1]).toMatchObject({
      model: 'withdrawal',
      object_id: paidId,
      amount_in_cents: 30_000,
      currency: 'GTQ',
      description: 'Withdrawal requested',
    });
  });
});
