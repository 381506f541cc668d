import { join } from 'node:path';

/** The baseline's database file, in the folder its runner made for it and removes after it (bench/lib.ts, startBaseline). */
export function baselineFile(): string {
  const dir = process.env.BASELINE_DIR;
  if (!dir) throw new Error('BASELINE_DIR is not set: start baselines with startBaseline (bench/lib.ts)');
  return join(dir, 'b.db');
}
