import { Worker } from 'node:worker_threads';

/** The thread programs in `src/db/threads/` (CommonJS; tsc copies them into the build beside this module). */
export type ThreadProgram = 'checkpoint' | 'bookkeeping';

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
