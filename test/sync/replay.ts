import { expect } from 'vitest';
import { randomBytes } from 'node:crypto';
import type { TestServer } from '../helpers/server.js';
import { pushAndProject, type TestStore } from './helpers.js';
import { wireRecord } from './wire-records.js';

type Box = Pick<TestServer, 'daemon'> | Pick<TestStore, 'daemon'>;

export function tableRows<T = Record<string, unknown>>(box: Box, sql: string, ...args: unknown[]): T[] {
  return box.daemon.ctx.db.prepare(sql).all(...args) as T[];
}

/**
 * Pushes the store's records of these kinds again under fresh record ids, as a second box of the
 * account would after a restore: the engine applies them as new records, so only the appliers'
 * own idempotency (each part written once by its id) keeps the central from writing them twice.
 * The records travel under the store's account key, whatever account they name.
 */
export async function replayAtCentral(
  central: TestServer,
  store: TestStore,
  key: string,
  kinds: string[],
  opts: { reverse?: boolean } = {},
): Promise<{ applied: number; rejected: unknown[] }> {
  const marks = kinds.map(() => '?').join(', ');
  const rows = tableRows<{ kind: string; account_id: string; live_mode: number; payload: string; created_at: string }>(
    store,
    `SELECT kind, account_id, live_mode, payload, created_at FROM sync_outbox WHERE kind IN (${marks}) ORDER BY seq`,
    ...kinds,
  );
  expect(rows.length).toBeGreaterThan(0);
  // Reversed: newer states reach the central before older ones, which must then change nothing.
  if (opts.reverse) rows.reverse();
  const tag = randomBytes(4).toString('hex');
  const records = rows.map((r, i) => ({ seq: i + 1, prev_seq: i, ...wireRecord({ ...r, id: `sync_replay_${tag}_${i}` }) }));
  const res = await pushAndProject(central, key, { store_id: `store_replay${tag}`, records });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.body.applied).toBe(records.length);
  return res.body;
}
