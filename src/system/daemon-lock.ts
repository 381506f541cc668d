import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.js';
import { ownerOnlyDir } from '../file-modes.js';

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

/** The kernel's start time of a process (clock ticks since boot), or null where /proc is absent. */
function startTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 22, counted after the command name, which may itself hold spaces or parentheses.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/**
 * A pid counts as the running daemon when that process exists and started when the file says: after
 * a crash and a reboot the same number may belong to another program, which must not block a
 * restore or the next start.
 */
function alive(pid: number, started: string | undefined): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const now = startTime(pid);
  return !started || now === null || now === started;
}

/** The pid of the daemon serving this data folder, or null. */
export function runningDaemon(config: Pick<Config, 'data_dir'>): number | null {
  let text: string;
  try {
    text = readFileSync(pidFile(config), 'utf8');
  } catch {
    return null;
  }
  const [pidText, started] = text.trim().split(/\s+/);
  const pid = Number(pidText);
  return Number.isInteger(pid) && pid > 0 && alive(pid, started) ? pid : null;
}

/**
 * Marks the data folder as served by this process (`posd.pid`), refusing when another live daemon
 * holds it. Returns the release function. A stale file (its process gone) is replaced.
 */
export function acquireDaemonLock(config: Pick<Config, 'data_dir'>): () => void {
  const file = pidFile(config);
  // A first start makes the folder; closed to other users, as it holds the sales.
  ownerOnlyDir(config.data_dir);
  const other = runningDaemon(config);
  if (other !== null) throw new DaemonRunningError(other, config.data_dir);
  // `pid starttime`: the start time tells this process from a later one given the same pid.
  const mine = `${`${process.pid} ${startTime(process.pid) ?? ''}`.trimEnd()}\n`;
  try {
    writeFileSync(file, mine, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    // A stale file (checked above); 'wx' again so two daemons starting at once cannot both win.
    rmSync(file, { force: true });
    writeFileSync(file, mine, { mode: 0o600, flag: 'wx' });
  }
  return () => {
    try {
      if (readFileSync(file, 'utf8') === mine) rmSync(file, { force: true });
    } catch {
      /* already gone */
    }
  };
}
