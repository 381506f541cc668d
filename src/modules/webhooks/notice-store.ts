import type { Db } from '../../db/database.js';
import { preparedOnUse } from '../../db/statements.js';

/** The SQL of operational notices (notices.ts, docs/webhooks.md): part of the webhooks store. */

export interface NoticeSettingsRow {
  account_id: string;
  live_mode: number;
  url: string | null;
  /** Sealed (secret-box.ts); set while `url` is. */
  secret: string | null;
  email: string | null;
  created_at: string;
  updated_at: string;
}

export type NoticeType = 'endpoint.failing' | 'endpoint.disabled' | 'message.attempt.exhausted';
export type UrlStatus = 'none' | 'pending' | 'sent' | 'failed';
export type EmailStatus = UrlStatus | 'skipped';

export interface NoticeRow {
  seq: number;
  id: string;
  account_id: string;
  live_mode: number;
  type: NoticeType;
  endpoint_id: string;
  transition: string;
  payload: string;
  url_status: UrlStatus;
  email_status: EmailStatus;
  attempts: number;
  next_attempt_ms: number | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
}

export interface NewNotice {
  id: string;
  account_id: string;
  live_mode: number;
  type: NoticeType;
  endpoint_id: string;
  /** Names the transition told; a second notice of the same transition is not recorded. */
  transition: string;
  payload: string;
  /**
   * Not by e-mail when the endpoint already had a notice of this type by e-mail recorded at or
   * after this ISO time (one e-mail per failing streak for exhausted messages); null: always.
   */
  email_once_since: string | null;
  now_ms: number;
  now: string;
}

/** Runs after a notice was recorded (the sender's kick), per database. */
const listeners = new WeakMap<Db, Set<() => void>>();

export function onNoticeRecorded(db: Db, listener: () => void): () => void {
  let set = listeners.get(db);
  if (!set) listeners.set(db, (set = new Set()));
  set.add(listener);
  return () => set.delete(listener);
}

export function noticeStore(db: Db) {
  const s = preparedOnUse({
    settings: () => db.prepare('SELECT * FROM webhook_notice_settings WHERE account_id = ?'),
    putSettings: () =>
      db.prepare(
        `INSERT INTO webhook_notice_settings (account_id, live_mode, url, secret, email, created_at, updated_at)
       VALUES (@account_id, @live_mode, @url, @secret, @email, @now, @now)
       ON CONFLICT (account_id) DO UPDATE SET url = @url, secret = @secret, email = @email, updated_at = @now`,
      ),
    // Recorded only for an account that names somewhere to tell; each channel pending if named.
    insertNotice: () =>
      db.prepare(
        `INSERT INTO webhook_notices (id, account_id, live_mode, type, endpoint_id, transition, payload, url_status, email_status,
         attempts, next_attempt_ms, created_at, updated_at)
       SELECT @id, @account_id, @live_mode, @type, @endpoint_id, @transition, @payload, IIF(s.url IS NULL, 'none', 'pending'),
         IIF(s.email IS NULL, 'none',
           IIF(@email_once_since IS NOT NULL AND EXISTS (SELECT 1 FROM webhook_notices n WHERE n.endpoint_id = @endpoint_id AND n.type = @type
             AND n.created_at >= @email_once_since AND n.email_status IN ('pending', 'sent', 'failed')), 'skipped', 'pending')),
         0, @now_ms, @now, @now
       FROM webhook_notice_settings s WHERE s.account_id = @account_id AND (s.url IS NOT NULL OR s.email IS NOT NULL)
       ON CONFLICT (transition) DO NOTHING`,
      ),
    due: () => db.prepare('SELECT * FROM webhook_notices WHERE next_attempt_ms <= ? ORDER BY next_attempt_ms LIMIT ?'),
    nextDue: () => db.prepare('SELECT MIN(next_attempt_ms) FROM webhook_notices WHERE next_attempt_ms IS NOT NULL').pluck(),
    // Guarded by the try count it was read with: a second sender (or a late answer) writes nothing.
    updateNotice: () =>
      db.prepare(
        `UPDATE webhook_notices SET url_status = @url_status, email_status = @email_status, attempts = @attempts, next_attempt_ms = @next_attempt_ms,
         last_error = @last_error, updated_at = @now
       WHERE seq = @seq AND attempts = @from_attempts`,
      ),
    page: () => db.prepare('SELECT * FROM webhook_notices WHERE account_id = ? AND live_mode = ? ORDER BY seq DESC LIMIT ? OFFSET ?'),
    count: () => db.prepare('SELECT COUNT(*) FROM webhook_notices WHERE account_id = ? AND live_mode = ?').pluck(),
    prune: () => db.prepare('DELETE FROM webhook_notices WHERE next_attempt_ms IS NULL AND updated_at < ?'),
  });

  return {
    noticeSettings: (accountId: string) => s.settings.get(accountId) as NoticeSettingsRow | undefined,
    putNoticeSettings: (row: { account_id: string; live_mode: number; url: string | null; secret: string | null; email: string | null; now: string }) =>
      void s.putSettings.run(row),
    /** Records a notice in the caller's transaction; false when there is nowhere to tell or it was told. */
    insertNotice(n: NewNotice): boolean {
      const made = s.insertNotice.run(n).changes > 0;
      if (made) for (const listener of listeners.get(db) ?? []) listener();
      return made;
    },
    dueNotices: (nowMs: number, limit: number) => s.due.all(nowMs, limit) as NoticeRow[],
    nextNoticeDue: () => s.nextDue.get() as number | null,
    /** False when the notice moved on meanwhile: nothing was written. */
    updateNotice: (
      row: Pick<NoticeRow, 'seq' | 'url_status' | 'email_status' | 'attempts' | 'next_attempt_ms' | 'last_error'> & { from_attempts: number; now: string },
    ) => s.updateNotice.run(row).changes === 1,
    noticesPage: (accountId: string, liveMode: number, limit: number, offset: number) => ({
      rows: s.page.all(accountId, liveMode, limit, offset) as NoticeRow[],
      total: s.count.get(accountId, liveMode) as number,
    }),
    /** Deletes notices settled before `cutoff` (ISO). */
    pruneNotices: (cutoff: string) => void s.prune.run(cutoff),
  };
}

export type NoticeStore = ReturnType<typeof noticeStore>;
