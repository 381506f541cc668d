import type { Db } from '../../db/database.js';
import { addManager, adoptSinglePassword, FIRST_MANAGER, managerByName, setManagerPasswordOf } from './managers.js';

/** All SQL of the operations area: the managers' sessions and the backup log (managers.ts: the managers). */
export interface SessionRow {
  token_hash: string;
  /** Whose session it is: every change made from it names them. */
  manager_id: string;
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

/**
 * Sets the password of the first manager (`manager`), adding them if the box has no such manager:
 * what `posd manager set-password` did for the single password, kept for scripts written for it.
 * Every open session of that manager ends. In the caller's transaction.
 */
export function setManagerPassword(db: Db, hash: string, nowIso = new Date().toISOString()): void {
  adoptSinglePassword(db, nowIso);
  const first = managerByName(db, FIRST_MANAGER);
  if (first) setManagerPasswordOf(db, first.id, hash);
  else addManager(db, FIRST_MANAGER, hash, nowIso);
}

export function insertSession(db: Db, row: SessionRow): void {
  db.prepare('INSERT INTO manager_sessions (token_hash, manager_id, csrf, created_at, expires_at) VALUES (?, ?, ?, ?, ?)').run(
    row.token_hash,
    row.manager_id,
    row.csrf,
    row.created_at,
    row.expires_at,
  );
}

/** A live session and the name of the manager it belongs to (a removed manager's sessions are gone). */
export function findSession(db: Db, tokenHash: string, nowIso: string): (SessionRow & { manager_name: string }) | undefined {
  return db
    .prepare(
      `SELECT s.*, m.name AS manager_name FROM manager_sessions s JOIN managers m ON m.id = s.manager_id
        WHERE s.token_hash = ? AND s.expires_at > ?`,
    )
    .get(tokenHash, nowIso) as (SessionRow & { manager_name: string }) | undefined;
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
