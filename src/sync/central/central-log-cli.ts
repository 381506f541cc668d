import { hostname } from 'node:os';
import { setCommitGate, tx, type Db } from '../../db/database.js';
import {
  dropPending,
  firstPending,
  logPosition,
  pendingIds,
  replayEntries,
  setLogPosition,
  startCapture,
  stopCapture,
  takeChanges,
} from '../../db/change-capture.js';
import { appendEntry, entriesAfterSync, entryIdsSync, logEndSync, takeLeaseSync } from '../pg/central-log.js';
import { PROJECTOR_LOCK } from '../pg/projector.js';
import { SyncPgClient, SyncQueryError } from '../pg/sync-client.js';

/** How long a tool waits for each PostgreSQL answer. */
const QUERY_TIMEOUT_MS = 10_000;
const READ_BATCH = 200;
const REPLAY_CHANGES = 5000;

/** Why a tool may not write a chain core's file: the writer could not become the log's one writer. */
export class LogWriteRefused extends Error {}

/**
 * A posd command writing a chain core's SQLite file from its own process, with every core of the
 * chain stopped (docs/central.md, "One log"): it takes the projector lease itself for as long as it
 * runs, moves the epoch (the fence), replays the log's tail into the file, then captures its own
 * writes and appends each outermost transaction to the log before it commits, exactly as a leading
 * core does. The next core to lead replays those entries like any other: nothing lives in this file
 * only. `finish` appends what was written outside a transaction and gives the lease up.
 */
export class CliLogWriter {
  private position: number;
  private finished = false;

  private constructor(
    private readonly db: Db,
    private readonly client: SyncPgClient,
    private readonly epoch: number,
  ) {
    this.position = logPosition(db);
  }

  /** Takes the lease and replays the log's tail, or throws LogWriteRefused saying why not. */
  static open(db: Db, url: string): CliLogWriter {
    const client = new SyncPgClient(url);
    try {
      let lease: ReturnType<typeof takeLeaseSync>;
      try {
        lease = takeLeaseSync(client, PROJECTOR_LOCK, `posd command on ${hostname()} (pid ${process.pid})`, QUERY_TIMEOUT_MS);
      } catch (err) {
        throw new LogWriteRefused(`PostgreSQL did not answer (${(err as Error).message})`);
      }
      if (!('epoch' in lease)) throw new LogWriteRefused(`a core leads the chain${lease.leader ? ` (${lease.leader})` : ''}`);
      // Entries its core committed and the log holds are forgotten; any other is decided by the core's next start.
      const first = firstPending(db);
      if (first) {
        const ids = pendingIds(db);
        const logged = entryIdsSync(client, first.position, ids[ids.length - 1].position, QUERY_TIMEOUT_MS);
        if (ids.some((e) => logged.get(e.position) !== e.id))
          throw new LogWriteRefused('this folder holds entries its core had not appended to the central log yet (start the core once to decide them)');
        tx(db, () => dropPending(db, ids[ids.length - 1].position));
      }
      const writer = new CliLogWriter(db, client, lease.epoch);
      writer.catchUp();
      if (logEndSync(client, QUERY_TIMEOUT_MS) === 0) throw new LogWriteRefused('the central log is empty: no core has led yet (start one first)');
      startCapture(db);
      takeChanges(db);
      setCommitGate(db, () => writer.append());
      return writer;
    } catch (err) {
      void client.close();
      throw err;
    }
  }

  private catchUp(): void {
    for (;;) {
      const entries = entriesAfterSync(this.client, this.position, READ_BATCH, QUERY_TIMEOUT_MS);
      let i = 0;
      while (i < entries.length) i = replayEntries(this.db, entries, i, REPLAY_CHANGES);
      if (entries.length) this.position = entries[entries.length - 1].position;
      if (entries.length < READ_BATCH) return;
    }
  }

  /** The commit gate: this transaction's changes at the next position, or the transaction rolls back. */
  private append(): void {
    const changes = takeChanges(this.db);
    if (!changes) return;
    const next = this.position + 1;
    let appended: boolean;
    try {
      appended = appendEntry(this.client, next, this.epoch, changes.json, changes.count, QUERY_TIMEOUT_MS);
    } catch (err) {
      const detail = err instanceof SyncQueryError ? err.message : String(err);
      throw new LogWriteRefused(
        `appending to the central log failed (${detail}); nothing was written here (if PostgreSQL committed it, the next core replays it)`,
      );
    }
    if (!appended) throw new LogWriteRefused('a core took the lease meanwhile; nothing was written');
    setLogPosition(this.db, next);
    this.position = next;
  }

  /** Appends what was written outside a transaction, stops capturing, and gives the lease up. */
  finish(): void {
    if (this.finished) return;
    this.finished = true;
    try {
      tx(this.db, () => undefined);
    } finally {
      setCommitGate(this.db, undefined);
      stopCapture(this.db);
      void this.client.close();
    }
  }
}
