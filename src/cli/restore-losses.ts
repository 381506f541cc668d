import Database from 'better-sqlite3';
import type { Db } from '../db/database.js';
import { waitingStoredPayments, type WaitingStoredPayment } from '../modules/terminals/stored/store.js';
import { outageHistory } from '../sync/store/sync-store.js';

/**
 * What `posd restore` brings back and what it would drop, said before anything changes (issue 37:
 * none silently): the card payments stored offline and still waiting, and the outage history. Both
 * live in the database, so they come back as the backup holds them; what the database being
 * replaced holds beyond the backup would be lost, and the restore refuses unless told to drop it.
 */
export interface RestoreLosses {
  /** Lines for the restore's summary. */
  lines: string[];
  /** Why the restore refuses; null: nothing would be lost, or the loss was accepted. */
  refusal: string | null;
}

interface Held {
  waiting: WaitingStoredPayment[];
  outages: Array<{ link: string; started_at: string; ended_at: string | null }>;
}

function read(file: string): Held {
  const db: Db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return { waiting: waitingStoredPayments(db), outages: outageHistory(db) };
  } finally {
    db.close();
  }
}

const money = (p: WaitingStoredPayment) => `${p.offline_reference} ${p.currency} ${(p.amount_in_cents / 100).toFixed(2)} stored ${p.stored_at}`;

function listed(items: string[], max = 5): string {
  return items.length > max ? `${items.slice(0, max).join(', ')} and ${items.length - max} more` : items.join(', ');
}

/** `restored` is the staged copy of the backup; `current` the database it replaces, when there is one. */
export function restoreLosses(restored: string, current: string | null, dropNewer: boolean): RestoreLosses {
  let backup: Held;
  try {
    backup = read(restored);
  } catch (err) {
    // A backup from a schema without these tables: the next start migrates; there is nothing of them to lose.
    return { lines: [`  stored payments and outage history: not in this backup (${(err as Error).message})`], refusal: null };
  }
  const lines = [
    `  card payments stored offline and still waiting: ${backup.waiting.length}${backup.waiting.length ? ` (${listed(backup.waiting.map(money))}), waiting as before` : ''}`,
    `  outage history: ${backup.outages.length} window(s)${backup.outages.length ? ` since ${backup.outages[0].started_at}` : ''}`,
  ];
  if (!current) {
    lines.push('  no database was here to compare with: anything stored after the backup was made is not in it');
    return { lines, refusal: null };
  }
  let now: Held;
  try {
    now = read(current);
  } catch (err) {
    lines.push(`  the database being replaced cannot be read (${(err as Error).message}): what it held beyond the backup cannot be told`);
    return { lines, refusal: null };
  }
  const inBackup = new Set(backup.waiting.map((p) => p.id));
  const windows = new Set(backup.outages.map((o) => `${o.link} ${o.started_at}`));
  const lostPayments = now.waiting.filter((p) => !inBackup.has(p.id));
  const lostOutages = now.outages.filter((o) => !windows.has(`${o.link} ${o.started_at}`));
  if (lostPayments.length === 0 && lostOutages.length === 0) return { lines, refusal: null };
  const what = [
    ...(lostPayments.length ? [`${lostPayments.length} card payment(s) stored offline and still waiting (${listed(lostPayments.map(money))})`] : []),
    ...(lostOutages.length ? [`${lostOutages.length} outage window(s) (from ${lostOutages[0].started_at})`] : []),
  ].join(' and ');
  if (!dropNewer) {
    return {
      lines,
      refusal:
        `the database here holds what the backup lacks: ${what}; restoring would drop them. Restore a newer backup, or pass --drop-newer ` +
        'to restore anyway (the database here is kept aside as posd.db.pre-restore-<time>); nothing was changed',
    };
  }
  lines.push(`  NOT brought back (--drop-newer; they stay in the database kept aside): ${what}`);
  return { lines, refusal: null };
}
