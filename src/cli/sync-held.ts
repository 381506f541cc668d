import type { Command } from 'commander';
import pino from 'pino';
import { CliError, cliConfigInRole, openCliDatabase, printJson, printTable, withDataOptions, type DataOptions } from './common.js';
import { systemClock } from '../clock.js';
import { centralSide } from '../sync/central/sync-store.js';
import { decideHeld } from '../sync/central/checks/review.js';

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
        const ok = decideHeld(cliCtx(db), id, 'release', note, new Date().toISOString());
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
        const ok = decideHeld(cliCtx(db), id, 'reject', note, new Date().toISOString());
        if (!ok) throw new CliError(`${id} is not held for review (posd sync held list)`);
        process.stdout.write(`${id} rejected: ${note}\n`);
      }),
    );
}

const cliCtx = (db: ReturnType<typeof openCliDatabase>) => ({ db, log: pino({ level: 'silent' }), clock: systemClock });

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
