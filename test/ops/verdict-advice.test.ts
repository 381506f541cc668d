/**
 * Issue 37: the advice read "check `sync.central_url`", a setting a store joined with
 * `--central-url` does not use. A store joined the way `posd init --central-url` joins (the
 * address kept in its database, no setting), its central gone: the verdict's line names the
 * address it joined with, in plain words, not the setting.
 */
import { afterAll, expect, it } from 'vitest';
import { statusView } from '../../src/modules/ops/panels.js';
import { addStoreAccount, removeDir, startCentral, startStore, until, type TestStore } from '../sync/helpers.js';
import type { TestServer } from '../helpers/server.js';

let central: TestServer | undefined;
let store: TestStore | undefined;
afterAll(async () => {
  await store?.stop();
  if (store) removeDir(store.dataDir);
  await central?.stop();
});

it('a joined store whose central is gone is told where its address comes from', async () => {
  central = await startCentral();
  const acct = addStoreAccount(central);
  // Raised a second after the first failed contact, not after 15 minutes: what is tested is the advice.
  store = await startStore(central.url, acct.key, { sync: { alert_link_down_ms: 1000 } });
  expect(store.daemon.ctx.config.sync.central_url).toBe('');
  await central.stop();
  central = undefined;
  const line = await until('the link-down line in the verdict', () =>
    statusView(store!.daemon.ctx).verdict.find((p) => p.problem.startsWith('sync: no contact with the central')),
  );
  expect(line.problem).toContain('the central refused the connection');
  expect(line.fix).toContain('the address is the one this box joined with (posd init --central-url, kept in its database)');
  expect(line.fix).not.toContain('POSD_SYNC_CENTRAL_URL');
});
