import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { AccountsService } from '../../src/accounts/service.js';
import { available as availableOf, chainHolds, fund as fundAccount, ledgerRows } from './money-helpers.js';

let s: TestServer;
let sbx: string;
let recipient: { id: string; key: string };
let third: { id: string; key: string };
let liveOther: string;

function counts() {
  const n = (sql: string) => (s.daemon.ctx.db.prepare(sql).get() as { n: number }).n;
  return {
    transfers: n('SELECT count(*) AS n FROM transfers'),
    ledger: n('SELECT count(*) AS n FROM balance_transactions'),
    events: n('SELECT count(*) AS n FROM events'),
    sync: n("SELECT count(*) AS n FROM sync_outbox WHERE kind IN ('transfer', 'withdrawal')"),
  };
}

function eventsFor(objectId: string) {
  return (
    s.daemon.ctx.db.prepare('SELECT account_id, type, payload FROM events WHERE object_id = ? ORDER BY seq').all(objectId) as Array<{
      account_id: string;
      type: string;
      payload: string;
    }>
  ).map((e) => ({ ...e, payload: JSON.parse(e.payload) }));
}

beforeAll(async () => {
  s = await startTestServer();
  sbx = s.installation.sandbox_id;
  const accounts = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
  const org = s.installation.organization_id;
  const r = accounts.createAccount({ name: 'Recipient', organizationId: org });
  const t = accounts.createAccount({ name: 'Third', organizationId: org });
  recipient = { id: r.sandbox.id, key: accounts.createKey({ accountId: r.sandbox.id, environment: 'test' }).key };
  third = { id: t.sandbox.id, key: accounts.createKey({ accountId: t.sandbox.id, environment: 'test' }).key };
  liveOther = r.account.id;
  fund(sbx, 100_000);
  fund(sbx, 50_000, 'USD');
});
afterAll(() => s.stop());

const fund = (id: string, cents: number, currency = 'GTQ') => fundAccount(s.daemon.ctx, id, cents, currency);
const ledger = (id = sbx, currency = 'GTQ') => ledgerRows(s.daemon.ctx, id, currency);
const available = (id = sbx, currency = 'GTQ') => availableOf(s.daemon.ctx, id, currency);

describe('peer-to-peer transfers', () => {
  it('moves the money in one transaction: two ledger rows, two events, one sync record', async () => {
    const before = counts();
    const res = await s.api('POST', '/transfers', { body: { amount_in_cents: 2500, currency: 'GTQ', recipient_id: recipient.id, note: 'Rent' } });
    expect(res.status).toBe(201);
    const t = res.body;
    expect(t).toMatchObject({
      object: 'transfer',
      kind: 'peer',
      direction: 'outgoing',
      // Hosted section 12: a peer transfer that reached its recipient is `completed`, with both sides as objects.
      status: 'completed',
      sender: { id: sbx, name: new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock).account(sbx)!.name, type: 'account' },
      recipient: { id: recipient.id, name: 'Recipient', type: 'account' },
      amount_in_cents: 2500,
      currency: 'GTQ',
      account_id: sbx,
      sender_id: sbx,
      recipient_id: recipient.id,
      bank_account: null,
      note: 'Rent',
      return_balance_transaction_id: null,
      live_mode: false,
    });
    expect(t.id).toMatch(/^tr_[0-9a-z]{16}$/);
    expect(counts()).toEqual({ transfers: before.transfers + 1, ledger: before.ledger + 2, events: before.events + 2, sync: before.sync + 1 });

    const mine = ledger();
    expect(mine[0]).toMatchObject({
      id: t.balance_transaction_id,
      type: 'transfer',
      amount_in_cents: -2500,
      fee_in_cents: 0,
      net_amount_in_cents: -2500,
      balance_after_in_cents: 97_500,
      source_id: t.id,
    });
    const theirs = ledger(recipient.id);
    expect(theirs).toHaveLength(1);
    expect(theirs[0]).toMatchObject({ type: 'transfer', amount_in_cents: 2500, net_amount_in_cents: 2500, balance_after_in_cents: 2500, source_id: t.id });
    expect(available()).toBe(97_500);
    expect(available(recipient.id)).toBe(2500);

    const events = eventsFor(t.id);
    expect(events.map((e) => [e.type, e.account_id])).toEqual([
      ['transfer.sent', sbx],
      ['transfer.received', recipient.id],
    ]);
    expect(events[0].payload).toEqual({ event_type: 'transfer.sent', api_version: expect.any(String), ...t });
    expect(events[1].payload).toMatchObject({
      event_type: 'transfer.received',
      id: t.id,
      direction: 'incoming',
      sender: t.sender,
      recipient: t.recipient,
      account_id: recipient.id,
      balance_transaction_id: theirs[0].id,
      amount_in_cents: 2500,
    });

    const incoming = await s.api('GET', `/transfers/${t.id}`, { key: recipient.key });
    expect(incoming.status).toBe(200);
    const { event_type: _type, api_version: _version, ...receivedView } = events[1].payload;
    expect(incoming.body).toEqual(receivedView);
    expect((await s.api('GET', `/transfers/${t.id}`)).body).toEqual(t);
    expect((await s.api('GET', `/transfers/${t.id}`, { key: third.key })).status).toBe(404);
    expect((await s.api('GET', `/transfers/${t.id}`, { key: s.installation.keys.live })).status).toBe(404);

    const listed = await s.api('GET', '/transfers', { key: recipient.key });
    expect(listed.body.map((x: { id: string }) => x.id)).toContain(t.id);
    expect(listed.headers['total-count']).toBeDefined();
  });

  it('refuses more than the available balance with 422 insufficient_funds and writes nothing', async () => {
    const before = counts();
    const balance = available();
    const res = await s.api('POST', '/transfers', { body: { amount_in_cents: balance + 1, currency: 'GTQ', recipient_id: recipient.id } });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('insufficient_funds');
    expect(res.body.errors.amount_in_cents[0]).toContain(String(balance));
    expect(counts()).toEqual(before);
    const empty = await s.api('POST', '/transfers', { key: third.key, body: { amount_in_cents: 1, currency: 'GTQ', recipient_id: recipient.id } });
    expect(empty.status).toBe(422);
    expect(counts()).toEqual(before);
    // Exactly the balance is fine.
    const all = await s.api('POST', '/transfers', { body: { amount_in_cents: 50_000, currency: 'USD', recipient_id: third.id } });
    expect(all.status).toBe(201);
    expect(available(sbx, 'USD')).toBe(0);
  });

  const bad: Array<[string, string, Record<string, unknown>]> = [
    ['yourself', 'recipient_id', { recipient_id: 'SELF' }],
    ['an unknown account', 'recipient_id', { recipient_id: 'sbx_doesnotexist0000' }],
    ['an account of the other environment', 'recipient_id', { recipient_id: 'LIVE' }],
    ['no recipient', 'recipient_id', { recipient_id: undefined }],
    ['a zero amount', 'amount_in_cents', { amount_in_cents: 0 }],
    ['a negative amount', 'amount_in_cents', { amount_in_cents: -100 }],
    ['an amount as words', 'amount_in_cents', { amount_in_cents: 'cien' }],
    ['a fractional amount', 'amount_in_cents', { amount_in_cents: 10.5 }],
    ['an amount past the limit', 'amount_in_cents', { amount_in_cents: 100_000_001 }],
    ['an unknown currency', 'currency', { currency: 'EUR' }],
  ];
  it.each(bad)('to %s: 400 naming %s, nothing written', async (_label, field, patch) => {
    const body: Record<string, unknown> = { amount_in_cents: 100, currency: 'GTQ', recipient_id: recipient.id, ...patch };
    if (body.recipient_id === 'SELF') body.recipient_id = sbx;
    if (body.recipient_id === 'LIVE') body.recipient_id = liveOther;
    const before = counts();
    const res = await s.api('POST', '/transfers', { body });
    expect(res.status).toBe(400);
    expect(res.body.errors[field]).toBeDefined();
    expect(counts()).toEqual(before);
  });

  it('under one Idempotency-Key, concurrent identical requests make one transfer', async () => {
    const before = counts();
    const body = { amount_in_cents: 111, currency: 'GTQ', recipient_id: third.id, note: 'once' };
    const headers = { 'idempotency-key': 'transfer-once-1' };
    const responses = await Promise.all(Array.from({ length: 8 }, () => s.api('POST', '/transfers', { body, headers })));
    const created = responses.filter((r) => r.status === 201);
    expect(created.length).toBeGreaterThanOrEqual(1);
    for (const r of responses) expect([201, 409]).toContain(r.status);
    expect(new Set(created.map((r) => r.body.id)).size).toBe(1);
    expect(counts()).toEqual({ transfers: before.transfers + 1, ledger: before.ledger + 2, events: before.events + 2, sync: before.sync + 1 });
    const replay = await s.api('POST', '/transfers', { body, headers });
    expect(replay.status).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).toEqual(created[0].body);
    expect(counts().transfers).toBe(before.transfers + 1);
  });

  it('keeps every ledger chain it touched', () => {
    for (const id of [sbx, recipient.id, third.id]) {
      for (const currency of ['GTQ', 'USD']) expect(chainHolds(ledger(id, currency))).toBe(true);
    }
    expect(ledger(third.id, 'USD')[0].balance_after_in_cents).toBe(50_000);
  });

  it('an organization key reads every transfer once, from the sending side; kind filters', async () => {
    const accounts = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
    const orgKey = accounts.createKey({ organizationId: s.installation.organization_id, environment: 'test' }).key;
    const all = await s.api('GET', '/transfers?items=100', { key: orgKey });
    expect(all.status).toBe(200);
    const ids = all.body.map((t: { id: string }) => t.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(Number(all.headers['total-count'])).toBe(ids.length);
    expect(
      all.body.every((t: { direction: string; account_id: string; sender_id: string }) => t.direction === 'outgoing' && t.account_id === t.sender_id),
    ).toBe(true);
    const mine = await s.api('GET', '/transfers?items=100');
    expect(mine.body.map((t: { id: string }) => t.id).sort()).toEqual(
      ids.filter((id: string) => all.body.find((t: { id: string; sender_id: string }) => t.id === id)!.sender_id === sbx).sort(),
    );
    expect((await s.api('GET', '/transfers?kind=withdrawal')).body).toEqual([]);
    expect((await s.api('GET', '/transfers?kind=peer&items=100')).body).toEqual(mine.body);
    const received = await s.api('GET', '/transfers?items=100', { key: third.key });
    expect(received.body.length).toBeGreaterThan(0);
    expect(received.body.every((t: { direction: string; recipient_id: string }) => t.direction === 'incoming' && t.recipient_id === third.id)).toBe(true);
  });

  it('organization keys cannot send money', async () => {
    const accounts = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
    const orgKey = accounts.createKey({ organizationId: s.installation.organization_id, environment: 'test' }).key;
    const res = await s.api('POST', '/transfers', {
      key: orgKey,
      headers: { 'x-account-id': sbx },
      body: { amount_in_cents: 1, currency: 'GTQ', recipient_id: third.id },
    });
    expect(res.status).toBe(403);
  });
});
