import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { runPosd } from '../helpers/process.js';

// Issue 37: "Restore silently drops card payments stored offline and still waiting, and the outage
// history." A restore says what comes back, and refuses to drop what the database here holds beyond it.

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A card the terminal stored offline, still waiting, and an outage window: written as the daemon would. */
function storeOffline(data: string, accountId: string, ref: string, startedAt: string): void {
  const db = new Database(join(data, 'posd.db'));
  // No terminal is paired here: the payment's terminal and command rows are not what is tested.
  db.pragma('foreign_keys = OFF');
  db.prepare(
    `INSERT INTO stored_payments (id, account_id, live_mode, terminal_id, command_id, checkout_id, offline_reference, status, final,
       amount_in_cents, currency, stored_at, forward_by, updated_at)
     VALUES (?, ?, 0, 'tml_1', ?, 'chk_1', ?, 'stored', 0, 1250, 'GTQ', ?, '2099-01-01T00:00:00.000Z', ?)`,
  ).run(`spay_${ref}`, accountId, `cmd_${ref}`, ref, startedAt, startedAt);
  db.prepare("INSERT INTO outage_windows (link, started_at, ended_at) VALUES ('processor', ?, ?)").run(startedAt, startedAt);
  db.close();
}

describe('a restore says what it could not bring back', () => {
  it('brings back the stored payments waiting and the outage history, and refuses to drop newer ones unless told', { timeout: 300_000 }, async () => {
    const root = mkdtempSync(join(tmpdir(), 'posd-losses-'));
    dirs.push(root);
    const data = join(root, 'data');
    const inst = JSON.parse((await runPosd(['init', '--data', data, '--json'])).stdout) as { sandbox_id: string };
    storeOffline(data, inst.sandbox_id, 'OFF-0001', '2026-12-01T10:00:00.000Z');
    const backup = join(root, 'b.db');
    expect((await runPosd(['backup', '--data', data, '--to', backup])).code).toBe(0);

    // On a fresh box it comes back, said.
    const fresh = await runPosd(['restore', backup, '--data', join(root, 'fresh'), '--without-secrets']);
    expect(fresh.code).toBe(0);
    expect(fresh.stdout).toMatch(
      /card payments stored offline and still waiting: 1 \(OFF-0001 GTQ 12\.50 stored 2026-12-01T10:00:00\.000Z\), waiting as before/,
    );
    expect(fresh.stdout).toContain('outage history: 1 window(s) since 2026-12-01T10:00:00.000Z');
    expect(fresh.stdout).toContain('no database was here to compare with');

    // The box stored another card after the backup: restoring over it would drop that card, refused.
    storeOffline(data, inst.sandbox_id, 'OFF-0002', '2026-12-02T10:00:00.000Z');
    const refused = await runPosd(['restore', backup, '--data', data, '--without-secrets']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /was not restored: the database here holds what the backup lacks: 1 card payment\(s\) stored offline and still waiting \(OFF-0002 GTQ 12\.50 .*\) and 1 outage window\(s\) \(from 2026-12-02T10:00:00\.000Z\); restoring would drop them\. .*--drop-newer.*nothing was changed/,
    );
    const db = new Database(join(data, 'posd.db'), { readonly: true });
    expect(db.prepare('SELECT offline_reference FROM stored_payments ORDER BY seq').pluck().all()).toEqual(['OFF-0001', 'OFF-0002']);
    db.close();

    const dropped = await runPosd(['restore', backup, '--data', data, '--without-secrets', '--drop-newer']);
    expect(dropped.code).toBe(0);
    expect(dropped.stdout).toMatch(/NOT brought back \(--drop-newer; they stay in the database kept aside\): 1 card payment\(s\) .*OFF-0002/);
  });
});
