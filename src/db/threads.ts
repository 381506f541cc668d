import { Worker } from 'node:worker_threads';

/** The thread programs in `src/db/threads/` (CommonJS; tsc copies them into the build beside this module). */
export type ThreadProgram = 'checkpoint' | 'bookkeeping' | 'integrity' | 'pg-call';

/** What every thread program's connection is opened with (`threads/open.cjs`). */
export interface ThreadDatabase {
  /** The daemon's database file; a thread never makes one. */
  file: string;
  busyTimeoutMs: number;
  synchronous: 'FULL' | 'NORMAL' | 'EXTRA';
}

/** Starts a thread program with its own connection to the daemon's database. */
export function startThread(program: ThreadProgram, workerData: ThreadDatabase & Record<string, unknown>): Worker {
  return new Worker(new URL(`./threads/${program}.cjs`, import.meta.url), { workerData });
}

/** Starts a thread program that opens no database (`pg-call`: src/sync/pg/sync-client.ts), handing it `transfer` (its ports). */
export function startPlainThread(program: ThreadProgram, workerData: Record<string, unknown>, transfer: Transferable[]): Worker {
  return new Worker(new URL(`./threads/${program}.cjs`, import.meta.url), { workerData, transferList: transfer as never });
}

/**
 * `PRAGMA integrity_check` or `quick_check` of a database file that no one else writes (a backup
 * copy: inspectBackupCopy in src/system/backup.ts), on a thread of its own: the lines it reports
 * (`['ok']` when whole).
 */
export function integrityCheckOffLoop(file: string, check: 'integrity_check' | 'quick_check', mmapBytes = 0): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./threads/integrity.cjs', import.meta.url), { workerData: { file, check, mmapBytes } });
    worker.once('message', (m: { result?: string[]; error?: string }) => {
      if (m.result) resolve(m.result);
      else reject(new Error(m.error ?? 'the integrity check ended without a result'));
    });
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`the integrity check thread exited (${code}) without a result`)));
  });
}
