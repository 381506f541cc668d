import { afterEach, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { PageClient } from '../helpers/page-client.js';
import { ManualClock } from '../../devices/index.js';
import { tx } from '../../src/db/database.js';
import { hashPassword } from '../../src/modules/ops/password.js';
import { setManagerPassword } from '../../src/modules/ops/store.js';
import { centralSide } from '../../src/sync/central/sync-store.js';
import { addStoreAccount } from '../sync/helpers.js';

// Issue 16: "a central's page says nothing about its stores". The stores panel from the central's
// own tables: last push, records waiting (held, parked), lag and the latest reconciliation report.

const PASSWORD = 'central manager 2026';
const T0 = Date.parse('2026-06-05T15:00:00.000Z');
let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

const iso = (ms: number) => new Date(ms).toISOString();

describe("a central's status page", () => {
  it('lists its stores: last push, records waiting, lag, reconciliation; a silent store and parked records in red', async () => {
    const clock = new ManualClock(T0);
    server = await startTestServer({ config: { role: 'central', sync: { store_silent_ms: 15 * 60_000 } }, clock });
    const db = server.daemon.ctx.db;
    const one = addStoreAccount(server, 'Zona 10');
    const two = addStoreAccount(server, 'Antigua');
    const hash = await hashPassword(PASSWORD);
    tx(db, () => setManagerPassword(db, hash));
    let seq = 0;
    const received = (
      storeId: string,
      accountId: string,
      kind: string,
      createdAt: number,
      receivedAt: number,
      outcome: 'applied' | 'held' | 'parked',
      payload: object = {},
    ) =>
      centralSide(db).insertReceived({
        id: `sync_${storeId}_${++seq}`,
        store_id: storeId,
        seq,
        account_id: accountId,
        live_mode: 1,
        kind,
        hash: `h${seq}`,
        payload: JSON.stringify(payload),
        created_at: iso(createdAt),
        received_at: iso(receivedAt),
        outcome,
        reason: outcome === 'applied' ? null : 'applier failed',
        decided_at: outcome === 'parked' ? iso(receivedAt) : null,
      });
    tx(db, () => {
      const s = centralSide(db);
      // Zona 10: pushed a minute ago, its newest record made 3 s before it arrived; nothing waits.
      s.ensureStore('store_z10', one.accountId, true, iso(T0 - 86_400_000));
      received('store_z10', one.accountId, 'cash_sale', T0 - 63_000, T0 - 60_000, 'applied');
      s.setReceived('store_z10', seq, iso(T0 - 60_000), { waiting: 0, waiting_since: null });
      s.setApplied('store_z10', 0, seq);
      // Antigua: silent for 2 h, one record held (a kind this central has no applier for) and one parked, its newest record 40 min late, and a
      // reconciliation report for 4 June.
      s.ensureStore('store_ant', two.accountId, true, iso(T0 - 86_400_000));
      received('store_ant', two.accountId, 'reconciliation_report', T0 - 3 * 3600_000, T0 - 3 * 3600_000, 'applied', { day: '2026-06-04', differences: [] });
      received('store_ant', two.accountId, 'kind_of_a_newer_store', T0 - 2 * 3600_000 - 45 * 60_000, T0 - 2 * 3600_000 - 5 * 60_000, 'held');
      received('store_ant', two.accountId, 'cash_sale', T0 - 2 * 3600_000 - 40 * 60_000, T0 - 2 * 3600_000, 'parked');
      // It said at that push it still held 12 records, the oldest made 2 h 10 min ago.
      s.setReceived('store_ant', seq, iso(T0 - 2 * 3600_000), { waiting: 12, waiting_since: iso(T0 - 2 * 3600_000 - 10 * 60_000) });
      s.setApplied('store_ant', 0, seq);
    });

    const page = new PageClient(server.url);
    await page.login(PASSWORD);
    const html = (await page.get('/')).text;
    const section = /<section id="stores" data-state="ok">([\s\S]*?)<\/section>/.exec(html)![1];
    // The first panel of the page.
    expect(html.indexOf('id="stores"')).toBeLessThan(html.indexOf('id="terminals"'));
    const rows = [...section.matchAll(/<tr><td data-label="Store"[\s\S]*?<\/tr>/g)].map((m) => m[0]);
    expect(rows).toHaveLength(2);
    const text = (row: string) =>
      row
        .replace(/<td[^>]*>/g, '|')
        .replace(/<[^>]+>/g, '')
        .split('|')
        .slice(1);
    const byStore = Object.fromEntries(rows.map((r) => [/data-id="([^"]+)"/.exec(r)![1], r]));

    const z10 = byStore.store_z10;
    expect(text(z10)[0]).toBe('store_z10 · Zona 10');
    expect(text(z10)[1]).toBe('ok');
    expect(text(z10)[2]).toMatch(/^(\d+ \w{3} )?\d\d:\d\d, 1 min ago$/);
    expect(z10).toContain(`datetime="${iso(T0 - 60_000)}"`);
    expect(text(z10).slice(3)).toEqual(['none', '0', 'none', 'none', '3 s', 'no difference reported']);
    expect(z10).not.toContain('class="bad"');

    const ant = byStore.store_ant;
    expect(text(ant)[0]).toBe('store_ant · Antigua');
    expect(text(ant)[1]).toBe('silent');
    expect(text(ant)[2]).toMatch(/^(\d+ \w{3} )?\d\d:\d\d, 2 h ago$/);
    expect(ant).toMatch(/<td data-label="Last push" class="bad">/); // silent longer than sync.store_silent_ms
    // Its own backlog as it said at its last push, in red: the box has gone quiet with records to send.
    expect(text(ant)[3]).toMatch(/^12, oldest (\d+ \w{3} )?\d\d:\d\d, 2 h ago$/);
    expect(ant).toContain('class="bad" data-box-waiting="12"');
    expect(text(ant)[4]).toBe('2 (1 parked: posd sync records)');
    expect(text(ant)[5]).toBe('none');
    expect(text(ant)[6]).toBe('none');
    expect(text(ant)[7]).toBe('40 min');
    expect(text(ant)[8]).toMatch(/^differences reported for 2026-06-04 \((\d+ \w{3} )?\d\d:\d\d, 3 h ago\)$/);
    expect(ant).toContain('data-reconciliation="different"');
    // The silent store raises the verdict, naming it; the counts say one silent, one ok.
    expect(html).toContain('data-state="problems"');
    expect(html).toMatch(/<li><span class="problem">sync: 1 store\(s\) have not pushed for more than 15 min: store_ant \(since/);
    expect(section).toContain('data-count-state="silent" data-count="1"');
    expect(section).toContain('data-count-state="ok" data-count="1"');
    // The longest silent first.
    expect(section.indexOf('data-id="store_ant"')).toBeLessThan(section.indexOf('data-id="store_z10"'));
    // A central with no link of its own has no "sync with central" panel.
    expect(html).not.toContain('id="sync"');

    // A report older than the window (14 days) is no longer looked for.
    clock.advance(15 * 86_400_000);
    const again = new PageClient(server.url); // the session did not last 15 days
    await again.login(PASSWORD);
    const later = (await again.get('/')).text;
    expect(later).toMatch(/<tr><td data-label="Store"[^>]*data-id="store_ant"[\s\S]*?class="ok" data-reconciliation="none">no difference reported<\/td><\/tr>/);
    expect(later).not.toContain('data-reconciliation="different"');
  });

  it('a store box has no stores panel', async () => {
    server = await startTestServer();
    const hash = await hashPassword(PASSWORD);
    tx(server.daemon.ctx.db, () => setManagerPassword(server!.daemon.ctx.db, hash));
    const page = new PageClient(server.url);
    await page.login(PASSWORD);
    expect((await page.get('/')).text).not.toContain('id="stores"');
  });
});
