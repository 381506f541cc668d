import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { AccountsService } from '../../src/accounts/service.js';

let s: TestServer;
let otherKey: string;

const valid = {
  holder_name: 'Ana López',
  number: '3-012-34567-8',
  bank_name: 'Banco Industrial',
  currency: 'GTQ',
  account_type: 'monetaria',
};

function count(table: string): number {
  return (s.daemon.ctx.db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
}

beforeAll(async () => {
  s = await startTestServer();
  const accounts = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
  const other = accounts.createAccount({ name: 'Other', organizationId: s.installation.organization_id });
  otherKey = accounts.createKey({ accountId: other.sandbox.id, environment: 'test' }).key;
});
afterAll(() => s.stop());

describe('GET /banks', () => {
  it('lists the Guatemalan banks with a name and a code', async () => {
    const res = await s.api('GET', '/banks');
    expect(res.status).toBe(200);
    const names = res.body.map((b: { name: string }) => b.name);
    for (const n of ['Banco Industrial', 'Banrural', 'BAM', 'G&T Continental', 'BAC Credomatic', 'Crédito Hipotecario Nacional']) {
      expect(names).toContain(n);
    }
    const codes = res.body.map((b: { code: string }) => b.code);
    expect(new Set(codes).size).toBe(codes.length);
    for (const b of res.body) expect(Object.keys(b).sort()).toEqual(['code', 'name']);
  });
});

describe('POST /bank_accounts validation', () => {
  const cases: Array<[string, Record<string, unknown>]> = [];
  for (const field of Object.keys(valid)) {
    const { [field]: _omit, ...rest } = valid as Record<string, unknown>;
    cases.push([`${field} missing`, rest]);
  }
  cases.push(['holder_name empty', { ...valid, holder_name: '' }]);
  cases.push(['holder_name blank', { ...valid, holder_name: '   ' }]);
  cases.push(['holder_name a number', { ...valid, holder_name: 42 }]);
  cases.push(['number with letters', { ...valid, number: '12AB5678' }]);
  cases.push(['number too short', { ...valid, number: '123' }]);
  cases.push(['number a number', { ...valid, number: 12345678 }]);
  cases.push(['bank_name a number', { ...valid, bank_name: 7 }]);
  cases.push(['currency unknown', { ...valid, currency: 'EUR' }]);
  cases.push(['currency lower case', { ...valid, currency: 'gtq' }]);
  cases.push(['account_type unknown', { ...valid, account_type: 'corriente' }]);
  cases.push(['is_preferred a string', { ...valid, is_preferred: 'true' }]);

  it.each(cases)('%s: 400 naming the field, nothing written', async (label, body) => {
    const field = label.split(' ')[0];
    const before = count('bank_accounts');
    const res = await s.api('POST', '/bank_accounts', { body });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_error');
    expect(Object.keys(res.body.errors)).toContain(field);
    expect(count('bank_accounts')).toBe(before);
  });

  it('an unknown bank: 400 unknown_bank with errors.bank_name, nothing written', async () => {
    const before = count('bank_accounts');
    const syncBefore = count('sync_outbox');
    const res = await s.api('POST', '/bank_accounts', { body: { ...valid, bank_name: 'Banco de Narnia' } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('unknown_bank');
    expect(res.body.errors.bank_name).toBeDefined();
    expect(count('bank_accounts')).toBe(before);
    expect(count('sync_outbox')).toBe(syncBefore);
  });

  it('an unknown bank beside another bad field: both named in one 400', async () => {
    const res = await s.api('POST', '/bank_accounts', { body: { ...valid, bank_name: 'Banco de Narnia', number: '1--2' } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_error');
    expect(Object.keys(res.body.errors).sort()).toEqual(['bank_name', 'number']);
  });

  it('every missing field at once is named at once', async () => {
    const res = await s.api('POST', '/bank_accounts', { body: {} });
    expect(res.status).toBe(400);
    expect(Object.keys(res.body.errors).sort()).toEqual(['account_type', 'bank_name', 'currency', 'holder_name', 'number']);
  });
});

describe('bank accounts', () => {
  it('creates with the number masked but kept whole, and a sync record', async () => {
    const res = await s.api('POST', '/bank_accounts', { body: valid });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      holder_name: 'Ana López',
      number: '******5678',
      bank_name: 'Banco Industrial',
      bank_code: 'BI',
      currency: 'GTQ',
      account_type: 'monetaria',
      is_preferred: false,
      status: 'active',
      live_mode: false,
      archived_at: null,
    });
    expect(res.body.id).toMatch(/^bacc_[0-9a-z]{16}$/);
    const stored = s.daemon.ctx.db.prepare('SELECT number FROM bank_accounts WHERE id = ?').get(res.body.id) as { number: string };
    expect(stored.number).toBe('3012345678');
    const sync = s.daemon.ctx.db.prepare("SELECT payload FROM sync_outbox WHERE kind = 'bank_account' ORDER BY seq DESC LIMIT 1").get() as { payload: string };
    expect(JSON.parse(sync.payload)).toMatchObject({ change: 'created', bank_account: { id: res.body.id, number: '3012345678' } });
    const got = await s.api('GET', `/bank_accounts/${res.body.id}`);
    expect(got.body).toEqual(res.body);
    expect(got.text).not.toContain('3012345678');
  });

  it('accepts the bank by alias, code or without accents, and stores the canonical name', async () => {
    for (const [given, name] of [
      ['credito hipotecario nacional', 'Crédito Hipotecario Nacional'],
      ['Banco de Desarrollo Rural', 'Banrural'],
      ['gyt', 'G&T Continental'],
    ]) {
      const res = await s.api('POST', '/bank_accounts', { body: { ...valid, bank_name: given, currency: 'USD' } });
      expect(res.status).toBe(201);
      expect(res.body.bank_name).toBe(name);
    }
  });

  it('one preferred account per currency: setting one unsets the other, not other currencies', async () => {
    const a = (await s.api('POST', '/bank_accounts', { body: { ...valid, is_preferred: true } })).body;
    const usd = (await s.api('POST', '/bank_accounts', { body: { ...valid, currency: 'USD', is_preferred: true } })).body;
    const b = (await s.api('POST', '/bank_accounts', { body: { ...valid, number: '9999-1111', is_preferred: true } })).body;
    expect(b.is_preferred).toBe(true);
    expect((await s.api('GET', `/bank_accounts/${a.id}`)).body.is_preferred).toBe(false);
    const patched = await s.api('PATCH', `/bank_accounts/${a.id}`, { body: { is_preferred: true } });
    expect(patched.status).toBe(200);
    expect(patched.body.is_preferred).toBe(true);
    expect((await s.api('GET', `/bank_accounts/${b.id}`)).body.is_preferred).toBe(false);
    expect((await s.api('GET', `/bank_accounts/${usd.id}`)).body.is_preferred).toBe(true);
    const put = await s.api('PUT', `/bank_accounts/${b.id}`, { body: { is_preferred: true } });
    expect(put.status).toBe(200);
    expect((await s.api('GET', `/bank_accounts/${a.id}`)).body.is_preferred).toBe(false);
    const off = await s.api('PATCH', `/bank_accounts/${b.id}`, { body: { is_preferred: false } });
    expect(off.body.is_preferred).toBe(false);
  });

  it('only is_preferred changes: other fields are refused and nothing changes', async () => {
    const a = (await s.api('POST', '/bank_accounts', { body: valid })).body;
    const res = await s.api('PATCH', `/bank_accounts/${a.id}`, { body: { is_preferred: true, number: '11112222' } });
    expect(res.status).toBe(400);
    expect(res.body.errors.number).toBeDefined();
    expect((await s.api('GET', `/bank_accounts/${a.id}`)).body).toEqual(a);
    const missing = await s.api('PATCH', `/bank_accounts/${a.id}`, { body: {} });
    expect(missing.status).toBe(400);
    expect(missing.body.errors.is_preferred).toBeDefined();
  });

  it('DELETE archives: 200 archived record, gone from the list, kept by id, idempotent', async () => {
    const a = (await s.api('POST', '/bank_accounts', { body: { ...valid, is_preferred: true } })).body;
    const del = await s.api('DELETE', `/bank_accounts/${a.id}`);
    expect(del.status).toBe(200);
    expect(del.body).toMatchObject({ id: a.id, status: 'archived', is_preferred: false });
    expect(del.body.archived_at).toEqual(expect.any(String));
    const list = await s.api('GET', '/bank_accounts?items=100');
    expect(list.body.map((x: { id: string }) => x.id)).not.toContain(a.id);
    expect(list.body.every((x: { status: string }) => x.status === 'active')).toBe(true);
    expect((await s.api('GET', `/bank_accounts/${a.id}`)).body.status).toBe('archived');
    const again = await s.api('DELETE', `/bank_accounts/${a.id}`);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(del.body);
    const patch = await s.api('PATCH', `/bank_accounts/${a.id}`, { body: { is_preferred: true } });
    expect(patch.status).toBe(422);
    expect(patch.body.code).toBe('bank_account_archived');
  });

  it('lists with pagination headers, newest first', async () => {
    const res = await s.api('GET', '/bank_accounts?items=2');
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(2);
    expect(Number(res.headers['total-count'])).toBeGreaterThan(2);
    expect(String(res.headers.link)).toContain('rel="next"');
  });

  it("another account's or another environment's bank account is 404", async () => {
    const a = (await s.api('POST', '/bank_accounts', { body: valid })).body;
    expect((await s.api('GET', `/bank_accounts/${a.id}`, { key: otherKey })).status).toBe(404);
    expect((await s.api('DELETE', `/bank_accounts/${a.id}`, { key: otherKey })).status).toBe(404);
    expect((await s.api('GET', `/bank_accounts/${a.id}`, { key: s.installation.keys.live })).status).toBe(404);
    expect((await s.api('GET', '/bank_accounts', { key: otherKey })).body).toEqual([]);
  });
});
