import type { Db } from './database.js';
import { perDb } from './per-db.js';

/**
 * What the checkpoint thread (src/db/checkpointer.ts) reads before each checkpoint: how many jobs
 * with a frame someone waits on alone (a terminal's charge: `afterCommit(…, { first: true })`) are
 * between the job that filed it and the frame leaving (or the job, its commit or its flush failing).
 * Shared memory, so the thread reads it without a message through the event loop. While it is
 * above zero the thread puts its checkpoint off (decision 0288): a checkpoint syncs the WAL and the
 * database file, and a charge's flush beside one took two to eight times as long (decision 0291).
 */
export const checkpointGate = perDb((_db: Db) => new Int32Array(new SharedArrayBuffer(4)));

/** A job filed a frame to send once durable: checkpoints wait until `release` (idempotent). */
export function holdCheckpoints(db: Db): () => void {
  const gate = checkpointGate(db);
  Atomics.add(gate, 0, 1);
  let held = true;
  return () => {
    if (!held) return;
    held = false;
    Atomics.sub(gate, 0, 1);
    Atomics.notify(gate, 0);
  };
}
