import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { runPosd } from '../helpers/process.js';
import { seedStores } from './central-stores-seed.js';

// Issue 37: `posd stores list|show` and `posd sync status` run against a central's data folder
// (beside its running daemon) describe the central and its stores, not "works alone".

let central: TestServer;
let store: TestServer;
let seeded: ReturnType<typeof seedStores>;

beforeAll(async () => {
  central = await startTestServer({ config: { role: 'central' } });
  seeded = seedStores(central, 120, Date.now());
  store = await startTestServer();
});
afterAll(async () => {
  await central?.stop();
  await store?.stop();
});

const posd = (...args: string[]) => runPosd(args, { POSD_DATA: '' });

describe('posd stores and sync status at a central', () => {
  it('stores list: the counts by state, the longest silent first; --state, --find, --page, --json', async () => {
    const out = await posd('stores', 'list', '--data', central.dataDir);
    expect(out.code).toBe(0);
    const lines = out.stdout.trim().split('\n');
    expect(lines[0]).toBe(
      `120 store(s): 1 silent (no push for more than 24 h), ${seeded.parked.length} with records parked, 5 not pushed yet, ${120 - 1 - seeded.parked.length - 5} ok`,
    );
    expect(lines[1]).toMatch(/^store\s+account\s+state\s+last push/);
    expect(lines[2]).toMatch(/^store_0100\s+Tienda 0\s+silent\s+48 h ago\s+7/);
    expect(lines).toHaveLength(2 + 120);

    const silent = JSON.parse((await posd('stores', 'list', '--state', 'silent', '--json', '--data', central.dataDir)).stdout);
    expect(silent).toMatchObject({ total: 120, matched: 1, counts: { silent: 1, new: 5 } });
    expect(silent.stores.map((s: { store_id: string }) => s.store_id)).toEqual(seeded.silent);
    const found = JSON.parse(
      (await posd('stores', 'list', '--find', 'tienda 3', '--per-page', '5', '--page', '2', '--json', '--data', central.dataDir)).stdout,
    );
    expect(found).toMatchObject({ matched: 12, page: 2, pages: 3, per_page: 5 });
    expect(found.stores.every((s: { store_id: string }) => s.store_id.endsWith('3'))).toBe(true);
    const bad = await posd('stores', 'list', '--state', 'sleepy', '--data', central.dataDir);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('silent, attention, new, ok');
  });

  it('stores show: one store; an unknown one is named', async () => {
    const out = await posd('stores', 'show', 'store_0100', '--data', central.dataDir);
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(/^store {11}store_0100$/m);
    expect(out.stdout).toMatch(/^state {11}silent$/m);
    expect(out.stdout).toMatch(/^box waiting {5}7 at its last push$/m);
    const json = JSON.parse((await posd('stores', 'show', 'store_0050', '--json', '--data', central.dataDir)).stdout);
    expect(json).toMatchObject({ store_id: 'store_0050', state: 'attention', parked: 1 });
    const none = await posd('stores', 'show', 'store_nope', '--data', central.dataDir);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('no store store_nope at this central');
  });

  it("sync status describes the central: its stores, the silent ones, and an alert; a store box's folder is refused by posd stores", async () => {
    const out = await posd('sync', 'status', '--data', central.dataDir);
    expect(out.code).toBe(0);
    expect(out.stdout).not.toContain('works alone');
    expect(out.stdout).not.toMatch(/^connected/m);
    expect(out.stdout).toMatch(/^role {12}central: receives the pushes of its store boxes/m);
    expect(out.stdout).toMatch(/^stores {10}120, 1 silent for more than 24 h/m);
    expect(out.stdout).toMatch(/^ {2}silent {8}store_0100 since /m);
    expect(out.stdout).toMatch(/^ALERT {11}1 store\(s\) have not pushed for more than 24 h: store_0100/m);
    const json = JSON.parse((await posd('sync', 'status', '--json', '--data', central.dataDir)).stdout);
    expect(json.central).toMatchObject({ stores: 120, silent: 1, store_silent_ms: 86_400_000 });

    const doctor = await posd('doctor', '--data', central.dataDir);
    expect(doctor.stdout).toMatch(/^FAIL {2}sync\s+1 store\(s\) have not pushed for more than 24 h: store_0100/m);

    const atStore = await posd('stores', 'list', '--data', store.dataDir);
    expect(atStore.code).toBe(2);
    expect(atStore.stderr).toContain('posd stores runs on the central');
    expect((await posd('sync', 'status', '--json', '--data', store.dataDir)).stdout).toContain('"central":null');
  });
});
