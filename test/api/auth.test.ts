import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { AccountsService, hashKey, keyDisplayPrefix } from '../../src/accounts/service.js';
import { newId } from '../../src/ids.js';
import { MODULES_WITH_FIXTURE } from '../helpers/fixture-module.js';

let s: TestServer;
let accounts: AccountsService;
let keys: Record<string, string>;
let ids: Record<string, string>;

beforeAll(async () => {
  s = await startTestServer({ modules: MODULES_WITH_FIXTURE });
  accounts = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
  const { account_id: platform, sandbox_id: platformSbx, organization_id: org } = s.installation;
  const child = accounts.createAccount({ name: 'Child', parentId: platform });
  const grandchild = accounts.createAccount({ name: 'Grandchild', parentId: child.account.id });
  const sibling = accounts.createAccount({ name: 'Sibling', organizationId: org });
  const otherOrg = accounts.createOrganization('Other');
  const stranger = accounts.createAccount({ name: 'Stranger', organizationId: otherOrg.id });
  ids = {
    platform,
    platformSbx,
    org,
    child: child.account.id,
    childSbx: child.sandbox.id,
    grandchild: grandchild.account.id,
    sibling: sibling.account.id,
    stranger: stranger.account.id,
  };
  const revoked = accounts.createKey({ accountId: platform, environment: 'live' });
  accounts.revokeKey(revoked.prefix);
  const revokedTest = accounts.createKey({ accountId: platformSbx, environment: 'test' });
  accounts.revokeKey(revokedTest.prefix);
  // A live account holding a test key: data from before "live accounts hold no test keys".
  const mismatched = `sk_test_${'M'.repeat(32)}`;
  accounts.insertKeyHash({
    id: newId('key'),
    prefix: keyDisplayPrefix(mismatched),
    hash: hashKey(mismatched),
    kind: 'account',
    environment: 'test',
    account_id: platform,
    organization_id: org,
    live_mode: 0,
    created_at: new Date().toISOString(),
  });
  keys = {
    live: s.installation.keys.live,
    test: s.installation.keys.test,
    orgLive: accounts.createKey({ organizationId: org, environment: 'live' }).key,
    orgTest: accounts.createKey({ organizationId: org, environment: 'test' }).key,
    revoked: revoked.key,
    revokedTest: revokedTest.key,
    mismatched,
  };
});
afterAll(() => s.stop());

describe('authentication (spec section 5)', () => {
  it('a missing key answers 401 missing_key', async () => {
    const r = await s.api('GET', '/test', { key: null });
    expect(r.status).toBe(401);
    expect(r.body.code).toBe('missing_key');
    expect(typeof r.body.message).toBe('string');
  });

  it('an invalid key answers 401 invalid_key', async () => {
    const r = await s.api('GET', '/test', { key: `sk_live_${'x'.repeat(32)}` });
    expect(r.status).toBe(401);
    expect(r.body.code).toBe('invalid_key');
  });

  it('a masked key never authenticates, even when its visible part is right', async () => {
    const masked = `${keys.live.slice(0, 12)}****`;
    const r = await s.api('GET', '/test', { key: masked });
    expect(r.status).toBe(401);
    expect(r.body.code).toBe('masked_key');
  });

  it('a revoked live key answers 401 revoked_key', async () => {
    const r = await s.api('GET', '/test', { key: keys.revoked });
    expect(r.status).toBe(401);
    expect(r.body.code).toBe('revoked_key');
  });

  it('a test key that no longer exists answers 401 pointing to the sandbox', async () => {
    for (const key of [keys.revokedTest, `sk_test_${'z'.repeat(32)}`]) {
      const r = await s.api('GET', '/test', { key });
      expect(r.status).toBe(401);
      expect(r.body.code).toBe('test_key_not_found');
      expect(r.body.message).toMatch(/sandbox/i);
    }
  });

  it('a key whose environment does not match its account answers 401 environment_mismatch', async () => {
    const r = await s.api('GET', '/test', { key: keys.mismatched });
    expect(r.status).toBe(401);
    expect(r.body.code).toBe('environment_mismatch');
  });

  it('X-PUBLIC-KEY is ignored: it neither authenticates nor breaks a good key', async () => {
    expect((await s.api('GET', '/test', { key: null, headers: { 'x-public-key': keys.live } })).status).toBe(401);
    expect((await s.api('GET', '/test', { key: keys.live, headers: { 'x-public-key': 'pk_live_nonsense' } })).status).toBe(200);
  });

  it('GET /test confirms the environment of each key', async () => {
    const live = await s.api('GET', '/test', { key: keys.live });
    expect(live.body).toMatchObject({ environment: 'live', account_id: ids.platform, sandbox_id: null });
    expect(live.body.message).toBe('Hello My store');
    const test = await s.api('GET', '/test', { key: keys.test });
    expect(test.body).toMatchObject({ environment: 'sandbox', account_id: ids.platformSbx, sandbox_id: ids.platformSbx });
  });
});

describe('connected accounts and X-ACCOUNT-ID', () => {
  it('acts inside a direct child', async () => {
    const r = await s.api('GET', '/account', { key: keys.live, headers: { 'x-account-id': ids.child } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ id: ids.child, parent_account_id: ids.platform, live_mode: true });
  });

  it('accepts account_id as an alias of the header', async () => {
    const r = await s.api('GET', `/account?account_id=${ids.child}`, { key: keys.live });
    expect(r.body.id).toBe(ids.child);
  });

  it('a test key reaches the child sandbox, never the live child', async () => {
    expect((await s.api('GET', '/account', { key: keys.test, headers: { 'x-account-id': ids.childSbx } })).body.id).toBe(ids.childSbx);
    expect((await s.api('GET', '/account', { key: keys.test, headers: { 'x-account-id': ids.child } })).status).toBe(404);
  });

  it('grandchildren, siblings and unknown ids answer 404 alike', async () => {
    for (const id of [ids.grandchild, ids.sibling, ids.stranger, 'ac_doesnotexist0000']) {
      const r = await s.api('GET', '/account', { key: keys.live, headers: { 'x-account-id': id } });
      expect(r.status, id).toBe(404);
      expect(r.body.code).toBe('not_found');
    }
  });

  it('lists direct children only, with pagination headers', async () => {
    const r = await s.api('GET', '/connected_accounts', { key: keys.live });
    expect(r.status).toBe(200);
    expect(r.body.map((a: { id: string }) => a.id)).toEqual([ids.child]);
    expect(r.headers['total-count']).toBe('1');
    expect((await s.api('GET', `/connected_accounts/${ids.child}`, { key: keys.live })).status).toBe(200);
    expect((await s.api('GET', `/connected_accounts/${ids.grandchild}`, { key: keys.live })).status).toBe(404);
  });
});

describe('organization keys', () => {
  it('read across every account of the organization without X-ACCOUNT-ID', async () => {
    const r = await s.api('GET', '/balances', { key: keys.orgLive });
    expect(r.status).toBe(200);
    const owners = new Set(r.body.map((b: { account_id: string }) => b.account_id));
    expect(owners).toEqual(new Set([ids.platform, ids.child, ids.grandchild, ids.sibling]));
    expect(owners.has(ids.stranger)).toBe(false);
  });

  it('org test keys cover only sandboxes', async () => {
    const r = await s.api('GET', '/balances', { key: keys.orgTest });
    for (const b of r.body) expect(b.account_id).toMatch(/^sbx_/);
  });

  it('name one account with X-ACCOUNT-ID, any member of the organization', async () => {
    const r = await s.api('GET', '/account', { key: keys.orgLive, headers: { 'x-account-id': ids.sibling } });
    expect(r.body.id).toBe(ids.sibling);
    expect((await s.api('GET', '/account', { key: keys.orgLive, headers: { 'x-account-id': ids.stranger } })).status).toBe(404);
  });

  it('GET /test and GET /account without X-ACCOUNT-ID read every account of the organization (spec 5 rule 5, issue 15)', async () => {
    const every = new Set([ids.platform, ids.child, ids.grandchild, ids.sibling]);
    const account = await s.api('GET', '/account', { key: keys.orgLive });
    expect(account.status).toBe(200);
    expect(new Set(account.body.map((a: { id: string }) => a.id))).toEqual(every);
    const test = await s.api('GET', '/test', { key: keys.orgLive });
    expect(test.status).toBe(200);
    expect(new Set(test.body.map((a: { account_id: string }) => a.account_id))).toEqual(every);
    expect(test.body.every((a: { environment: string }) => a.environment === 'live')).toBe(true);
    const sandboxes = await s.api('GET', '/test', { key: keys.orgTest });
    expect(sandboxes.body.every((a: { account_id: string; sandbox_id: string }) => a.account_id.startsWith('sbx_') && a.sandbox_id === a.account_id)).toBe(
      true,
    );
    // Naming one keeps the single object.
    expect((await s.api('GET', '/test', { key: keys.orgLive, headers: { 'x-account-id': ids.child } })).body.account_id).toBe(ids.child);
  });

  it('aggregated coupons carry their account_id (issue 15)', async () => {
    for (const [key, name] of [
      [keys.live, 'PLATFORM10'],
      [accounts.createKey({ accountId: ids.sibling, environment: 'live' }).key, 'SIBLING10'],
    ]) {
      expect((await s.api('POST', '/coupons', { key, body: { name, percent_off: 10 } })).status).toBe(201);
    }
    const r = await s.api('GET', '/coupons', { key: keys.orgLive });
    expect(r.status).toBe(200);
    expect(Object.fromEntries(r.body.map((c: { name: string; account_id: string }) => [c.name, c.account_id]))).toEqual({
      PLATFORM10: ids.platform,
      SIBLING10: ids.sibling,
    });
  });

  it('every write answers 403 organization_key_unsupported, even with X-ACCOUNT-ID', async () => {
    for (const headers of [{}, { 'x-account-id': ids.platform }] as Array<Record<string, string>>) {
      const r = await s.api('POST', '/fixture_notes', { key: keys.orgLive, body: { text: 'x', amount_in_cents: 100 }, headers });
      expect(r.status).toBe(403);
      expect(r.body.code).toBe('organization_key_unsupported');
    }
  });
});
