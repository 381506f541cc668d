import { tx } from '../db/database.js';
import { Command, Option } from 'commander';
import cliProgress from 'cli-progress';
import { CliError, cliConfigInRole, openCliDatabase, printJson, printTable, withDataOptions, type DataOptions } from './common.js';
import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import { systemClock } from '../clock.js';
import { ago, syncStatus, centralPin, centralTarget, type SyncStatus } from '../sync/status.js';
import { STATE } from '../sync/shared/state.js';
import { centralSide } from '../sync/central/sync-store.js';
import { pushAll } from '../sync/store/client.js';
import { tailEvents, waitingCount } from '../sync/store/push.js';
import { reconcileDay } from '../sync/store/reconcile.js';
import { CentralClient } from '../sync/store/transport.js';
import { holdingsAtCursor, planRejoin } from '../sync/store/rejoin.js';
import { heldCommands } from './sync-held.js';
import { boxZone, dateIn } from '../sync/shared/summary.js';
import { localStamp } from '../modules/ops/time.js';

/** Past this many waiting records `posd sync now` shows a progress bar (on a terminal). */
const BAR_FROM = 1000;

function withStore<T>(opts: DataOptions, fn: (config: Config, db: Db) => Promise<T>): Promise<T> {
  const config = cliConfigInRole(opts);
  const db = openCliDatabase(config);
  return fn(config, db).finally(() => db.close());
}

function clientFor(config: Config, db: Db): { client: CentralClient; storeId: string } {
  const target = centralTarget(config, db);
  const storeId = centralSide(db).state(STATE.storeId);
  if (config.role !== 'store' || !target || !storeId) {
    throw new CliError('this box does not sync with a central (posd init --central-url URL --central-key KEY)');
  }
  let pin;
  try {
    pin = centralPin(config, db);
  } catch (err) {
    throw new CliError(`sync.central_ca_file: ${(err as Error).message}`);
  }
  return { client: new CentralClient(target.url, target.key, { timeoutMs: config.sync.request_timeout_ms, pin }), storeId };
}

/** A central's side: it pushes to no one; it receives its stores' pushes. */
function printCentral(s: SyncStatus): void {
  const c = s.central!;
  const lines = [
    `role            central: receives the pushes of its store boxes (posd stores list)`,
    `stores          ${c.stores}${c.silent ? `, ${c.silent} silent for more than ${ago(c.store_silent_ms)} (posd stores list --state silent)` : ', none silent'}`,
    ...c.silent_stores.map((x) => `  silent        ${x.store_id} since ${x.since}`),
    `last push       ${c.last_push_at ?? 'never'} (from any store)`,
    `held            ${s.held_records}`,
    `parked          ${s.parked_records}${s.parked_records ? ' (posd sync records)' : ''}`,
    `skipped         ${s.skipped_records}`,
    ...s.warnings.map((w) => `warning         ${w}`),
    ...s.alerts.map((a) => `ALERT           ${a.message}\n                -> ${a.fix}`),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
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
        if (s.central) return printCentral(s);
        const lines = [
          `central         ${s.central_url ?? '(none: this box works alone)'}`,
          ...(s.central_pinned ? [`pinned          SHA-256 ${s.central_pinned}`] : []),
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
          ...s.alerts.map((a) => `ALERT           ${a.message}\n                -> ${a.fix}`),
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
        // A box restored from an older backup must first take back what the central holds of it,
        // which only the daemon can apply (its modules' appliers): pushing now would reuse seqs.
        const plan = planRejoin(
          db,
          await holdingsAtCursor(db, client, storeId).catch((err) => {
            void client.close();
            throw new CliError(`push failed: ${(err as Error).message}`, 1);
          }),
        );
        if (plan.rebuild) {
          await client.close();
          throw new CliError(
            `this store's records do not agree with the central's (restored from a backup?): start the daemon (posd serve) first; ` +
              `before it pushes it fetches the ${plan.takenBack} records the central holds and this box lacks, and continues from sequence ${plan.nextSeq}`,
            1,
          );
        }
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
  operatorCommands(sync);
  return sync;
}

function centralOnly(config: Config): void {
  if (config.role !== 'central') throw new CliError("records are parked at the central: run this on the central (posd sync status shows this store's side)");
}

/**
 * What an operator does about records a central could not apply (docs/sync.md): list them, put one
 * back to be applied again once the cause is fixed, or skip it with a reason that is kept.
 */
function operatorCommands(sync: Command): void {
  heldCommands(sync);
  withDataOptions(sync.command('records'))
    .description('central: records parked because they could not be applied (or --skipped, --held), with their reason')
    .option('--skipped', 'list the records an operator skipped, with the reason given')
    .option('--held', 'list the records held for an applier or a retry')
    .option('--store <id>', 'only this store box')
    .option('--limit <n>', 'at most this many (default 100)', '100')
    .option('--json', 'print JSON')
    .action((opts: DataOptions & { skipped?: boolean; held?: boolean; store?: string; limit: string; json?: boolean }) =>
      withStore(opts, async (config, db) => {
        centralOnly(config);
        const outcome = opts.skipped ? 'skipped' : opts.held ? 'held' : 'parked';
        const rows = centralSide(db).recordsIn(outcome, opts.store ?? null, Math.max(1, Number(opts.limit) || 100));
        if (opts.json) return printJson(rows);
        if (rows.length === 0) return void process.stdout.write(`no ${outcome} records\n`);
        printTable(
          rows as never,
          outcome === 'skipped' ? ['id', 'store_id', 'seq', 'kind', 'decided_at', 'note', 'reason'] : ['id', 'store_id', 'seq', 'kind', 'decided_at', 'reason'],
        );
      }),
    );
  withDataOptions(sync.command('retry'))
    .description('central: apply parked records again (after fixing their cause); the running central applies them within seconds')
    .argument('[record...]', 'record ids (sync_...)')
    .option('--all', 'every parked record (of --store, if given)')
    .option('--store <id>', 'with --all: only this store box')
    .option('--wait <seconds>', 'how long to wait for the running central to apply them (default 30)', '30')
    .action((ids: string[], opts: DataOptions & { all?: boolean; store?: string; wait: string }) =>
      withStore(opts, async (config, db) => {
        centralOnly(config);
        const store = centralSide(db);
        const chosen = opts.all ? store.recordsIn('parked', opts.store ?? null, 1_000_000).map((r) => r.id) : ids;
        if (chosen.length === 0) throw new CliError(opts.all ? 'no parked records' : 'name the records to retry (posd sync records lists them), or --all');
        const put = tx(db, () => chosen.filter((id) => store.retry(id)));
        const notParked = chosen.filter((id) => !put.includes(id));
        if (notParked.length) process.stderr.write(`posd: not parked, left alone: ${notParked.join(', ')}\n`);
        if (put.length === 0) throw new CliError('nothing to retry');
        const { runningDaemon } = await import('../system/daemon-lock.js');
        if (runningDaemon(config) === null) {
          process.stdout.write(`${put.length} record(s) put back; the central applies them when it starts\n`);
          return;
        }
        // The running central's held sweep applies them; wait to tell the operator how it went.
        const end = Date.now() + Number(opts.wait) * 1000;
        const read = () => put.map((id) => ({ id, ...store.outcomeOf(id)! }));
        let rows = read();
        while (rows.some((r) => r.outcome === 'held') && Date.now() < end) {
          await new Promise((r) => setTimeout(r, 200));
          rows = read();
        }
        for (const r of rows) {
          process.stdout.write(
            `${r.id}  ${r.outcome === 'held' ? 'waiting (the central has not applied it yet)' : r.outcome}${r.outcome === 'parked' || r.outcome === 'rejected' ? `: ${r.reason}` : ''}\n`,
          );
        }
        if (rows.some((r) => r.outcome === 'parked')) throw new CliError('', 1);
      }),
    );
  withDataOptions(sync.command('skip'))
    .description('central: give up on a parked record; the reason is kept and reported (posd sync records --skipped)')
    .argument('<record>', 'the record id (sync_...)')
    .requiredOption('--reason <text>', 'why it is skipped (kept with the record)')
    .action((id: string, opts: DataOptions & { reason: string }) =>
      withStore(opts, async (config, db) => {
        centralOnly(config);
        if (!opts.reason.trim()) throw new CliError('--reason: say why the record is skipped');
        const ok = tx(db, () => centralSide(db).skip(id, opts.reason.trim(), new Date().toISOString()));
        if (!ok) throw new CliError(`${id} is not a parked or held record (posd sync records lists them)`);
        process.stdout.write(`${id} skipped: ${opts.reason.trim()}\n`);
      }),
    );
}

export function reconcileCommand(): Command {
  return withDataOptions(new Command('reconcile'))
    .description("compare this store's totals for one day with the central's (exit 1 on a difference)")
    .addOption(new Option('--date <day>', "day YYYY-MM-DD, compared midnight to midnight in the box's time zone (default: today)"))
    .option('--json', 'print JSON')
    .action((opts: DataOptions & { date?: string; json?: boolean }) =>
      withStore(opts, async (config, db) => {
        // The store's day: the date and its midnight-to-midnight in the box's zone, at both ends
        // (the central sums the span the store names; docs/sync.md).
        const day = opts.date ?? dateIn(Date.now(), boxZone());
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
        const span = `${result.zone} ${localStamp(result.from)} to ${localStamp(result.until)}`;
        if (opts.json) printJson(result);
        else if (result.state === 'behind')
          process.stdout.write(`${day} (${span}): the central has not applied every record of that day yet; run posd sync now\n`);
        else if (result.state === 'equal') process.stdout.write(`${day} (${span}): equal (${result.rows.length} totals compared)\n`);
        else {
          process.stdout.write(`${day} (${span}): ${result.differences.length} totals differ\n`);
          printTable(result.differences as never, ['account_id', 'currency', 'measure', 'store_count', 'central_count', 'store_sum', 'central_sum']);
        }
        if (result.state === 'different') throw new CliError(`${day}: totals differ from the central (reported to central operations)`, 1);
        if (result.state === 'behind') throw new CliError(`${day}: not compared yet`, 2);
      }),
    );
}
