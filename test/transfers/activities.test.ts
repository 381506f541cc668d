import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { tx } from '../../src/db/database.js';
import { AccountsService } from '../../src/accounts/service.js';
import { parseQueryTime } from '../../src/modules/activities/service.js';

let s: TestServer;
let sbx: string;
let orgTestKey: string;
const clock = new ManualClock(Date.parse('2026-01-01T00:00:00.000Z'));

function emit(type: string, at: string, payload: Record<string, unknown> = {}, accountId = sbx, liveMode = false): string {
  clock.set(Date.parse(at));
  const ctx = s.daemon.ctx;
  return tx(ctx.db, () => ctx.outbox.emit({ type, accountId, liveMode, objectId: (payload.id as string) ?? null, payload })).id;
}

beforeAll(async () => {
  s = await startTestServer({ clock });
  sbx = s.installation.sandbox_id;
  const accounts = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
  const other = accounts.createAccount({ name: 'Other', organizationId: s.installation.organization_id });
  orgTestKey = accounts.createKey({ organizationId: s.installation.organization_id, environment: 'test' }).key;
  emit('transfer.sent', '2026-01-01T23:59:59.999Z', { id: 'tr_a', amount_in_cents: 1000, currency: 'GTQ', note: 'rent' });
  emit('transfer.received', '2026-01-02T00:00:00.000Z', { id: 'tr_b', amount_in_cents: 2000, currency: 'USD' });
  emit('payment_intent.succeeded', '2026-01-02T12:00:00.000Z', { id: 'pa_c', amount_in_cents: 3000, currency: 'GTQ' });
  emit('paymentXintent.succeeded', '2026-01-02T13:00:00.000Z', { id: 'px_d' });
  emit('transfer_extra.sent', '2026-01-02T14:00:00.000Z', { id: 'te_e' });
  emit('withdrawal.update', '2026-01-02T23:59:59.999Z', { id: 'wd_f', amount_in_cents: 500, currency: 'GTQ', status: 'in_transit' });
  emit('transfer.sent', '2026-01-03T00:00:00.000Z', { id: 'tr_g', amount_in_cents: 700, currency: 'GTQ', description: 'Supplier' });
  // Not ours: another account, and our own live account.
  emit('transfer.sent', '2026-01-02T10:00:00.000Z', { id: 'tr_x' }, other.sandbox.id);
  emit('transfer.sent', '2026-01-02T10:00:00.000Z', { id: 'tr_y' }, s.installation.account_id, true);
});
afterAll(() => s.stop());

const objects = (body: Array<{ object_id: string }>) => body.map((a) => a.object_id);

describe('GET /activities', () => {
  it('reads the account’s events newest first, as activities', async () => {
    const res = await s.api('GET', '/activities?items=100');
    expect(res.status).toBe(200);
    expect(objects(res.body)).toEqual(['tr_g', 'wd_f', 'te_e', 'px_d', 'pa_c', 'tr_b', 'tr_a']);
    const sent = res.body.find((a: { object_id: string }) => a.object_id === 'tr_a');
    expect(sent).toEqual({
      id: expect.stringMatching(/^act_[0-9a-z]{16}$/),
      type: 'transfer.sent',
      model: 'transfer',
      object_id: 'tr_a',
      amount_in_cents: 1000,
      currency: 'GTQ',
      description: 'Transfer sent: rent',
      created_at: '2026-01-01T23:59:59.999Z',
    });
    expect(res.body[0].description).toBe('Supplier');
    expect(res.body.find((a: { object_id: string }) => a.object_id === 'wd_f').description).toBe('Withdrawal in transit');
    expect(res.body.find((a: { object_id: string }) => a.object_id === 'px_d')).toMatchObject({ amount_in_cents: null, currency: null });
  });

  it('filters by an event type or by a model group (no wildcard surprises)', async () => {
    expect(objects((await s.api('GET', '/activities?type=transfer.sent')).body)).toEqual(['tr_g', 'tr_a']);
    expect(objects((await s.api('GET', '/activities?type=transfer')).body)).toEqual(['tr_g', 'tr_b', 'tr_a']);
    expect(objects((await s.api('GET', '/activities?type=payment_intent')).body)).toEqual(['pa_c']);
    expect(objects((await s.api('GET', '/activities?type=withdrawal')).body)).toEqual(['wd_f']);
    expect((await s.api('GET', '/activities?type=nothing.here')).body).toEqual([]);
    const bad = await s.api('GET', '/activities?type=transfer%25');
    expect(bad.status).toBe(400);
    expect(bad.body.errors.type).toBeDefined();
  });

  it('a date alone is the whole day: start for from_time, end for until_time', async () => {
    const day = await s.api('GET', '/activities?from_time=2026-01-02&until_time=2026-01-02&items=100');
    expect(objects(day.body)).toEqual(['wd_f', 'te_e', 'px_d', 'pa_c', 'tr_b']);
    const span = await s.api('GET', '/activities?from_time=2026-01-01&until_time=2026-01-03&type=transfer');
    expect(objects(span.body)).toEqual(['tr_g', 'tr_b', 'tr_a']);
    const exact = await s.api('GET', '/activities?from_time=2026-01-02T00:00:00Z&until_time=2026-01-02T12:00:00.000Z');
    expect(objects(exact.body)).toEqual(['pa_c', 'tr_b']);
    // An offset is honoured: 2026-01-02T06:00-06:00 is noon UTC.
    const offset = await s.api('GET', `/activities?from_time=${encodeURIComponent('2026-01-02T06:00:00-06:00')}&until_time=2026-01-02T12:00:00Z`);
    expect(objects(offset.body)).toEqual(['pa_c']);
  });

  it('the pair applies only when both are sent', async () => {
    const all = (await s.api('GET', '/activities?items=100')).body;
    expect((await s.api('GET', '/activities?from_time=2026-01-03&items=100')).body).toEqual(all);
    expect((await s.api('GET', '/activities?until_time=2026-01-01&items=100')).body).toEqual(all);
  });

  it('a time that is not a date: 400 naming the field', async () => {
    for (const q of ['from_time=yesterday&until_time=2026-01-02', 'from_time=2026-01-01&until_time=2026-02-30', 'from_time=2026-13-01']) {
      const res = await s.api('GET', `/activities?${q}`);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('validation_error');
      expect(Object.keys(res.body.errors).some((k) => k === 'from_time' || k === 'until_time')).toBe(true);
    }
  });

  it('paginates with RFC 8288 headers keeping the filters', async () => {
    const res = await s.api('GET', '/activities?type=transfer&items=2&page=1');
    expect(objects(res.body)).toEqual(['tr_g', 'tr_b']);
    expect(res.headers['total-count']).toBe('3');
    expect(res.headers['total-pages']).toBe('2');
    const link = String(res.headers.link);
    expect(link).toMatch(/<http:\/\/[^>]+\/api\/activities\?[^>]*type=transfer[^>]*page=2[^>]*>; rel="next"/);
    const next = await s.api('GET', '/activities?type=transfer&items=2&page=2');
    expect(objects(next.body)).toEqual(['tr_a']);
    expect((await s.api('GET', '/activities?type=transfer&items=2&page=9')).body).toEqual([]);
  });

  it('an organization key reads every account of its environment, each row with its account_id', async () => {
    const res = await s.api('GET', '/activities?type=transfer.sent&items=100', { key: orgTestKey });
    expect(res.status).toBe(200);
    expect(objects(res.body).sort()).toEqual(['tr_a', 'tr_g', 'tr_x']);
    expect(res.body.every((a: { account_id?: string }) => typeof a.account_id === 'string')).toBe(true);
    const live = await s.api('GET', '/activities?type=transfer.sent', { key: s.installation.keys.live });
    expect(objects(live.body)).toEqual(['tr_y']);
    expect(live.body[0].account_id).toBeUndefined();
  });
});

describe('parseQueryTime', () => {
  it('reads dates, date-times with and without offsets, and refuses the rest', () => {
    expect(parseQueryTime('2026-03-01', 'start')).toBe('2026-03-01T00:00:00.000Z');
    expect(parseQueryTime('2026-03-01', 'end')).toBe('2026-03-01T23:59:59.999Z');
    expect(parseQueryTime('2028-02-29', 'end')).toBe('2028-02-29T23:59:59.999Z');
    expect(parseQueryTime('2026-02-29', 'start')).toBeNull();
    expect(parseQueryTime('2026-03-01T10:00', 'start')).toBe('2026-03-01T10:00:00.000Z');
    expect(parseQueryTime('2026-03-01T10:00:00.5+02:00', 'start')).toBe('2026-03-01T08:00:00.500Z');
    expect(parseQueryTime('1740000000', 'start')).toBeNull();
  });
});
