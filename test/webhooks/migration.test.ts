import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { MIGRATIONS } from '../../src/db/migrations/index.js';
import { WRITE_SQL, webhooksStore } from '../../src/modules/webhooks/store.js';

// Migration 90 rebuilds webhook_deliveries and webhook_attempts with sequence keys. A store
// upgraded with deliveries in its history keeps every delivery, attempt and schedule.
let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function before90(): Db {
  dir = mkdtempSync(join(tmpdir(), 'posd-wh-migration-'));
  const db = openDatabase(join(dir, 'posd.db'), { migrate: false });
  migrate(db, MIGRATIONS.filter((m) => m.version < 90));
  return db;
}

describe('migration 90 (webhook sequential keys)', () => {
  it('keeps deliveries, their attempts and their schedule, and links them to their events', () => {
    const db = before90();
    const t = '2026-11-21T08:00:00.000Z';
    db.prepare(
      `INSERT INTO webhook_endpoints (id, account_id, live_mode, url, description, secret, disabled, from_seq, created_at, updated_at)
       VALUES ('ep_1', 'ac_1', 0, 'https://example.com/h', NULL, 'sealed', 0, 0, ?, ?)`,
    ).run(t, t);
    const ev = db.prepare(`INSERT INTO events (id, account_id, live_mode, type, payload, created_at) VALUES (?, 'ac_1', 0, 'intent.succeeded', '{}', ?)`);
    ev.run('msg_a', t);
    ev.run('msg_b', t);
    const d = db.prepare(
      `INSERT INTO webhook_deliveries (id, account_id, live_mode, endpoint_id, event_id, event_type, event_account_id, payload, status, attempts,
         auto_attempts, next_attempt_ms, last_response_code, last_error, created_at, updated_at)
       VALUES (?, 'ac_1', 0, 'ep_1', ?, 'intent.succeeded', 'ac_1', ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    d.run('whd_b', 'msg_b', null, 'pending', 2, 2, 1_800_000_000_000, 500, 'http_500', t, t);
    d.run('whd_a', 'msg_a', null, 'succeeded', 1, 1, null, 200, null, t, t);
    d.run('whd_test', 'msg_test', '{"x":1}', 'succeeded', 1, 0, null, 204, null, t, t);
    const a = db.prepare(
      `INSERT INTO webhook_attempts (delivery_id, attempt, account_id, live_mode, manual, webhook_timestamp, attempted_at, duration_ms, response_code, error)
       VALUES (?, ?, 'ac_1', 0, ?, 1700000000, ?, 5, ?, ?)`,
    );
    a.run('whd_b', 1, 0, t, 500, null);
    a.run('whd_b', 2, 0, t, null, 'connection_refused');
    a.run('whd_a', 1, 0, t, 200, null);
    a.run('whd_test', 1, 1, t, 204, null);

    migrate(db, MIGRATIONS.filter((m) => m.version <= 90));

    const rows = db.prepare('SELECT seq, id, event_id, event_seq, status, attempts, next_attempt_ms, payload FROM webhook_deliveries ORDER BY seq').all();
    expect(rows).toEqual([
      { seq: 1, id: 'whd_b', event_id: 'msg_b', event_seq: 2, status: 'pending', attempts: 2, next_attempt_ms: 1_800_000_000_000, payload: null },
      { seq: 2, id: 'whd_a', event_id: 'msg_a', event_seq: 1, status: 'succeeded', attempts: 1, next_attempt_ms: null, payload: null },
      { seq: 3, id: 'whd_test', event_id: 'msg_test', event_seq: null, status: 'succeeded', attempts: 1, next_attempt_ms: null, payload: '{"x":1}' },
    ]);
    expect(db.prepare('SELECT delivery_seq, attempt, manual, response_code, error FROM webhook_attempts ORDER BY delivery_seq, attempt').all()).toEqual([
      { delivery_seq: 1, attempt: 1, manual: 0, response_code: 500, error: null },
      { delivery_seq: 1, attempt: 2, manual: 0, response_code: null, error: 'connection_refused' },
      { delivery_seq: 2, attempt: 1, manual: 0, response_code: 200, error: null },
      { delivery_seq: 3, attempt: 1, manual: 1, response_code: 204, error: null },
    ]);
    // Still due, from the index the worker reads.
    expect(db.prepare(`SELECT seq FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_ms <= ?`).all(2_000_000_000_000)).toEqual([{ seq: 1 }]);
    // One delivery per endpoint and event.
    expect(() =>
      db
        .prepare(
          `INSERT INTO webhook_deliveries (id, account_id, live_mode, endpoint_id, event_id, event_seq, event_type, event_account_id, status, created_at, updated_at)
           VALUES ('whd_dup', 'ac_1', 0, 'ep_1', 'msg_a', 1, 'intent.succeeded', 'ac_1', 'pending', ?, ?)`,
        )
        .run(t, t),
    ).toThrow(/UNIQUE/);
    expect(db.pragma('foreign_key_check')).toEqual([]);
    // Deleting the endpoint still takes its deliveries and their attempts with it.
    db.prepare(`DELETE FROM webhook_endpoints WHERE id = 'ep_1'`).run();
    expect(db.prepare('SELECT COUNT(*) AS n FROM webhook_deliveries').get()).toEqual({ n: 0 });
    expect(db.prepare('SELECT COUNT(*) AS n FROM webhook_attempts').get()).toEqual({ n: 0 });
    db.close();
  });
});

describe('migration 96 (derived delivery ids, fewer indexes)', () => {
  it('keeps stored ids, rows and attempts; new rows get derived ids; the fan-out insert makes one row per endpoint and event', () => {
    dir = mkdtempSync(join(tmpdir(), 'posd-wh-migration-'));
    const db = openDatabase(join(dir, 'posd.db'), { migrate: false });
    migrate(db, MIGRATIONS.filter((m) => m.version <= 90));
    const t = '2026-11-21T08:00:00.000Z';
    db.prepare(
      `INSERT INTO webhook_endpoints (id, account_id, live_mode, url, description, secret, disabled, from_seq, created_at, updated_at)
       VALUES ('ep_1', 'ac_1', 0, 'https://example.com/h', NULL, 'sealed', 0, 0, ?, ?)`,
    ).run(t, t);
    const ev = db.prepare(`INSERT INTO events (id, account_id, live_mode, type, payload, created_at) VALUES (?, 'ac_1', 0, 'intent.succeeded', '{}', ?)`);
    for (const id of ['msg_a', 'msg_b', 'msg_c']) ev.run(id, t);
    db.prepare(
      `INSERT INTO webhook_deliveries (id, account_id, live_mode, endpoint_id, event_id, event_seq, event_type, event_account_id, status, attempts,
         created_at, updated_at)
       VALUES ('whd_0123456789abcdef', 'ac_1', 0, 'ep_1', 'msg_a', 1, 'intent.succeeded', 'ac_1', 'succeeded', 1, ?, ?)`,
    ).run(t, t);
    db.prepare(
      `INSERT INTO webhook_attempts (delivery_seq, attempt, account_id, live_mode, manual, webhook_timestamp, attempted_at, duration_ms, response_code)
       VALUES (1, 1, 'ac_1', 0, 0, 1700000000, ?, 5, 200)`,
    ).run(t);
    db.prepare('UPDATE webhook_cursor SET seq = 1 WHERE id = 1').run();

    migrate(db);

    const store = webhooksStore(db);
    expect(store.delivery('whd_0123456789abcdef')).toMatchObject({ seq: 1, id: 'whd_0123456789abcdef', status: 'succeeded' });
    expect(store.attemptsOf(1)).toMatchObject([{ attempt: 1, response_code: 200 }]);
    // The fan-out of events 1-3 (1 is behind the cursor), written twice (a batch redone): rows once.
    const batch = () =>
      db.transaction(() => {
        db.prepare(WRITE_SQL.insertDeliveries).run({ rows: JSON.stringify([[1, 'ep_1'], [2, 'ep_1'], [3, 'ep_1']]), next_attempt_ms: 0, created_at: t });
        db.prepare(WRITE_SQL.advanceCursor).run({ seq: 3 });
      })();
    batch();
    batch();
    const rows = db.prepare('SELECT seq, id, event_seq FROM webhook_deliveries ORDER BY seq').all() as Array<{ seq: number; id: string | null }>;
    expect(rows).toEqual([
      { seq: 1, id: 'whd_0123456789abcdef', event_seq: 1 },
      { seq: 2, id: null, event_seq: 2 },
      { seq: 3, id: null, event_seq: 3 },
    ]);
    // Derived ids: gaps.md's shape, distinct, found again; newest first on the endpoint's page.
    const page = store.deliveriesPage('ep_1', 10, 0).rows;
    expect(page.map((r) => r.seq)).toEqual([3, 2, 1]);
    for (const r of page) {
      expect(r.id).toMatch(/^whd_[0-9a-z]{16}$/);
      expect(store.delivery(r.id)?.seq).toBe(r.seq);
    }
    expect(new Set(page.map((r) => r.id)).size).toBe(3);
    expect(store.delivery('whd_zzzzzzzzzzzzzzzz')).toBeUndefined();
    expect(db.pragma('foreign_key_check')).toEqual([]);
    db.prepare(`DELETE FROM webhook_endpoints WHERE id = 'ep_1'`).run();
    expect(db.prepare('SELECT COUNT(*) AS n FROM webhook_attempts').get()).toEqual({ n: 0 });
    db.close();
  });
});
