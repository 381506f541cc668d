import { Command, Option } from 'commander';
import { CliError, cliConfigInRole, openCliDatabase, printJson, printTable, withDataOptions, type DataOptions } from './common.js';
import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import { AccountsService } from '../accounts/service.js';
import { systemClock } from '../clock.js';
import { STORE_STATES, listStores, showStore } from '../sync/central/store-list.js';
import { ago } from '../sync/status.js';
import type { CentralStore, StoreState } from '../system/status-sources.js';

function atCentral<T>(opts: DataOptions, fn: (config: Config, db: Db) => T): T {
  const config = cliConfigInRole(opts);
  if (config.role !== 'central')
    throw new CliError("this is a store box's data folder: posd stores runs on the central (posd sync status describes this box's link)");
  const db = openCliDatabase(config);
  try {
    return fn(config, db);
  } finally {
    db.close();
  }
}

function names(db: Db): Record<string, string> {
  return Object.fromEntries(new AccountsService(db, systemClock).accounts().map((a) => [a.id, a.name ?? '']));
}

const silence = (s: CentralStore) => (s.last_push_at ? `${ago(s.silent_ms)} ago` : `never (joined ${ago(s.silent_ms)} ago)`);

/** `posd stores list|show`: a central's store boxes, read from its database (the daemon may run). */
export function storesCommand(): Command {
  const stores = new Command('stores').description("a central's store boxes: which push, which went silent, what waits");
  withDataOptions(stores.command('list'))
    .description('every store box, the longest silent first, with the counts by state')
    .addOption(new Option('--state <state>', 'only the stores in this state').choices(STORE_STATES))
    .option('--find <text>', 'only the stores whose id or account name contains this')
    .option('--page <n>', 'page number (1 is the first)', '1')
    .option('--per-page <n>', 'stores per page', '1000')
    .option('--json', 'print JSON')
    .action((opts: DataOptions & { state?: StoreState; find?: string; page: string; perPage: string; json?: boolean }) =>
      atCentral(opts, (config, db) => {
        const page = Number(opts.page);
        const perPage = Number(opts.perPage);
        if (!Number.isInteger(page) || page < 1 || !Number.isInteger(perPage) || perPage < 1)
          throw new CliError('--page and --per-page take a whole number from 1');
        const accountNames = names(db);
        const list = listStores(config, db, Date.now(), { state: opts.state, text: opts.find, page, per_page: perPage }, { names: accountNames });
        if (opts.json) return printJson(list);
        const c = list.counts;
        process.stdout.write(
          `${list.total} store(s): ${c.silent} silent (no push for more than ${ago(config.sync.store_silent_ms)}), ${c.attention} with records parked, ${c.new} not pushed yet, ${c.ok} ok\n`,
        );
        if (list.matched !== list.total) process.stdout.write(`${list.matched} match\n`);
        printTable(
          list.stores.map((s) => ({
            store: s.store_id,
            account: accountNames[s.account_id] || s.account_id,
            state: s.state,
            'last push': silence(s),
            waiting: s.box_waiting ?? '',
            'held/parked': `${s.held}/${s.parked}`,
            refused: s.rejected,
          })),
          ['store', 'account', 'state', 'last push', 'waiting', 'held/parked', 'refused'],
        );
        if (list.pages > 1) process.stdout.write(`page ${list.page} of ${list.pages} (--page N)\n`);
      }),
    );
  withDataOptions(stores.command('show'))
    .description('one store box: its state, last push, what it said it still holds, what waits here, reconciliation')
    .argument('<store_id>')
    .option('--json', 'print JSON')
    .action((storeId: string, opts: DataOptions & { json?: boolean }) =>
      atCentral(opts, (config, db) => {
        const s = showStore(config, db, Date.now(), storeId);
        if (!s) throw new CliError(`no store ${storeId} at this central (posd stores list)`);
        if (opts.json) return printJson(s);
        const lines = [
          `store           ${s.store_id}`,
          `account         ${names(db)[s.account_id] || ''} ${s.account_id}${s.live_mode ? '' : ' (sandbox)'}`,
          `state           ${s.state}`,
          `joined          ${s.created_at}`,
          `last push       ${s.last_push_at ? `${s.last_push_at} (${ago(s.silent_ms)} ago)` : 'never'}`,
          `box waiting     ${s.box_waiting === null ? 'not said' : `${s.box_waiting}${s.box_waiting_since ? ` (oldest ${s.box_waiting_since})` : ''}`} at its last push`,
          `received seq    ${s.received_seq} (applied up to ${s.applied_seq})`,
          `held            ${s.held}`,
          `parked          ${s.parked}${s.parked ? ' (posd sync records)' : ''}`,
          `refused         ${s.rejected}`,
          `lag             ${s.lag_ms === null ? '-' : ago(s.lag_ms)} (its newest record, made to received)`,
          `reconciliation  ${s.reconciliation.reported_at ? `differences reported for ${s.reconciliation.day} at ${s.reconciliation.reported_at}` : 'no difference reported'}`,
        ];
        process.stdout.write(`${lines.join('\n')}\n`);
      }),
    );
  return stores;
}
