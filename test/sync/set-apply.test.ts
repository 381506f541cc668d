import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { validateConfig } from '../../src/config.js';
import { createContext } from '../../src/daemon.js';
import { openDatabase } from '../../src/db/database.js';
import { MODULES } from '../../src/modules/index.js';
import type { PosdModule } from '../../src/api/module.js';
import { projectSlice } from '../../src/sync/central/projector.js';
import { SetRun } from '../../src/sync/central/set-apply.js';
import { eventPush } from '../../src/sync/shared/kinds.js';
import type { TestServer } from '../helpers/server.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { addStoreAccount, http, removeDir, startCentral } from './helpers.js';

/**
 * Set-based apply (src/sync/central/set-apply.ts) decides and writes exactly what the per-record
 * path does: the same received records, copied into two files, are projected one way in each, and
 * every table of the two files is compared row by row.
 */

/** A test kind that applies as sets like `event`, whose set fails on a record marked `bad` (and the record alone is parked). */
const tallyModule: PosdModule = {
  name: 'tally-test',
  sync: {
    push: {
      tally: {
        apply(ctx, record) {
          if (record.payload.bad) throw new Error('a bad tally');
          eventPush.apply(ctx, record, { storeId: '', keyAccountId: '' });
        },
        applySet(ctx, records, origin) {
          if (records.some((r) => r.payload.bad)) {
            // Part of the set is written before it fails: its savepoint must take that back.
            eventPush.applySet?.(ctx, records.slice(0, 1), origin);
            throw new Error('a bad tally in the set');
          }
          eventPush.applySet?.(ctx, records, origin);
        },
      },
    },
  },
};

const cleanup: Array<() => Promise<void> | void> = [];
let central: TestServer;
let a: ReturnType<typeof addStoreAccount>;
let b: ReturnType<typeof addStoreAccount>;

beforeAll(async () => {
  // Paused: the pushed records stay received until a copy of the file projects them.
  central = await startCentral({ modules: [...MODULES, tallyModule], config: { sync: { projector_paused: true } } });
  cleanup.push(() => central.stop());
  a = addStoreAccount(central, 'Store A');
  b = addStoreAccount(central, 'Store B');
});
afterAll(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

let n = 0;
function cashSale(accountId: string, extra: { checkoutId?: string } = {}) {
  const i = ++n;
  const at = new Date().toISOString();
  const checkoutId = extra.checkoutId ?? `chk_set${i}`;
  const common = { amount_in_cents: 1500, currency: 'GTQ', description: 'Sale', customer_id: null, tax_id: null, created_at: at };
  return {
    sale: { id: `int_set${i}`, ...common, checkout: { id: checkoutId }, tax_invoice_url: null },
    cash_intent: { id: `ci_set${i}`, account_id: accountId, live_mode: 1, intent_id: `int_set${i}`, checkout_id: checkoutId, ...common },
    intent: { created_at: at },
  };
}

const event = (id: string, type = 'intent.succeeded') => ({ id, type, payload: { id: `pi_${id}` }, created_at: new Date().toISOString() });

/**
 * Every table of a database, its rows in the order written (rowid; a WITHOUT ROWID table by its
 * key). The ids an applier makes at random (`newId`: a prefix and 16 characters) are numbered in
 * the order they first appear, so two files written alike read alike.
 */
function dump(db: ReturnType<typeof openDatabase>): Record<string, string[]> {
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all() as string[];
  const seen = new Map<string, string>();
  const rename = (text: string) =>
    text.replace(/\b[a-z]{2,6}_[0-9a-z]{16}\b/g, (id) => seen.get(id) ?? (seen.set(id, `id#${seen.size}`), `id#${seen.size - 1}`));
  return Object.fromEntries(
    tables.map((t) => {
      const withoutRowid = /WITHOUT ROWID/i.test(db.prepare('SELECT sql FROM sqlite_master WHERE name = ?').pluck().get(t) as string);
      const rows = db.prepare(`SELECT * FROM "${t}"${withoutRowid ? '' : ' ORDER BY rowid'}`).all() as Array<Record<string, unknown>>;
      return [t, rows.map((r) => rename(JSON.stringify(r)))];
    }),
  );
}

/** The central's file copied twice, each projected to the end, one with sets and one record by record; both dumped. */
function projectBothWays(storeId: string): { sets: Record<string, string[]>; alone: Record<string, string[]>; counts: typeof SetRun.counts } {
  const out: Record<string, Record<string, string[]>> = {};
  const before = { ...SetRun.counts };
  const at = Date.now();
  for (const sets of [true, false]) {
    const dir = mkdtempSync(join(tmpdir(), 'posd-setapply-'));
    cleanup.push(() => removeDir(dir));
    central.daemon.ctx.db.prepare('VACUUM INTO ?').run(join(dir, 'posd.db'));
    const db = openDatabase(join(dir, 'posd.db'));
    const ctx = createContext(validateConfig({ data_dir: dir, role: 'central' }), {
      db,
      clock: new ManualClock(at),
      log: pino({ level: 'silent' }),
      modules: [...MODULES, tallyModule],
    });
    // The webhooks' fan-out hook: called for each new event, in seq order, either way.
    const hooked: number[] = [];
    ctx.outbox.onEmit((seq) => hooked.push(seq));
    // Small slices too: a run never crosses a slice, and a slice's end falls inside the batch.
    while (projectSlice(ctx, storeId, { records: 137, ms: 60_000, sets }) > 0);
    out[String(sets)] = { ...dump(db), hooked: hooked.map(String) };
    db.close();
  }
  const counts = { sets: SetRun.counts.sets - before.sets, fallbacks: SetRun.counts.fallbacks - before.fallbacks };
  return { sets: out.true, alone: out.false, counts };
}

describe('set-based apply', () => {
  it('decides and writes a mixed slice exactly as the per-record path', async () => {
    // Store B's own checkout, applied before: store A's sale naming it is refused at projection.
    const bSale = cashSale(b.accountId);
    const bRes = await http('POST', `${central.url}/sync/push`, b.key, {
      protocol: 1,
      store_id: 'store_set_b',
      records: [
        {
          seq: 1,
          prev_seq: 0,
          id: 'sync_set_b1',
          kind: 'cash_sale',
          account_id: b.accountId,
          live_mode: true,
          payload: bSale,
          created_at: new Date().toISOString(),
        },
      ],
    });
    expect(bRes.status).toBe(200);
    expect(projectSlice(central.daemon.ctx, 'store_set_b')).toBe(1);

    const now = () => new Date().toISOString();
    const sale = cashSale(a.accountId);
    const payloads: Array<[string, Record<string, unknown>]> = [
      ...Array.from({ length: 130 }, (_, i) => ['event', event(`msg_set_${i}`)] as [string, Record<string, unknown>]),
      ['cash_sale', sale],
      ['event', event('msg_set_0')], // a duplicate of the run's first event, after a record that went alone
      ['event', event('msg_set_late')],
      ['event', event('msg_set_late')], // a duplicate inside one run
      ['cash_sale', sale], // the same sale again under another record id
      ['cash_sale', cashSale(a.accountId, { checkoutId: bSale.sale.checkout.id })], // refused: another store's checkout
      ['gift_wrap', { id: 'gw_1' }], // no applier: held
      ['reconciliation_report', { day: '2026-01-01', differences: [] }],
      ...Array.from({ length: 90 }, (_, i) => ['event', event(`msg_set_tail_${i}`, 'checkout.completed')] as [string, Record<string, unknown>]),
      // Out of order: an event whose time is older than those before it, and a sale after its events.
      ['event', { ...event('msg_set_old'), created_at: '2026-01-01T00:00:00.000Z' }],
      ['tally', event('msg_tally_1')],
      ['tally', event('msg_tally_2')],
    ];
    const records = payloads.map(([kind, payload], i) => ({
      seq: i + 1,
      prev_seq: i,
      id: `sync_set_a${i + 1}`,
      kind,
      account_id: a.accountId,
      live_mode: true,
      payload,
      created_at: now(),
    }));
    const res = await http('POST', `${central.url}/sync/push`, a.key, { protocol: 1, store_id: 'store_set_a', records });
    expect(res.status, JSON.stringify(res.body)).toBe(200);

    const { sets, alone, counts } = projectBothWays('store_set_a');
    expect(counts.sets).toBeGreaterThan(3);
    expect(counts.fallbacks).toBe(0);
    expect(Object.keys(sets).length).toBeGreaterThan(20);
    for (const t of Object.keys(alone)) expect(sets[t], t).toEqual(alone[t]);
    expect(Object.keys(sets)).toEqual(Object.keys(alone));

    // The outcomes are the mix intended.
    const outcomes = (dumped: Record<string, string[]>) =>
      dumped.sync_received
        .map((r) => JSON.parse(r) as { id: string; outcome: string; seq: number; store_id: string })
        .filter((r) => r.store_id === 'store_set_a')
        .sort((x, y) => x.seq - y.seq)
        .map((r) => r.outcome);
    const got = outcomes(sets);
    expect(got.filter((o) => o === 'applied').length).toBe(records.length - 2);
    expect(got[records.findIndex((r) => r.kind === 'gift_wrap')]).toBe('held');
    expect(got[records.findIndex((r) => r.kind === 'cash_sale' && r.payload !== sale)]).toBe('rejected');
    const ids = sets.events.map((r) => (JSON.parse(r) as { id: string }).id);
    expect(ids.filter((id) => id === 'msg_set_0' || id === 'msg_set_late')).toHaveLength(2);
    expect(ids).toContain('msg_set_tail_89');
    // Every new event hooked once, in seq order (duplicates skipped): 130 + 1 + 90 + 1 + 2 events, and the sale's and the report's.
    expect(sets.hooked.length).toBeGreaterThanOrEqual(224);
    expect(sets.hooked.map(Number)).toEqual([...sets.hooked.map(Number)].sort((x, y) => x - y));
  });

  it('falls back to each record alone when a set statement fails, to the same outcomes and rows', async () => {
    const records = ['msg_tally_a', 'msg_tally_bad', 'msg_tally_c'].map((id, i) => ({
      seq: i + 1,
      prev_seq: i,
      id: `sync_tally_${i + 1}`,
      kind: 'tally',
      account_id: a.accountId,
      live_mode: true,
      payload: { ...event(id), ...(id.includes('bad') ? { bad: true } : {}) },
      created_at: new Date().toISOString(),
    }));
    const res = await http('POST', `${central.url}/sync/push`, a.key, { protocol: 1, store_id: 'store_set_fail', records });
    expect(res.status, JSON.stringify(res.body)).toBe(200);

    const { sets, alone, counts } = projectBothWays('store_set_fail');
    expect(counts.fallbacks).toBe(3);
    for (const t of Object.keys(alone)) if (t !== 'hooked') expect(sets[t], t).toEqual(alone[t]);
    // The failed set's first insert was hooked before its savepoint rolled it (and the hook's own
    // writes) back, as an applier failing after its emit is on the per-record path; then each alone.
    expect(sets.hooked).toEqual(['1', ...alone.hooked]);
    const rows = sets.sync_received.map((r) => JSON.parse(r) as { id: string; outcome: string }).filter((r) => r.id.startsWith('sync_tally_'));
    expect(rows.map((r) => r.outcome).sort()).toEqual(['applied', 'applied', 'parked']);
    const ids = sets.events.map((r) => (JSON.parse(r) as { id: string }).id);
    expect(ids).toContain('msg_tally_a');
    expect(ids).toContain('msg_tally_c');
    expect(ids).not.toContain('msg_tally_bad');
  });
});
