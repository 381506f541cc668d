import { Command, Option } from 'commander';
import cliProgress from 'cli-progress';
import { CliError, cliConfig, openCliDatabase, printJson, printTable, withDataOptions, type DataOptions } from './common.js';
import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import { systemClock } from '../clock.js';
import { syncStatus, centralTarget, STATE } from '../sync/status.js';
import { syncStore } from '../sync/store.js';
import { pushAll } from '../sync/client.js';
import { tailEvents, waitingCount } from '../sync/push.js';
import { reconcileDay } from '../sync/reconcile.js';
import { CentralClient } from '../sync/transport.js';

/** Past this many waiting records `posd sync now` shows a progress bar (on a terminal). */
const BAR_FROM = 1000;

function withStore<T>(opts: DataOptions, fn: (config: Config, db: Db) => Promise<T>): Promise<T> {
  const config = cliConfig(opts);
  const db = openCliDatabase(config);
  return fn(config, db).finally(() => db.close());
}

function clientFor(config: Config, db: Db): { client: CentralClient; storeId: string } {
  const target = centralTarget(config, db);
  const storeId = syncStore(db).state(STATE.storeId);
  if (config.role !== 'store' || !target || !storeId) {
    throw new CliError('this box does not sync with a central (posd init --central-url URL --central-key KEY)');
  }
  return { client: new CentralClient(target.url, target.key, { timeoutMs: config.sync.request_timeout_ms }), storeId };
}

export function syncCommand(): Command {
  const sync = new Command('sync').description('sync between this store and its central');
  withDataOptions(sync.command('status'))
    .description('connected, last success, records waiting, last error, clock offset, reconciliation')
    .option('--json', 'print JSON')
    .action((opts: DataOptions & { json?: boolean }) =>
      withStore(opts, async (config, db) => {
        const s = syncStatus(config, db);
        if (opts.json) return printJson(s);
        const lines = [
          `central         ${s.central_url ?? '(none: this box works alone)'}`,
          `store id        ${s.store_id ?? '-'}`,
          `connected       ${s.connected ? 'yes' : 'no'}`,
          `last success    ${s.last_success_at ?? 'never'}`,
          `waiting         ${s.records_waiting}${s.oldest_waiting_at ? ` (oldest ${s.oldest_waiting_at})` : ''}`,
          `last error      ${s.last_error ? `${s.last_error_at} ${s.last_error}` : '-'}`,
          `clock offset    ${s.central_clock_offset_ms === null ? '-' : `${s.central_clock_offset_ms} ms`}`,
          `rejected        ${s.rejected_records}`,
          ...s.decisions.slice(0, 5).map((d) => `  ${d.decided_at} ${d.kind} ${d.record_id}: ${d.reason}`),
          `reconciliation  ${s.reconciliation.state}${s.reconciliation.checked_at ? ` (checked ${s.reconciliation.checked_at})` : ''}`,
          ...s.warnings.map((w) => `warning         ${w}`),
        ];
        process.stdout.write(`${lines.join('\n')}\n`);
      }),
    );
  withDataOptions(sync.command('now'))
    .description('push everything waiting to the central now (safe beside a running daemon)')
    .option('--json', 'print JSON')
    .action((opts: DataOptions & { json?: boolean }) =>
      withStore(opts, async (config, db) => {
        const { client, storeId } = clientFor(config, db);
        tailEvents(db);
        const start = waitingCount(db);
        const bar =
          !opts.json && process.stderr.isTTY && start >= BAR_FROM
            ? new cliProgress.SingleBar({ format: 'sync |{bar}| {value}/{total} records', stream: process.stderr }, cliProgress.Presets.shades_classic)
            : undefined;
        bar?.start(start, 0);
        try {
          const pushed = await pushAll({ db, clock: systemClock, config }, client, storeId, {
            onBatch: (_acked, waiting) => bar?.update(Math.max(0, start - waiting)),
          });
          bar?.stop();
          const left = waitingCount(db);
          if (opts.json) printJson({ pushed, waiting: left });
          else process.stdout.write(`pushed ${pushed} records; ${left} waiting\n`);
        } catch (err) {
          bar?.stop();
          throw new CliError(`push failed: ${(err as Error).message}`, 1);
        } finally {
          await client.close();
        }
      }),
    );
  return sync;
}

export function reconcileCommand(): Command {
  return withDataOptions(new Command('reconcile'))
    .description("compare this store's totals for one day with the central's (exit 1 on a difference)")
    .addOption(new Option('--date <day>', 'UTC day YYYY-MM-DD (default today)'))
    .option('--json', 'print JSON')
    .action((opts: DataOptions & { date?: string; json?: boolean }) =>
      withStore(opts, async (config, db) => {
        const day = opts.date ?? new Date().toISOString().slice(0, 10);
        if (!/^\d{4}-\d{2}-\d{2}$/.test(day) || Number.isNaN(Date.parse(`${day}T00:00:00Z`))) throw new CliError(`--date: not a day: ${day}`);
        const { client } = clientFor(config, db);
        let result;
        try {
          // The modules' declarations say what each kind of record weighs; loaded for this command only.
          const { buildRegistry, MODULES } = await import('../modules/index.js');
          result = await reconcileDay({ db, clock: systemClock, registry: buildRegistry(MODULES) }, client, day);
        } catch (err) {
          throw new CliError(`reconciliation failed: ${(err as Error).message}`, 1);
        } finally {
          await client.close();
        }
        if (opts.json) printJson(result);
        else if (result.state === 'behind') process.stdout.write(`${day}: the central has not applied every record of that day yet; run posd sync now\n`);
        else if (result.state === 'equal') process.stdout.write(`${day}: equal (${result.rows.length} totals compared)\n`);
        else {
          process.stdout.write(`${day}: ${result.differences.length} totals differ\n`);
          printTable(result.differences as never, ['account_id', 'currency', 'measure', 'store_count', 'central_count', 'store_sum', 'central_sum']);
        }
        if (result.state === 'different') throw new CliError(`${day}: totals differ from the central (reported to central operations)`, 1);
        if (result.state === 'behind') throw new CliError(`${day}: not compared yet`, 2);
      }),
    );
}
