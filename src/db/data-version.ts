import { fstatSync, openSync, readSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Db } from './database.js';

/**
 * The first copy of the WAL index's header (`WalIndexHdr`, 48 bytes at the start of the `-shm`
 * file; sqlite's wal.c). Every commit to the WAL rewrites it (its change counter, the last frame
 * and their checksums), and a commit is visible to a new read only once this copy holds it: the
 * writer updates the second copy, then this one.
 */
const HEADER_BYTES = 48;

/**
 * The `-shm` files this process reads, one descriptor per file (by path and inode), never closed.
 * Closing any descriptor of a file drops every POSIX lock the process holds on it, SQLite's own
 * included: with its `-shm` locks gone, another process opening the database takes itself for the
 * first, truncates the WAL index under this one's mapping, and this process dies of SIGBUS (it
 * did, in the chain's tests). SQLite's how-to-corrupt page, 2.2.
 */
const walIndexes = new Map<string, { fd: number; dev: number; ino: number }>();

/**
 * `PRAGMA data_version` of a connection (it moves when another connection, in this process or
 * another, commits), asked of SQLite only when the WAL index's header has changed since the last
 * time it was. The pragma opens and closes a read transaction, whose shared-memory locks made it
 * an eighth of a `GET /api/account` under load (decision 0246); reading the header is one `pread`
 * of a page the kernel already holds. A header read part-way through a commit differs from the one
 * kept, so the pragma is asked then too: nothing a completed commit wrote is ever missed.
 * Connections without a WAL (in memory, another journal mode, or no `-shm` to open) ask the pragma
 * every time, as before. A closed connection throws at the first change it would have to ask about
 * (`db.open` is not asked per call: it cost a microsecond, the read itself a few).
 */
export function dataVersionReader(db: Db): () => number {
  const pragma = db.prepare('PRAGMA data_version').pluck();
  const ask = () => pragma.get() as number;
  const fd = walIndexOf(db);
  if (fd === undefined) return ask;
  const kept = Buffer.alloc(HEADER_BYTES);
  const read = Buffer.alloc(HEADER_BYTES);
  let version: number | undefined;
  return () => {
    let whole = false;
    try {
      whole = readSync(fd, read, 0, HEADER_BYTES, 0) === HEADER_BYTES;
    } catch {
      // The file cannot be read (it should not happen while the connection is open): ask.
    }
    if (!whole) {
      version = undefined;
      return ask();
    }
    if (version !== undefined && read.equals(kept)) return version;
    // The header as read before the pragma: a commit between the two is seen at the next call.
    read.copy(kept);
    version = ask();
    return version;
  };
}

/**
 * The connection's `-shm` file opened for reading (the descriptor this process already has for it,
 * when it has one), or undefined when it has none to watch. A `-shm` file replaced since (the
 * database removed and made again) gets a descriptor of its own; the old one stays open.
 */
function walIndexOf(db: Db): number | undefined {
  if (db.memory || !db.open) return undefined;
  try {
    if (String(db.pragma('journal_mode', { simple: true })).toLowerCase() !== 'wal') return undefined;
    const path = resolve(`${db.name}-shm`);
    const now = statSync(path);
    const known = walIndexes.get(path);
    if (known && known.dev === now.dev && known.ino === now.ino) return known.fd;
    const fd = openSync(path, 'r');
    const opened = fstatSync(fd);
    walIndexes.set(path, { fd, dev: opened.dev, ino: opened.ino });
    return fd;
  } catch {
    return undefined;
  }
}
