import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { PageClient } from '../helpers/page-client.js';
import { ManualClock } from '../../devices/index.js';
import { tx } from '../../src/db/database.js';
import { hashPassword } from '../../src/modules/ops/password.js';
import { setManagerPassword } from '../../src/modules/ops/store.js';
import { recordedChecks } from '../../src/modules/ops/doctor.js';
import { statusView } from '../../src/modules/ops/panels.js';
import { listStores } from '../../src/sync/central/store-list.js';
import { syncStatus } from '../../src/sync/status.js';
import { accountsOf } from '../../src/accounts/service.js';
import { seedStores } from './central-stores-seed.js';

// Issue 37: a central's view of 1,000 stores. A store silent past sync.store_silent_ms raises the
// verdict, doctor and /metrics; the stores panel counts them by state, sorts, filters and pages.

const PASSWORD = 'central of a thousand';
const T0 = Date.parse('2026-06-05T15:00:00.000Z');
const N = 1000;
let server: TestServer;
let seeded: ReturnType<typeof seedStores>;
let page: PageClient;

beforeAll(async () => {
  server = await startTestServer({ config: { role: 'central' }, clock: new ManualClock(T0) });
  seeded = seedStores(server, N, T0);
  const hash = await hashPassword(PASSWORD);
  tx(server.daemon.ctx.db, () => setManagerPassword(server.daemon.ctx.db, hash));
  page = new PageClient(server.url);
  await page.login(PASSWORD);
});
afterAll(async () => {
  await server?.stop();
});

const section = (html: string) => /<section id="stores" data-state="ok">([\s\S]*?)<\/section>/.exec(html)![1];
const rowIds = (html: string) => [...section(html).matchAll(/<tr><td data-label="Store"[^>]*data-id="([^"]+)"/g)].map((m) => m[1]);
const count = (html: string, state: string) => Number(new RegExp(`data-count-state="${state}" data-count="(\\d+)"`).exec(html)![1]);

describe("a central's 1,000 stores", () => {
  it('are counted by state, the longest silent first, filtered and paged', () => {
    const { config, db } = server.daemon.ctx;
    const all = listStores(config, db, T0, { per_page: N });
    expect(all.total).toBe(N);
    expect(all.counts).toEqual({ silent: 10, attention: seeded.parked.length, new: 5, ok: N - 10 - seeded.parked.length - 5 });
    expect(all.stores.slice(0, 10).map((s) => s.store_id)).toEqual([...seeded.silent].reverse());
    // Then by silence: store_0994 (994 min) before store_0993, ...; a store that never pushed counts from when it joined (1 h ago).
    expect(all.stores[10].store_id).toBe('store_0994');
    const silences = all.stores.map((s) => s.silent_ms);
    expect(silences).toEqual([...silences].sort((a, b) => b - a));
    expect(all.stores.filter((s) => s.state === 'new').map((s) => s.store_id)).toEqual(seeded.never);
    expect(all.stores.findIndex((s) => s.state === 'new')).toBe(all.stores.findIndex((s) => s.store_id === 'store_0060') + 1); // 60 min each: by id

    expect(
      listStores(config, db, T0, { state: 'attention' })
        .stores.map((s) => s.store_id)
        .sort(),
    ).toEqual(seeded.parked);
    // By account name: Tienda 3 holds the stores numbered ...3.
    const names = Object.fromEntries(
      accountsOf(server.daemon.ctx)
        .accounts()
        .map((a) => [a.id, a.name ?? '']),
    );
    const t3 = listStores(config, db, T0, { text: 'tienda 3', per_page: N }, { names });
    expect(t3.matched).toBe(100);
    expect(t3.stores.every((s) => s.store_id.endsWith('3'))).toBe(true);
    const p3 = listStores(config, db, T0, { page: 3 });
    expect(p3).toMatchObject({ page: 3, pages: 20, per_page: 50, matched: N });
    expect(p3.stores.map((s) => s.store_id)).toEqual(all.stores.slice(100, 150).map((s) => s.store_id));
    // Past the last page: the last page.
    expect(listStores(config, db, T0, { page: 99 }).page).toBe(20);
  });

  it("raise the central's verdict, sync status and doctor, naming the silent stores", () => {
    const { config, db } = server.daemon.ctx;
    const s = syncStatus(config, db, T0);
    expect(s.role).toBe('central');
    expect(s.central).toMatchObject({ stores: N, silent: 10, store_silent_ms: 86_400_000, last_push_at: new Date(T0 - 60_000).toISOString() });
    expect(s.central!.silent_stores.map((x) => x.store_id)).toEqual([...seeded.silent].reverse().slice(0, 5));
    const alert = s.alerts.find((a) => a.code === 'sync_store_silent')!;
    expect(alert.message).toMatch(/^10 store\(s\) have not pushed for more than 24 h: store_1000 \(since .*\), .*, and 5 more$/);
    const doctor = recordedChecks(config, db, T0).filter((c) => c.name === 'sync' && !c.ok);
    expect(doctor.map((c) => c.detail)).toContain(alert.message);
    const view = statusView(server.daemon.ctx);
    expect(view.level).toBe('attention');
    expect(view.verdict.some((p) => p.problem.startsWith('sync: 10 store(s) have not pushed'))).toBe(true);
  });

  it('the page shows the counts, one page of 50 sorted by silence, a filter and the pages', async () => {
    const html = (await page.get('/')).text;
    expect(count(html, 'silent')).toBe(10);
    expect(count(html, 'attention')).toBe(seeded.parked.length);
    expect(count(html, 'new')).toBe(5);
    expect(section(html)).toContain('data-total="1000"');
    const first = rowIds(html);
    expect(first).toHaveLength(50);
    expect(first.slice(0, 10)).toEqual([...seeded.silent].reverse());
    expect(section(html)).toContain('data-page="1" data-pages="20"');
    expect(section(html)).toContain('href="/?stores_page=2#stores"');

    const two = (await page.get('/?stores_page=2')).text;
    expect(rowIds(two)[0]).toBe('store_0954');
    const silent = (await page.get('/?stores_state=silent')).text;
    expect(rowIds(silent)).toEqual([...seeded.silent].reverse());
    expect(section(silent)).toContain('<strong class="bad" data-count-state="silent" data-count="10">');
    // By account name, from the page's filter.
    expect(count((await page.get('/?stores_find=Tienda%207')).text, 'ok')).toBe(count(html, 'ok'));
    expect(rowIds((await page.get('/?stores_find=Tienda%207')).text).every((id) => id.endsWith('7'))).toBe(true);
    const found = (await page.get('/?stores_find=store_012')).text;
    expect(rowIds(found).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `store_012${i}`));
    expect(section(found)).toContain('value="store_012"');
    const none = (await page.get('/?stores_find=nothing-like-it')).text;
    expect(section(none)).toContain('No store matches this filter.');
    expect((await page.get('/?stores_state=sleepy')).status).toBe(400);
  });

  it("/metrics has each store's silence in seconds and the counts by state", async () => {
    const res = await request(`${server.url}/metrics`);
    const text = await res.body.text();
    const series = text.split('\n').filter((l) => l.startsWith('posd_sync_store_silence_seconds{'));
    expect(series).toHaveLength(N);
    expect(series).toContain('posd_sync_store_silence_seconds{store="store_0001"} 60');
    expect(series).toContain(`posd_sync_store_silence_seconds{store="store_1000"} ${2 * 86_400 + 1000}`);
    expect(text).toContain('posd_sync_stores{state="silent"} 10');
    expect(text).toContain('posd_sync_alerts{code="sync_store_silent"} 1');
  });
});
