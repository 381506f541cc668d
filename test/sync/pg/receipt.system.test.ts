import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type pg from 'pg';
import { startPgCluster, type PgCluster } from '../../helpers/pg-cluster.js';
import { createPool, migrate, receivePush, type ReceiptScope } from '../../../src/sync/pg/index.js';
import { ApiError } from '../../../src/errors.js';
import { push, records } from './records.js';

let cluster: PgCluster;
let pool: pg.Pool;
/** A second front: its own pool, its own connections. */
let other: pg.Pool;

const scope: ReceiptScope = {
  keyAccount: { id: 'ac_one', live_mode: true },
  accounts: [
    { id: 'ac_one', live_mode: true },
    { id: 'sbx_one', live_mode: false },
  ],
};
const totals = { totalsOf: (_kind: string, p: Record<string, unknown>) => ({ currency: String(p.currency), amount_in_cents: Number(p.amount_in_cents) }) };

beforeAll(async () => {
  cluster = await startPgCluster();
  pool = createPool({ ...cluster.config(), max: 4 });
  other = createPool({ ...cluster.config(), max: 4 });
  await migrate(pool);
  // Idempotent: every front and the core run it at start, possibly together.
  await Promise.all([migrate(pool), migrate(other)]);
});

afterAll(async () => {
  await pool?.end();
  await other?.end();
  await cluster?.stop();
});

async function rows(storeId: string): Promise<Array<{ seq: number; id: string; outcome: string }>> {
  return (await pool.query('SELECT seq, id, outcome FROM sync_received WHERE store_id = $1 ORDER BY seq', [storeId])).rows;
}

async function storeRow(storeId: string): Promise<{ received_seq: number; applied_seq: number; account_id: string } | undefined> {
  return (await pool.query('SELECT * FROM sync_stores WHERE store_id = $1', [storeId])).rows[0];
}

async function refusal(p: Promise<unknown>): Promise<ApiError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  return err as ApiError;
}

describe('push receipt on PostgreSQL', () => {
  test('a push is received once; the same push again is all duplicates and changes nothing', async () => {
    const body = push('st_a', records('st_a', 1, 50));
    const first = await receivePush(pool, scope, body, { totals });
    expect(first).toMatchObject({ received_seq: 50, received: 50, duplicates: 0 });
    const again = await receivePush(other, scope, body, { totals });
    expect(again).toMatchObject({ received_seq: 50, received: 0, duplicates: 50 });
    const held = await rows('st_a');
    expect(held.map((r) => r.seq)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(new Set(held.map((r) => r.outcome))).toEqual(new Set(['received']));
    expect(await storeRow('st_a')).toMatchObject({ received_seq: 50, applied_seq: 0, account_id: 'ac_one' });
    // The day totals count each record once, whatever the retries.
    const t = (await pool.query("SELECT count, sum FROM sync_day_totals WHERE store_id = 'st_a' AND measure = 'records.cash_sale'")).rows;
    expect(t).toEqual([{ count: 50, sum: (100 * 50 * 51) / 2 }]);
  });

  test('a retry racing its original on another front: each record once, one of them answers duplicates', async () => {
    const body = push('st_race', records('st_race', 1, 400));
    const [a, b] = await Promise.all([receivePush(pool, scope, body, { totals }), receivePush(other, scope, body, { totals })]);
    expect([a.received, b.received].sort()).toEqual([0, 400]);
    expect([a.duplicates, b.duplicates].sort()).toEqual([0, 400]);
    expect(a.received_seq).toBe(400);
    expect(b.received_seq).toBe(400);
    expect((await rows('st_race')).length).toBe(400);
    const t = (await pool.query("SELECT count FROM sync_day_totals WHERE store_id = 'st_race'")).rows;
    expect(t).toEqual([{ count: 400 }]);
  });

  test('overlapping pushes racing (a retry that carries more): the union is received once, in order', async () => {
    const recs = records('st_over', 1, 300);
    const results = await Promise.all([
      receivePush(pool, scope, push('st_over', recs.slice(0, 200)), { totals }),
      receivePush(other, scope, push('st_over', recs), { totals }),
      receivePush(other, scope, push('st_over', recs.slice(0, 100)), { totals }),
    ]);
    // Whatever the order the row lock gave them, every record was received by exactly one push...
    expect(results.reduce((n, r) => n + r.received, 0)).toBe(300);
    const held = await rows('st_over');
    expect(held.map((r) => r.seq)).toEqual(Array.from({ length: 300 }, (_, i) => i + 1));
    expect((await storeRow('st_over'))?.received_seq).toBe(300);
  });

  test('two stores racing with the same record id on two fronts: one keeps it, the other is a conflict', async () => {
    const a = records('st_ra', 1, 200);
    const b = records('st_rb', 1, 200);
    b[150] = { ...b[150], id: a[150].id };
    const [ra, rb] = await Promise.allSettled([receivePush(pool, scope, push('st_ra', a)), receivePush(other, scope, push('st_rb', b))]);
    const won = [ra, rb].filter((r) => r.status === 'fulfilled');
    const lost = [ra, rb].filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(won.length).toBe(1);
    expect(lost.length).toBe(1);
    expect((lost[0].reason as ApiError).code).toBe('sync_record_conflict');
    const held = (await pool.query('SELECT store_id, count(*) AS n FROM sync_received WHERE store_id IN ($1, $2) GROUP BY store_id', ['st_ra', 'st_rb'])).rows;
    expect(held).toEqual([{ store_id: ra.status === 'fulfilled' ? 'st_ra' : 'st_rb', n: 200 }]);
  });

  test('day totals: per account, environment, day and currency; events and reconciliation reports are not counted', async () => {
    const recs = [
      ...records('st_t', 1, 2, { day: '2026-11-26' }),
      ...records('st_t', 3, 3, { day: '2026-11-27', account: 'sbx_one', live: false }),
      ...records('st_t', 4, 5, { day: '2026-11-27', kind: 'event' }),
      ...records('st_t', 6, 6, { day: '2026-11-27', kind: 'reconciliation_report' }),
    ].map((r, i) => ({ ...r, prev_seq: i }));
    await receivePush(pool, scope, push('st_t', recs), { totals });
    const t = (
      await pool.query("SELECT account_id, live_mode, day, currency, measure, count, sum FROM sync_day_totals WHERE store_id = 'st_t' ORDER BY day, account_id")
    ).rows;
    expect(t).toEqual([
      { account_id: 'ac_one', live_mode: true, day: '2026-11-26', currency: 'eur', measure: 'records.cash_sale', count: 2, sum: 300 },
      { account_id: 'sbx_one', live_mode: false, day: '2026-11-27', currency: 'eur', measure: 'records.cash_sale', count: 1, sum: 300 },
    ]);
  });

  test("day totals are the store's local days: the zone its push names, kept for its pushes that name none", async () => {
    // 10:30Z and 11:30Z on the 27th are 23:30 on the 27th and 00:30 on the 28th in Auckland (UTC+13 in November).
    const at = (r: ReturnType<typeof records>[number], iso: string) => ({ ...r, created_at: iso });
    const [a, b] = records('st_nz', 1, 2);
    await receivePush(
      pool,
      scope,
      { ...push('st_nz', [at(a, '2026-11-27T10:30:00.000Z'), at(b, '2026-11-27T11:30:00.000Z')]), zone: 'Pacific/Auckland' },
      { totals },
    );
    const [c] = records('st_nz', 3, 3);
    await receivePush(pool, scope, push('st_nz', [at(c, '2026-11-28T10:59:00.000Z')]), { totals });
    const t = (await pool.query("SELECT to_char(day, 'YYYY-MM-DD') AS day, count, sum FROM sync_day_totals WHERE store_id = 'st_nz' ORDER BY day")).rows;
    expect(t).toEqual([
      { day: '2026-11-27', count: 1, sum: 100 },
      { day: '2026-11-28', count: 2, sum: 500 },
    ]);
    expect((await storeRow('st_nz')) as unknown).toMatchObject({ zone: 'Pacific/Auckland' });
  });

  test('a record resent with changed content is sync_record_conflict; nothing of that push is kept', async () => {
    await receivePush(pool, scope, push('st_c', records('st_c', 1, 10)));
    const changed = records('st_c', 5, 12);
    changed[0] = { ...changed[0], payload: { ...changed[0].payload, amount_in_cents: 1 } };
    const err = await refusal(receivePush(pool, scope, push('st_c', changed)));
    expect(err.code).toBe('sync_record_conflict');
    expect(err.extra).toMatchObject({ record_id: 'st_c_rec_5', applied_seq: 10 });
    expect((await rows('st_c')).length).toBe(10);
    expect((await storeRow('st_c'))?.received_seq).toBe(10);
    // A different id at a received seq is the same conflict.
    const renamed = records('st_c', 10, 11);
    renamed[0] = { ...renamed[0], id: 'st_c_other' };
    expect((await refusal(receivePush(pool, scope, push('st_c', renamed)))).code).toBe('sync_record_conflict');
  });

  test('an id another store already pushed is a conflict (the global unique id is the backstop)', async () => {
    await receivePush(pool, scope, push('st_d1', records('st_d1', 1, 3)));
    const stolen = records('st_d2', 1, 3);
    stolen[2] = { ...stolen[2], id: 'st_d1_rec_2' };
    const err = await refusal(receivePush(pool, scope, push('st_d2', stolen)));
    expect(err.code).toBe('sync_record_conflict');
    expect(err.extra).toMatchObject({ record_id: 'st_d1_rec_2' });
    expect(await rows('st_d2')).toEqual([]);
    // The refused push's transaction rolled back whole, the store's first row with it.
    expect(await storeRow('st_d2')).toBeUndefined();
    // The same id twice within one push.
    const twice = records('st_d3', 1, 2);
    twice[1] = { ...twice[1], id: twice[0].id };
    expect((await refusal(receivePush(pool, scope, push('st_d3', twice)))).code).toBe('sync_record_conflict');
  });

  test('a gap in the sequence is refused with sync_sequence_gap and nothing received', async () => {
    await receivePush(pool, scope, push('st_g', records('st_g', 1, 5)));
    const err = await refusal(receivePush(pool, scope, push('st_g', records('st_g', 7, 9))));
    expect(err.code).toBe('sync_sequence_gap');
    expect(err.extra).toMatchObject({ applied_seq: 5, record_id: 'st_g_rec_7' });
    expect(err.message).toContain('the central has received up to seq 5');
    // A gap inside the batch, after a good first record.
    const inner = [...records('st_g', 6, 7), ...records('st_g', 9, 9)];
    const err2 = await refusal(receivePush(pool, scope, push('st_g', inner)));
    expect(err2.code).toBe('sync_sequence_gap');
    expect(err2.message).toContain('the record before it in the batch is seq 7');
    expect((await rows('st_g')).length).toBe(5);
    // Out-of-order seqs are a validation error before any SQL.
    const backwards = records('st_g', 6, 7).reverse();
    expect((await refusal(receivePush(pool, scope, push('st_g', backwards)))).code).toBe('validation_error');
  });

  test('a record of an account outside the key scope is sync_account_forbidden; a store bound to another account is sync_store_mismatch', async () => {
    const foreign = records('st_f', 1, 2, { account: 'ac_other' });
    const err = await refusal(receivePush(pool, scope, push('st_f', foreign)));
    expect(err.code).toBe('sync_account_forbidden');
    expect(err.status).toBe(403);
    expect(await storeRow('st_f')).toBeUndefined();
    // The sandbox is in scope, as a sandbox: the same id claiming live mode is not.
    await receivePush(pool, scope, push('st_f', records('st_f', 1, 1, { account: 'sbx_one', live: false })));
    expect((await refusal(receivePush(pool, scope, push('st_f', records('st_f', 2, 2, { account: 'sbx_one', live: true }))))).code).toBe(
      'sync_account_forbidden',
    );
    const otherKey: ReceiptScope = { keyAccount: { id: 'ac_two', live_mode: true }, accounts: [{ id: 'ac_two', live_mode: true }] };
    const err2 = await refusal(receivePush(pool, otherKey, push('st_f', records('st_f', 2, 2, { account: 'ac_two' }))));
    expect(err2.code).toBe('sync_store_mismatch');
  });

  test('the receipt is set-based: a push of 1,000 records is a handful of statements, not one per record', async () => {
    const client = await pool.connect();
    const seen: string[] = [];
    const query = client.query.bind(client);
    // Count the statements the receipt sends through this connection.
    (client as unknown as { query: unknown }).query = (text: unknown, ...rest: unknown[]) => {
      seen.push(typeof text === 'string' ? text : String((text as { text?: string }).text));
      return (query as (...a: unknown[]) => unknown)(text, ...rest);
    };
    const onePool = { connect: async () => client } as unknown as pg.Pool;
    try {
      const r = await receivePush(onePool, scope, push('st_set', records('st_set', 1, 1000)), { totals });
      expect(r.received).toBe(1000);
    } finally {
      // receivePush released the connection to the pool (inTransaction).
      (client as unknown as { query: unknown }).query = query;
    }
    // BEGIN, store insert, FOR UPDATE, the unnest insert (with the totals upsert and the advance), COMMIT.
    expect(seen.length).toBe(5);
    expect(seen.some((s) => s.includes('unnest'))).toBe(true);
  });
});
