import Database from 'better-sqlite3';
import { createCipheriv, createDecipheriv, randomBytes, scryptSync } from 'node:crypto';

/**
 * What a backup carries besides the database (the webhook signing key, the settings), kept in a
 * table of the backup file itself: a backup stays one SQLite file that opens, is integrity-checked
 * and restores as before, and `posd restore` takes the table out again before the file goes live.
 */
const TABLE = 'posd_backup';

/** scrypt at 2^15 (32 MiB, ~0.1 s here): each guess at a passphrase costs as much. */
const SCRYPT = { N: 1 << 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };

export class WrongPassphraseError extends Error {
  constructor() {
    super('wrong passphrase');
    this.name = 'WrongPassphraseError';
  }
}

/** `plain` encrypted under a key derived from `passphrase` (scrypt, AES-256-GCM), as JSON text. */
export function sealWithPassphrase(plain: string, passphrase: string): string {
  const salt = randomBytes(16);
  const iv = randomBytes(12);
  const key = scryptSync(passphrase, salt, 32, SCRYPT);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return JSON.stringify({
    v: 1,
    kdf: { name: 'scrypt', N: SCRYPT.N, r: SCRYPT.r, p: SCRYPT.p, salt: salt.toString('base64') },
    cipher: 'aes-256-gcm',
    iv: iv.toString('base64'),
    tag: cipher.getAuthTag().toString('base64'),
    data: data.toString('base64'),
  });
}

export function openWithPassphrase(sealed: string, passphrase: string): string {
  const s = JSON.parse(sealed) as { v: number; kdf: { N: number; r: number; p: number; salt: string }; iv: string; tag: string; data: string };
  if (s.v !== 1) throw new Error(`sealed contents of version ${s.v} are newer than this posd understands`);
  const key = scryptSync(passphrase, Buffer.from(s.kdf.salt, 'base64'), 32, { N: s.kdf.N, r: s.kdf.r, p: s.kdf.p, maxmem: SCRYPT.maxmem });
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(s.iv, 'base64'));
  decipher.setAuthTag(Buffer.from(s.tag, 'base64'));
  try {
    return Buffer.concat([decipher.update(Buffer.from(s.data, 'base64')), decipher.final()]).toString('utf8');
  } catch {
    throw new WrongPassphraseError();
  }
}

/** Adds the entries to a backup copy (before it is checked and renamed into place). */
export function writeBundle(file: string, entries: Record<string, string>): void {
  const db = new Database(file);
  try {
    // Written into a backup copy that its maker flushes once when it is finished (backup.ts).
    db.pragma('synchronous = OFF');
    db.exec(`CREATE TABLE ${TABLE} (name TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT`);
    const ins = db.prepare(`INSERT INTO ${TABLE} (name, value) VALUES (?, ?)`);
    db.transaction(() => {
      for (const [name, value] of Object.entries(entries)) ins.run(name, value);
    })();
  } finally {
    db.close();
  }
}

/** The entries of a backup file; empty for a backup made before backups carried them. */
export function readBundle(file: string): Record<string, string> {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    if (!db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(TABLE)) return {};
    const rows = db.prepare(`SELECT name, value FROM ${TABLE}`).all() as Array<{ name: string; value: string }>;
    return Object.fromEntries(rows.map((r) => [r.name, r.value]));
  } finally {
    db.close();
  }
}

/** Takes the entries out of a restored copy: the live database never holds them. */
export function dropBundle(file: string): void {
  const db = new Database(file);
  try {
    // Its freed pages hold only sealed text and the public settings: no VACUUM of a large file needed.
    db.exec(`DROP TABLE IF EXISTS ${TABLE}`);
  } finally {
    db.close();
  }
}
