import { chmodSync, existsSync, mkdirSync } from 'node:fs';

/**
 * Everything posd keeps is the store's business (sales, customers, keys' hashes, sealed secrets), so
 * its data folder is 0700 and every file it writes 0600, whatever the umask it was started under
 * (docs/security.md). `main` also sets the umask to 077, so files a library creates (SQLite's -wal
 * and -shm, temporary files) start owner-only; these helpers also fix what an older posd, an
 * embedding process or a restore left wider.
 */
export const DIR_MODE = 0o700;
export const FILE_MODE = 0o600;

/** Makes the folder (and its parents) if missing, and narrows it to the owner. */
export function ownerOnlyDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: DIR_MODE });
  narrow(dir, DIR_MODE);
}

/** Narrows existing files to the owner; missing ones are skipped. */
export function ownerOnlyFiles(...files: string[]): void {
  for (const f of files) if (existsSync(f)) narrow(f, FILE_MODE);
}

function narrow(path: string, mode: number): void {
  try {
    chmodSync(path, mode);
  } catch (err) {
    // A folder or file owned by someone else (a shared /tmp parent, a read-only mount) is not ours to change.
    if ((err as NodeJS.ErrnoException).code !== 'EPERM' && (err as NodeJS.ErrnoException).code !== 'EROFS') throw err;
  }
}
