import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type pg from 'pg';
import { startPgCluster, type PgCluster } from '../../helpers/pg-cluster.js';
import {
  createPool,
  keyByHash,
  markApplied,
  migrate,
  ProjectorLease,
  projectorLag,
  publishAccounts,
  publishKeys,
  publishOrganizations,
  readReceived,
  receivePush,
  scopeOf,
  storesBehind,
  type ReceiptScope,
  type SyncAccountRow,
} from '../../../src/sync/pg/index.js';
import { recordHash } from '../../../src/sync/shared/wire.js';
import { push, records } from './records.js';

let cluster: PgCluster;
let pool: pg.Pool;
const scope: ReceiptScope = { keyAccount: { id: 'ac_one', live_mode: true }, accounts: [{ id: 'ac_one', live_mode: true }] };

beforeAll(async () => {
  cluster = await startPgCluster();
  pool = createPool({ ...cluster.config(), max: 4 });
  await migrate(pool);
});

afterAll(async () => {
  await pool?.end();
  await cluster?.stop();
});

async function store(storeId: string) {
  return (
    await pool.query('SELECT received_seq, applied_seq, held_count, rejected_count, parked_count, skipped_count FROM sync_stores WHERE store_id = $1', [
      storeId,
    ])
  ).rows[0];
}

describe('the projector reading the received log', () => {
  test('readReceived gives a store its records past the cursor, in order, as pushed (the hash still matches)', async () => {
    const recs = records('st_p', 1, 30);
    await receivePush(pool, scope, push('st_p', recs));
    const page = await readReceived(pool, 'st_p', 10, 5);
    expect(page.map((r) => r.seq)).toEqual([11, 12, 13, 14, 15]);
    const r = page[0];
    expect(r).toMatchObject({
      id: 'st_p_rec_11',
      kind: 'cash_sale',
      account_id: 'ac_one',
      live_mode: true,
      outcome: 'received',
      created_at: recs[10].created_at,
    });
    expect(JSON.parse(r.payload)).toEqual(recs[10].payload);
    expect(r.hash).toBe(recordHash(recs[10], r.payload));
    expect(await storesBehind(pool)).toEqual([{ store_id: 'st_p', applied_seq: 0, received_seq: 30 }]);
  });

  test('markApplied moves applied_seq with GREATEST and the counters with the outcomes that changed; repeating it changes nothing', async () => {
    await markApplied(pool, 'st_p', 20, [
      ...Array.from({ length: 17 }, (_, i) => ({ seq: i + 1, outcome: 'applied' as const })),
      { seq: 18, outcome: 'rejected', reason: 'slot taken' },
      { seq: 19, outcome: 'held', reason: 'no applier for kind x' },
      { seq: 20, outcome: 'parked', reason: 'applier failed' },
    ]);
    expect(await store('st_p')).toMatchObject({ applied_seq: 20, held_count: 1, rejected_count: 1, parked_count: 1, skipped_count: 0 });
    // The core crashed after its SQLite commit and before hearing back: the same call again.
    await markApplied(pool, 'st_p', 20, [
      { seq: 18, outcome: 'rejected', reason: 'slot taken' },
      { seq: 19, outcome: 'held' },
      { seq: 20, outcome: 'parked' },
    ]);
    expect(await store('st_p')).toMatchObject({ applied_seq: 20, held_count: 1, rejected_count: 1, parked_count: 1 });
    // A late, older report never moves the position back.
    await markApplied(pool, 'st_p', 12, []);
    expect((await store('st_p')).applied_seq).toBe(20);
    // The held record applied later, the parked one skipped by an operator: counters follow.
    await markApplied(pool, 'st_p', 30, [
      { seq: 19, outcome: 'applied' },
      { seq: 20, outcome: 'skipped', reason: 'operator' },
      ...Array.from({ length: 10 }, (_, i) => ({ seq: 21 + i, outcome: 'applied' as const })),
    ]);
    expect(await store('st_p')).toMatchObject({ applied_seq: 30, held_count: 0, rejected_count: 1, parked_count: 0, skipped_count: 1 });
    const outcomes = (await pool.query("SELECT outcome, count(*) AS n FROM sync_received WHERE store_id = 'st_p' GROUP BY outcome ORDER BY outcome")).rows;
    expect(outcomes).toEqual([
      { outcome: 'applied', n: 28 },
      { outcome: 'rejected', n: 1 },
      { outcome: 'skipped', n: 1 },
    ]);
    expect(await storesBehind(pool)).toEqual([]);
  });

  test('projectorLag: per store behind, the records not applied and the age of the oldest of them', async () => {
    const minutesAgo = (m: number) => () => new Date(Date.now() - m * 60_000);
    // Received 30 min ago (seqs 1-5), then 10 min ago (6-8): nothing applied, 30 min behind.
    await receivePush(pool, scope, push('st_lag', records('st_lag', 1, 5)), { now: minutesAgo(30) });
    await receivePush(pool, scope, push('st_lag', records('st_lag', 6, 8)), { now: minutesAgo(10) });
    let lag = await projectorLag(pool);
    expect(lag.perStore.get('st_lag')).toBe(8);
    expect(lag.secondsPerStore.get('st_lag')).toBeGreaterThanOrEqual(30 * 60 - 1);
    expect(lag.secondsPerStore.get('st_lag')).toBeLessThan(31 * 60);
    // The first push applied: behind by the second push's age.
    await markApplied(pool, 'st_lag', 5, []);
    lag = await projectorLag(pool);
    expect(lag.perStore.get('st_lag')).toBe(3);
    expect(lag.secondsPerStore.get('st_lag')).toBeGreaterThanOrEqual(10 * 60 - 1);
    expect(lag.secondsPerStore.get('st_lag')).toBeLessThan(11 * 60);
    // All applied: the store is not behind, in records or in time.
    await markApplied(pool, 'st_lag', 8, []);
    lag = await projectorLag(pool);
    expect(lag.perStore.has('st_lag')).toBe(false);
    expect(lag.secondsPerStore.has('st_lag')).toBe(false);
  });
});

describe('one projector: the advisory-lock lease', () => {
  test('a second session does not get the lock until the first one’s connection dies', async () => {
    const first = new ProjectorLease(cluster.config());
    const second = new ProjectorLease(cluster.config());
    try {
      expect(await first.tryAcquire()).toBe(true);
      expect(await second.tryAcquire()).toBe(false);
      // The standby waits inside PostgreSQL (no polling) ...
      let got = false;
      const waiting = second.acquire().then(() => {
        got = true;
      });
      // ... seen by the server as a session waiting on the advisory lock, not holding it.
      let waiters = 0;
      for (let i = 0; i < 500 && waiters === 0; i++) {
        waiters = (await pool.query("SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")).rows[0].n;
      }
      expect(waiters).toBe(1);
      expect(got).toBe(false);
      // The leader's connection dies (a killed process, a cut network: the server ends the session).
      const pid = await first.pid();
      await pool.query('SELECT pg_terminate_backend($1)', [pid]);
      await waiting;
      expect(got).toBe(true);
      expect(await first.ended).toBeInstanceOf(Error);
      // The old leader, reconnected, is now the standby.
      const again = new ProjectorLease(cluster.config());
      expect(await again.tryAcquire()).toBe(false);
      await again.release();
    } finally {
      await first.release();
      await second.release();
    }
  });

  test('a leader process killed with SIGKILL hands the lease to the standby', async () => {
    const cfg = cluster.config();
    const script = `
      const pg = require('pg');
      const c = new pg.Client(${JSON.stringify(cfg)});
      c.connect().then(() => c.query("SELECT pg_try_advisory_lock(hashtext('posd-projector')) AS ok")).then((r) => {
        console.log(r.rows[0].ok ? 'leader' : 'standby');
      });
      setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const lines = createInterface({ input: child.stdout! });
    const [first] = (await once(lines, 'line')) as [string];
    expect(first).toBe('leader');
    const standby = new ProjectorLease(cfg);
    try {
      expect(await standby.tryAcquire()).toBe(false);
      const waiting = standby.acquire();
      child.kill('SIGKILL');
      await once(child, 'exit');
      await waiting;
      // Held by the standby now: a third session is refused.
      const third = new ProjectorLease(cfg);
      expect(await third.tryAcquire()).toBe(false);
      await third.release();
    } finally {
      await standby.release();
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});

describe('the read models the core publishes for the fronts', () => {
  const account = (id: string, extra: Partial<SyncAccountRow> = {}): SyncAccountRow => ({
    id,
    organization_id: 'org_m',
    live_mode: true,
    name: id,
    sandbox_of: null,
    parent_account_id: null,
    tax_id: null,
    tax_name: null,
    country: 'NL',
    default_currency: 'eur',
    event_format: 'unified',
    created_at: '2026-11-01T00:00:00.000Z',
    ...extra,
  });

  test('scopeOf: the key account, its sandbox, its connected children and theirs; publishing again changes nothing', async () => {
    await publishOrganizations(pool, [{ id: 'org_m', name: 'Chain', created_at: '2026-11-01T00:00:00.000Z' }]);
    const rows = [
      account('ac_m'),
      account('sbx_m', { live_mode: false, sandbox_of: 'ac_m' }),
      account('ac_kid', { parent_account_id: 'ac_m', created_at: '2026-11-02T00:00:00.000Z' }),
      account('sbx_kid', { live_mode: false, sandbox_of: 'ac_kid', created_at: '2026-11-02T00:00:00.000Z' }),
      account('ac_stranger'),
      account('ac_grandkid', { parent_account_id: 'ac_kid' }),
    ];
    await publishAccounts(pool, rows);
    await publishAccounts(pool, rows);
    expect((await scopeOf(pool, 'ac_m')).map((a) => a.id)).toEqual(['ac_m', 'sbx_m', 'ac_kid', 'sbx_kid']);
    expect((await scopeOf(pool, 'ac_kid')).map((a) => a.id)).toEqual(['ac_kid', 'sbx_kid', 'ac_grandkid']);
    expect(await scopeOf(pool, 'ac_none')).toEqual([]);
    await publishAccounts(pool, [account('ac_m', { name: 'Renamed' })]);
    expect((await scopeOf(pool, 'ac_m'))[0]).toMatchObject({ id: 'ac_m', name: 'Renamed', live_mode: true, organization_id: 'org_m' });
  });

  test('keys by hash for auth at the front; a revocation is published as the same row', async () => {
    const key = {
      id: 'key_1',
      prefix: 'pk_live_ab',
      hash: 'a'.repeat(64),
      kind: 'account' as const,
      environment: 'live' as const,
      account_id: 'ac_m',
      organization_id: 'org_m',
      live_mode: 1,
      created_at: '2026-11-01T00:00:00.000Z',
      revoked_at: null,
    };
    await publishKeys(pool, [key]);
    expect(await keyByHash(pool, key.hash)).toEqual(key);
    await publishKeys(pool, [{ ...key, revoked_at: '2026-11-03T00:00:00.000Z' }]);
    expect((await keyByHash(pool, key.hash))?.revoked_at).toBe('2026-11-03T00:00:00.000Z');
    expect(await keyByHash(pool, 'b'.repeat(64))).toBeUndefined();
  });
});
