import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestServer } from '../helpers/server.js';
import { posdExit, requireBuild } from './e2e/processes.js';
import { addStoreAccount, startCentral } from './helpers.js';

const posd = posdExit;

let central: TestServer;
const dirs: string[] = [];
beforeAll(async () => {
  requireBuild();
  central = await startCentral();
});
afterAll(async () => {
  await central?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const dir = () => {
  const d = mkdtempSync(join(tmpdir(), 'posd-join-'));
  dirs.push(d);
  return d;
};

describe('posd init --central-url --central-key', () => {
  it('refuses a key the central does not know, or an unreachable central, and creates nothing', async () => {
    const d1 = dir();
    const bad = await posd(['init', '--central-url', central.url, '--central-key', `sk_live_${'A'.repeat(32)}`, '--data', d1]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/the central refused the key/);
    expect(bad.stderr).not.toContain('A'.repeat(32));
    const d2 = dir();
    const down = await posd(['init', '--central-url', 'http://127.0.0.1:9', '--central-key', `sk_live_${'B'.repeat(32)}`, '--data', d2]);
    expect(down.code).toBe(2);
    expect(down.stderr).toMatch(/cannot reach the central/);
    // Nothing means nothing: no data folder is left behind for a later serve to fill (issue 16).
    expect(existsSync(`${d1}/posd.db`)).toBe(false);
    expect(existsSync(`${d2}/posd.db`)).toBe(false);
    const status = await posd(['sync', 'status', '--json', '--data', d2]);
    expect(status.code).toBe(2);
    expect(status.stderr).toMatch(/no installation in/);
    const one = await posd(['init', '--central-url', central.url, '--data', dir()]);
    expect(one.code).toBe(2);
    expect(one.stderr).toMatch(/go together/);
  });

  it('joins once with the same ids, and refuses a second init on the same data', async () => {
    const acct = addStoreAccount(central, 'Store 9');
    const d = dir();
    const ok = await posd(['init', '--central-url', central.url, '--central-key', acct.key, '--json', '--data', d]);
    expect(ok.code).toBe(0);
    const joined = JSON.parse(ok.stdout);
    expect(joined.accounts.map((a: { id: string }) => a.id).sort()).toEqual([acct.accountId, acct.sandboxId].sort());
    expect(ok.stdout).not.toContain(acct.key);
    const again = await posd(['init', '--central-url', central.url, '--central-key', acct.key, '--data', d]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/already holds an installation/);
    expect(existsSync(join(d, 'posd.db'))).toBe(true);
    const status = JSON.parse((await posd(['sync', 'status', '--json', '--data', d])).stdout);
    expect(status).toMatchObject({ configured: true, store_id: joined.store_id, records_waiting: 0 });
  });
});
