import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { successOps, type Outcome } from '../../src/modules/webhooks/outcome.js';
import { WRITE_SQL, type WriteStatement } from '../../src/modules/webhooks/write-sql.js';

// The worker's grouped writes on a real database: a fan-out batch in one statement (only enabled
// endpoints, only events past the cursor), successes as two statements per group of like answers.
let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('webhook bookkeeping statements', () => {
  it('fans out to enabled endpoints only and records grouped successes with their own attempt numbers', () => {
    dir = mkdtempSync(join(tmpdir(), 'posd-wh-bookkeeping-'));
    const db = openDatabase(join(dir, 'posd.db'));
    const t = '2026-11-21T08:00:00.000Z';
    const ep = db.prepare(
      `INSERT INTO webhook_endpoints (id, account_id, live_mode, url, description, secret, disabled, from_seq, created_at, updated_at)
       VALUES (?, 'ac_1', 0, 'https://example.com/h', NULL, 'sealed', ?, 0, ?, ?)`,
    );
    ep.run('ep_on', 0, t, t);
    ep.run('ep_off', 1, t, t);
    const ev = db.prepare(`INSERT INTO events (id, account_id, live_mode, type, payload, created_at) VALUES (?, 'ac_2', 0, ?, '{}', ?)`);
    ev.run('msg_a', 'intent.succeeded', t);
    ev.run('msg_b', 'intent.failed', t);
    const run = (ops: Array<[WriteStatement, Record<string, unknown>]>) =>
      db.transaction(() => {
        for (const [k, p] of ops) db.prepare(WRITE_SQL[k]).run(p);
      })();
    run([
      [
        'insertDeliveries',
        {
          rows: JSON.stringify([
            [1, 'ep_on'],
            [1, 'ep_off'],
            [2, 'ep_on'],
          ]),
          next_attempt_ms: 5,
          created_at: t,
        },
      ],
      ['advanceCursor', { seq: 2 }],
    ]);
    expect(
      db
        .prepare('SELECT seq, id, account_id, endpoint_id, event_id, event_seq, event_type, event_account_id, status, next_attempt_ms FROM webhook_deliveries')
        .all(),
    ).toEqual([
      {
        seq: 1,
        id: null,
        account_id: 'ac_1',
        endpoint_id: 'ep_on',
        event_id: 'msg_a',
        event_seq: 1,
        event_type: 'intent.succeeded',
        event_account_id: 'ac_2',
        status: 'pending',
        next_attempt_ms: 5,
      },
      {
        seq: 2,
        id: null,
        account_id: 'ac_1',
        endpoint_id: 'ep_on',
        event_id: 'msg_b',
        event_seq: 2,
        event_type: 'intent.failed',
        event_account_id: 'ac_2',
        status: 'pending',
        next_attempt_ms: 5,
      },
    ]);
    const o = (seq: number, code: number, manual: boolean, ts: number, body: string | null = null): Outcome => ({
      deliverySeq: seq,
      endpointId: 'ep_on',
      manual,
      timestamp: ts,
      attemptedAt: ts * 1000,
      durationMs: 3,
      responseCode: code,
      error: null,
      retryAfterMs: null,
      responseBody: body,
    });
    // Delivery 1 twice in one group (each attempt keeps its number), delivery 2 with another code.
    run(successOps([o(1, 200, false, 1_700_000_000, 'ok'), o(2, 204, false, 1_700_000_001), o(1, 200, true, 1_700_000_002, 'again')], t));
    expect(db.prepare('SELECT seq, status, attempts, auto_attempts, last_response_code, next_attempt_ms FROM webhook_deliveries').all()).toEqual([
      { seq: 1, status: 'succeeded', attempts: 2, auto_attempts: 1, last_response_code: 200, next_attempt_ms: null },
      { seq: 2, status: 'succeeded', attempts: 1, auto_attempts: 1, last_response_code: 204, next_attempt_ms: null },
    ]);
    // Each attempt keeps its answer's excerpt, in a group and on its own.
    expect(db.prepare('SELECT response_body FROM webhook_attempts ORDER BY delivery_seq, attempt').pluck().all()).toEqual(['ok', 'again', null]);
    expect(db.prepare('SELECT delivery_seq, attempt, manual, webhook_timestamp, attempted_at, duration_ms, response_code FROM webhook_attempts').all()).toEqual(
      [
        {
          delivery_seq: 1,
          attempt: 1,
          manual: 0,
          webhook_timestamp: 1_700_000_000,
          attempted_at: '2023-11-14T22:13:20.000Z',
          duration_ms: 3,
          response_code: 200,
        },
        {
          delivery_seq: 1,
          attempt: 2,
          manual: 1,
          webhook_timestamp: 1_700_000_002,
          attempted_at: '2023-11-14T22:13:22.000Z',
          duration_ms: 3,
          response_code: 200,
        },
        {
          delivery_seq: 2,
          attempt: 1,
          manual: 0,
          webhook_timestamp: 1_700_000_001,
          attempted_at: '2023-11-14T22:13:21.000Z',
          duration_ms: 3,
          response_code: 204,
        },
      ],
    );
    db.close();
  });
});
