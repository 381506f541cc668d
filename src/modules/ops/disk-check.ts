import { readdirSync, statSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../../config.js';
import type { DiskFullState } from '../../db/disk-full.js';
import { backupDir } from '../../system/backup.js';
import type { Check } from './doctor.js';

const MiB = 1 << 20;
const GiB = 1 << 30;
/** Below this a sale's commit (its pages in the WAL, a checkpoint) may not fit: the disk is full in practice. */
export const DISK_FULL_BYTES = 8 * MiB;
/** A write refused for space keeps the disk "full" until this much is free again (or a write succeeds). */
const ROOM_AGAIN_BYTES = 8 * DISK_FULL_BYTES;

export const sizeText = (n: number) => (n >= GiB ? `${(n / GiB).toFixed(1)} GiB` : n >= MiB ? `${(n / MiB).toFixed(1)} MiB` : `${(n / 1024).toFixed(0)} KiB`);

function folderBytes(dir: string): number {
  try {
    return readdirSync(dir).reduce((sum, f) => sum + (statSync(join(dir, f), { throwIfNoEntry: false })?.size ?? 0), 0);
  } catch {
    return 0;
  }
}

/**
 * The disk holding the data folder: "disk full" (sales cannot be recorded: free space under
 * DISK_FULL_BYTES, or the daemon's writes refused for space), low (under 1 GiB or 10%), or fine.
 * `refused` is the daemon's own record (src/db/disk-full.ts); doctor, a separate process, has only
 * the free space. The fix names what this box can free, with the backup folder's size.
 */
export function diskSpace(config: Pick<Config, 'data_dir' | 'backup'>, refused: DiskFullState | null = null): Check {
  const dir = config.data_dir;
  const fs = statfsSync(dir);
  const free = fs.bavail * fs.bsize;
  const total = fs.blocks * fs.bsize;
  const backups = backupDir(config);
  const where = `${sizeText(free)} free of ${sizeText(total)} on the disk holding ${dir}`;
  const toFree = `free space on that disk: old backups in ${backups} (${sizeText(folderBytes(backups))} now; keep the newest), the system journal (journalctl --vacuum-size=100M), or other files there; or move the data folder to a larger disk`;
  if (free < DISK_FULL_BYTES || (refused && free < ROOM_AGAIN_BYTES)) {
    const since = refused ? `; writes refused since ${new Date(refused.since).toISOString()} (${refused.refused} refused, none acknowledged)` : '';
    return {
      name: 'disk full',
      ok: false,
      detail: `${where}: new sales cannot be recorded${since}`,
      fix: `${toFree}. Writes resume by themselves once there is room; no restart needed`,
    };
  }
  const low = free < GiB || free / Math.max(1, total) < 0.1;
  return {
    name: 'free disk',
    ok: !low,
    detail: where,
    fix: low ? `${toFree}; below 10% or 1 GiB sales may stop being recorded` : undefined,
  };
}
