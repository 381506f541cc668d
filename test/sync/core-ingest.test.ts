import { afterEach, describe, expect, test } from 'vitest';
import { setCommitGate } from '../../src/db/database.js';
import { ingestBatch, type IngestBatch } from '../../src/sync/central/core-ingest.js';
import { centralSide } from '../../src/sync/central/sync-store.js';
import type { TestServer } from '../helpers/server.js';
import { addStoreAccount, startCentral } from './helpers.js';

/**
 * The chain core's ingest (src/sync/central/core-ingest.ts) copies a batch read from PostgreSQL into
 * its SQLite. On the projector's thread it looks at `yieldNow` (a write of the daemon's waits for the
 * lock) every few records and then commits what it copied, the rest in the next transaction: the
 * same rows and cursor as one transaction, in more commits.
 */
let central: TestServer | undefined;
afterEach(async () => {
  if (central) setCommitGate(central.daemon.ctx.db, undefined);
  await central?.stop();
  central = undefined;
});

function batchOf(storeId: string, accountId: string, n: number): IngestBatch {
  const at = '2026-03-02T10:00:00.000Z';
  return {
    store: { store_id: storeId, account_id: accountId, live_mode: true },
    at,
    rows: Array.from({ length: n }, (_, i) => ({
      id: `sync_ingest_${storeId}_${i + 1}`,
      seq: i + 1,
      account_id: accountId,
      live_mode: 1,
      kind: 'event',
      hash: `h${i + 1}`,
      payload: JSON.stringify({ id: `msg_${storeId}_${i + 1}`, type: 'intent.succeeded', payload: {}, created_at: at }),
      created_at: at,
      received_at: at,
      // One refused at a front: kept as decided, whichever transaction it falls in.
      ...(i === 40 ? { outcome: 'rejected', reason: 'refused at receipt' } : {}),
    })),
  };
}

/** Ingests `b` and counts the outermost transactions it committed (a commit gate runs once in each). */
function ingestCounted(b: IngestBatch, yieldNow?: () => boolean): number {
  const db = central!.daemon.ctx.db;
  let commits = 0;
  setCommitGate(db, () => commits++);
  try {
    ingestBatch(central!.daemon.ctx, b, yieldNow);
  } finally {
    setCommitGate(db, undefined);
  }
  return commits;
}

function received(storeId: string): Array<{ seq: number; outcome: string }> {
  return central!.daemon.ctx.db.prepare('SELECT seq, outcome FROM sync_received WHERE store_id = ? ORDER BY seq').all(storeId) as Array<{
    seq: number;
    outcome: string;
  }>;
}

describe('the core ingest gives the lock up to a waiting write', () => {
  test('without yieldNow a batch is one transaction', async () => {
    central = await startCentral();
    const { accountId } = addStoreAccount(central);
    expect(ingestCounted(batchOf('st_one', accountId, 60))).toBe(1);
    expect(received('st_one').map((r) => r.seq)).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
    expect(centralSide(central.daemon.ctx.db).storeRow('st_one')?.received_seq).toBe(60);
  });

  test('while a write waits, every step commits on its own; the rows, the refusal and the cursor are the same', async () => {
    central = await startCentral();
    const { accountId } = addStoreAccount(central);
    expect(ingestCounted(batchOf('st_wait', accountId, 60), () => true)).toBe(3);
    const rows = received('st_wait');
    expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
    expect(rows.find((r) => r.seq === 41)?.outcome).toBe('rejected');
    expect(centralSide(central.daemon.ctx.db).storeRow('st_wait')?.received_seq).toBe(60);
    // Again: nothing copied twice, the cursor where it was.
    expect(ingestCounted(batchOf('st_wait', accountId, 60), () => true)).toBe(3);
    expect(received('st_wait')).toHaveLength(60);
  });

  test('a write that comes mid-batch ends the transaction at the next step only', async () => {
    central = await startCentral();
    const { accountId } = addStoreAccount(central);
    let looks = 0;
    // The first look says nothing waits, the second that a write does, then none again.
    expect(ingestCounted(batchOf('st_mid', accountId, 100), () => ++looks === 2)).toBe(2);
    expect(received('st_mid')).toHaveLength(100);
  });
});
