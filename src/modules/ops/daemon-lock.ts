import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../../config.js';

export class DaemonRunningError extends Error {
  constructor(
    readonly pid: number,
    dataDir: string,
  ) {
    super(`a posd daemon (pid ${pid}) is running on ${dataDir}; stop it first (systemctl stop posd)`);
    this.name = 'DaemonRunningError';
  }
}

export function pidFile(config: Pick<Config, 'data_dir'>): string {
  return join(config.data_dir, 'posd.pid');
}

/**
 * A pid counts as a running daemon when the process exists and is a node program: after a crash
 * and a reboot the stale pid may belong to something else, which must not block a restore.
 */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    return /node/.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8'));
  } catch {
    return true; // no /proc: trust the signal check
  }
}

/** The pid of the daemon serving this data folder, or null. */
export function runningDaemon(config: Pick<Config, 'data_dir'>): number | null {
  let text: string;
  try {
    text = readFileSync(pidFile(config), 'utf8');
  } catch {
    return null;
  }
  const pid = Number(text.trim());
  return Number.isInteger(pid) && pid > 0 && alive(pid) ? pid : null;
}

/**
 * Marks the data folder as served by this process (`posd.pid`), refusing when another live daemon
 * holds it. Returns the release function. A stale file (its process gone) is replaced.
 */
export function acquireDaemonLock(config: Pick<Config, 'data_dir'>): () => void {
  const file = pidFile(config);
  // A first start makes the folder; closed to other users, as it holds the sales.
  mkdirSync(config.data_dir, { recursive: true, mode: 0o750 });
  const other = runningDaemon(config);
  if (other !== null) throw new DaemonRunningError(other, config.data_dir);
  const mine = `${process.pid}\n`;
  try {
    writeFileSync(file, mine, { mode: 0o640, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    // A stale file (checked above); 'wx' again so two daemons starting at once cannot both win.
    rmSync(file, { force: true });
    writeFileSync(file, mine, { mode: 0o640, flag: 'wx' });
  }
  return () => {
    try {
      if (readFileSync(file, 'utf8') === mine) rmSync(file, { force: true });
    } catch {
      /* already gone */
    }
  };
}
