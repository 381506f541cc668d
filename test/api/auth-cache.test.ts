import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { AccountsService } from '../../src/accounts/service.js';
import { openDatabase } from '../../src/db/database.js';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

describe('authentication results are cached, never past a change', () => {
  it('a key revoked by another process (the CLI) stops at the next request', async () => {
    const daemonSide = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
    const key = daemonSide.createKey({ accountId: s.installation.account_id, environment: 'live' });
    expect((await s.api('GET', '/test', { key: key.key })).status).toBe(200);
    expect((await s.api('GET', '/test', { key: key.key })).status).toBe(200);
    const cli = openDatabase(join(s.dataDir, 'posd.db'));
    expect(new AccountsService(cli, s.daemon.ctx.clock).revokeKey(key.prefix)).toBe(true);
    cli.close();
    const after = await s.api('GET', '/test', { key: key.key });
    expect(after.status).toBe(401);
    expect(after.body.code).toBe('revoked_key');
  });

  it('a key revoked inside the daemon stops at the next request', async () => {
    const daemonSide = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
    const key = daemonSide.createKey({ accountId: s.installation.account_id, environment: 'live' });
    expect((await s.api('GET', '/account', { key: key.key })).status).toBe(200);
    daemonSide.revokeKey(key.prefix);
    expect((await s.api('GET', '/account', { key: key.key })).status).toBe(401);
  });

  it('a new connected child is reachable at once, and the cache tells accounts apart', async () => {
    const daemonSide = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
    expect((await s.api('GET', '/account', { key: s.installation.keys.live })).body.id).toBe(s.installation.account_id);
    const child = daemonSide.createAccount({ name: 'Nueva', parentId: s.installation.account_id });
    const r = await s.api('GET', '/account', { key: s.installation.keys.live, headers: { 'x-account-id': child.account.id } });
    expect(r.body.id).toBe(child.account.id);
    expect((await s.api('GET', '/account', { key: s.installation.keys.live })).body.id).toBe(s.installation.account_id);
  });
});
