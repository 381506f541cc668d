import type { Db } from '../../db/database.js';

/** All SQL of the operations area: the manager's password and sessions, and the backup log. */
export interface SessionRow {
  token_hash: string;
  csrf: string;
  created_at: string;
  expires_at: string;
}

export interface BackupRunRow {
  id: number;
  file: string;
  trigger: 'nightly' | 'manual';
  started_at: string;
  finished_at: string;
  bytes: number | null;
  ok: number;
  error: string | null;
  /** JSON array of what the backup left out; null: it rebuilds the whole box. */
  left_out?: string | null;
}

const PASSWORD_KEY = 'manager_password';

export function getManagerPassword(db: Db): string | null {
  const row = db.prepare('SELECT value FROM meta WHERE key = ?').get(PASSWORD_KEY) as { value: string } | undefined;
  return row?.value ?? null;
}

/** Sets the password hash; every open session ends with it (a changed password logs everyone out). */
export function setManagerPassword(db: Db, hash: string): void {
  db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value').run(PASSWORD_KEY, hash);
  db.prepare('DELETE FROM manager_sessions').run();
}

export function insertSession(db: Db, row: SessionRow): void {
  db.prepare('INSERT INTO manager_sessions (token_hash, csrf, created_at, expires_at) VALUES (?, ?, ?, ?)').run(
    row.token_hash,
    row.csrf,
    row.created_at,
    row.expires_at,
  );
}

export function findSession(db: Db, tokenHash: string, nowIso: string): SessionRow | undefined {
  return db.prepare('SELECT * FROM manager_sessions WHERE token_hash = ? AND expires_at > ?').get(tokenHash, nowIso) as SessionRow | undefined;
}

export function deleteSession(db: Db, tokenHash: string): void {
  db.prepare('DELETE FROM manager_sessions WHERE token_hash = ?').run(tokenHash);
}

export function deleteExpiredSessions(db: Db, nowIso: string): void {
  db.prepare('DELETE FROM manager_sessions WHERE expires_at <= ?').run(nowIso);
}

export function insertBackupRun(db: Db, row: Omit<BackupRunRow, 'id'>): void {
  db.prepare('INSERT INTO backup_runs (file, trigger, started_at, finished_at, bytes, ok, error, left_out) VALUES (?, ?, ?, ?, ?, ?, ?, ?)').run(
    row.file,
    row.trigger,
    row.started_at,
    row.finished_at,
    row.bytes,
    row.ok,
    row.error,
    row.left_out ?? null,
  );
}

export function lastBackupRun(db: Db, okOnly = false): BackupRunRow | undefined {
  return db.prepare(`SELECT * FROM backup_runs ${okOnly ? 'WHERE ok = 1' : ''} ORDER BY id DESC LIMIT 1`).get() as BackupRunRow | undefined;
}

export function syncOutboxSummary(db: Db): { count: number; oldest: string | null } {
  return db.prepare('SELECT count(*) AS count, min(created_at) AS oldest FROM sync_outbox').get() as { count: number; oldest: string | null };
}
