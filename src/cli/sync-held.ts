import { tx } from '../db/database.js';
import type { Command } from 'commander';
import pino from 'pino';
import { CliError, cliConfigInRole, openCliDatabase, printJson, printTable, withDataOptions, type DataOptions } from './common.js';
import { AccountsService } from '../accounts/service.js';
import { systemClock } from '../clock.js';
import { centralSide } from '../sync/central/sync-store.js';
import { publishRefusal } from '../sync/central/checks/refusal.js';

/**
 * `posd sync held list|release|reject` (central): the records held for review past the anomaly
 * thresholds (`sync.review.*`, docs/sync.md). Release: the running central's held sweep applies it
 * within seconds, past the thresholds. Reject: refused for good, and the pushing box hears it in its
 * feed as any refusal. Each decision keeps the operator's reason and time with the record (`note`,
 * `decided_at`): the audit trail.
 */
export function heldCommands(sync: Command): void {
  const held = sync.command('held').description('central: records held for review past sync.review thresholds');
  withDataOptions(held.command('list'))
    .description('list the records held for review, with why')
    .option('--store <id>', 'only this store box')
    .option('--json', 'print JSON')
    .action((opts: DataOptions & { store?: string; json?: boolean }) =>
      run(opts, (db) => {
        const rows = centralSide(db).inReview(opts.store ?? null, 1000);
        if (opts.json) return printJson(rows);
        if (rows.length === 0) return void process.stdout.write('no records held for review\n');
        printTable(rows as never, ['id', 'store_id', 'seq', 'kind', 'account_id', 'received_at', 'reason']);
      }),
    );
  withDataOptions(held.command('release'))
    .description('apply a held record (past the thresholds); the reason is kept with it')
    .argument('<record>', 'the record id (sync_...)')
    .requiredOption('--reason <text>', 'why it is released (kept with the record)')
    .action((id: string, opts: DataOptions & { reason: string }) =>
      run(opts, (db) => {
        const note = reasonOf(opts.reason);
        const ok = tx(db, () => centralSide(db).releaseReview(id, note, new Date().toISOString()));
        if (!ok) throw new CliError(`${id} is not held for review (posd sync held list)`);
        process.stdout.write(`${id} released: ${note}; the running central applies it within seconds\n`);
      }),
    );
  withDataOptions(held.command('reject'))
    .description('refuse a held record for good; the store box hears it; the reason is kept with it')
    .argument('<record>', 'the record id (sync_...)')
    .requiredOption('--reason <text>', 'why it is refused (kept, and sent to the box)')
    .action((id: string, opts: DataOptions & { reason: string }) =>
      run(opts, (db) => {
        const note = reasonOf(opts.reason);
        const store = centralSide(db);
        const row = store.received(id);
        const account = row && new AccountsService(db, systemClock).account(row.account_id);
        const now = new Date().toISOString();
        const ok = tx(db, () => {
          if (!row || !account || !store.rejectReview(id, `review_rejected (payload): ${note}`, note, now)) return false;
          publishRefusal(
            { db, log: pino({ level: 'silent' }) },
            { ...row, live_mode: row.live_mode === 1 },
            { storeId: row.store_id, organizationId: account.organization_id, now, stage: 'projection' },
            { reason: note, code: 'review_rejected', field: 'payload' },
          );
          return true;
        });
        if (!ok) throw new CliError(`${id} is not held for review (posd sync held list)`);
        process.stdout.write(`${id} rejected: ${note}\n`);
      }),
    );
}

function reasonOf(text: string): string {
  const t = text.trim();
  if (!t) throw new CliError('--reason: say why');
  return t.slice(0, 400);
}

async function run(opts: DataOptions, fn: (db: ReturnType<typeof openCliDatabase>) => void): Promise<void> {
  const config = cliConfigInRole(opts);
  if (config.role !== 'central') throw new CliError('records are held at the central: run this on the central');
  const db = openCliDatabase(config);
  try {
    fn(db);
  } finally {
    db.close();
  }
}
