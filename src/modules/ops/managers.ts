import { createHash, randomBytes } from 'node:crypto';
import type { Db } from '../../db/database.js';
import { perDb } from '../../db/per-db.js';
import { newId } from '../../ids.js';

/**
 * The box's managers (docs/operations.md "Managers"): each has a name, a password of their own
 * (password.ts) and at most one manager token for the API's offline-policy changes. Every session
 * of the status page belongs to one of them, and every change made from it names them.
 */
export interface ManagerRow {
  id: string;
  name: string;
  password_hash: string;
  token_hash: string | null;
  created_at: string;
}

export interface ManagerView {
  id: string;
  name: string;
  has_token: boolean;
  created_at: string;
}

/** What a box set up before named managers kept: the one status-page password, in `meta`. */
const SINGLE_PASSWORD_KEY = 'manager_password';
/** The name the single password's holder gets on upgrade; `posd managers add` names the others. */
export const FIRST_MANAGER = 'manager';
/** Manager tokens: `pmt_` and 43 base64url characters (256 random bits), only their SHA-256 kept. */
const TOKEN_SHAPE = /^pmt_[A-Za-z0-9_-]{43}$/;
export const NAME_SHAPE = /^[\p{L}\p{N}][\p{L}\p{N} ._'-]{0,63}$/u;

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

const statements = perDb((db: Db) => ({
  all: db.prepare('SELECT * FROM managers ORDER BY name'),
  byName: db.prepare('SELECT * FROM managers WHERE name = ?'),
  byId: db.prepare('SELECT * FROM managers WHERE id = ?'),
  byToken: db.prepare('SELECT * FROM managers WHERE token_hash = ?'),
  count: db.prepare('SELECT COUNT(*) AS n FROM managers'),
  insert: db.prepare('INSERT INTO managers (id, name, password_hash, token_hash, created_at) VALUES (@id, @name, @password_hash, NULL, @created_at)'),
  setPassword: db.prepare('UPDATE managers SET password_hash = ? WHERE id = ?'),
  setToken: db.prepare('UPDATE managers SET token_hash = ? WHERE id = ?'),
  remove: db.prepare('DELETE FROM managers WHERE id = ?'),
  endSessions: db.prepare('DELETE FROM manager_sessions WHERE manager_id = ?'),
  single: db.prepare('SELECT value FROM meta WHERE key = ?'),
  dropSingle: db.prepare('DELETE FROM meta WHERE key = ?'),
  // Sessions of the single password had no person: they end with the upgrade.
  endAnonymous: db.prepare('DELETE FROM manager_sessions WHERE manager_id IS NULL'),
}));

const view = (r: ManagerRow): ManagerView => ({ id: r.id, name: r.name, has_token: r.token_hash !== null, created_at: r.created_at });

/**
 * The upgrade from the single status-page password: its hash becomes the manager named `manager`
 * (who logs in with the same password, then adds the others), and the old key is dropped.
 * Idempotent, in the caller's transaction; run before anything reads the managers.
 */
export function adoptSinglePassword(db: Db, nowIso: string): boolean {
  const s = statements(db);
  const row = s.single.get(SINGLE_PASSWORD_KEY) as { value: string } | undefined;
  if (!row) return false;
  if (!s.byName.get(FIRST_MANAGER)) s.insert.run({ id: newId('mgr'), name: FIRST_MANAGER, password_hash: row.value, created_at: nowIso });
  s.dropSingle.run(SINGLE_PASSWORD_KEY);
  s.endAnonymous.run();
  return true;
}

export function listManagers(db: Db): ManagerView[] {
  return (statements(db).all.all() as ManagerRow[]).map(view);
}

export function managerCount(db: Db): number {
  return (statements(db).count.get() as { n: number }).n;
}

export function managerByName(db: Db, name: string): ManagerRow | undefined {
  return statements(db).byName.get(name.trim()) as ManagerRow | undefined;
}

export function managerById(db: Db, id: string): ManagerRow | undefined {
  return statements(db).byId.get(id) as ManagerRow | undefined;
}

/** The manager a token belongs to; a string not shaped like a token is never looked up. */
export function managerByToken(db: Db, token: string): ManagerRow | undefined {
  if (!TOKEN_SHAPE.test(token)) return undefined;
  return statements(db).byToken.get(sha256(token)) as ManagerRow | undefined;
}

/** Adds a manager (in the caller's transaction); the name is theirs alone, whatever its case. */
export function addManager(db: Db, name: string, passwordHash: string, nowIso: string): ManagerView {
  const id = newId('mgr');
  statements(db).insert.run({ id, name: name.trim(), password_hash: passwordHash, created_at: nowIso });
  return view(managerById(db, id)!);
}

/** A new password; that manager's open sessions end with the old one. */
export function setManagerPasswordOf(db: Db, id: string, passwordHash: string): void {
  statements(db).setPassword.run(passwordHash, id);
  statements(db).endSessions.run(id);
}

/** Issues the manager's token (replacing the one before), returned once: only its hash is kept. */
export function issueManagerToken(db: Db, id: string): string {
  const token = `pmt_${randomBytes(32).toString('base64url')}`;
  statements(db).setToken.run(sha256(token), id);
  return token;
}

/** Removes a manager: their sessions end and their token stops working. The audit keeps their name. */
export function removeManager(db: Db, id: string): void {
  statements(db).endSessions.run(id);
  statements(db).remove.run(id);
}
