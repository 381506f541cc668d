import { Command, Option } from 'commander';
import { CliError, cliConfig, openCliDatabase, printJson, printTable, withDataOptions, type DataOptions } from './common.js';
import { AccountsService } from '../accounts/service.js';
import { systemClock } from '../clock.js';
import type { Db } from '../db/database.js';
import { EMBED_ORIGINS_SETTING, embedOriginsOf, parseEmbedOrigins } from '../accounts/embed-origins.js';

function withAccounts<T>(opts: DataOptions, fn: (accounts: AccountsService, db: Db) => T): T {
  const config = cliConfig(opts);
  const db = openCliDatabase(config);
  try {
    return fn(new AccountsService(db, systemClock, { unifiedSince: config.events.unified_since }), db);
  } finally {
    db.close();
  }
}

export function keysCommand(): Command {
  const keys = new Command('keys').description('create, list and revoke secret keys (shown once, stored hashed)');
  withDataOptions(keys.command('create'))
    .description('create a key for an account or an organization')
    .option('--account <id>', 'account the key acts on')
    .option('--organization <id>', 'organization the (read-only) key covers')
    .addOption(new Option('--env <env>', 'live or test').choices(['live', 'test']).makeOptionMandatory())
    .option('--json', 'print the key as JSON')
    .action((opts: DataOptions & { account?: string; organization?: string; env: 'live' | 'test'; json?: boolean }) => {
      if (!!opts.account === !!opts.organization) throw new CliError('name exactly one of --account or --organization');
      withAccounts(opts, (accounts) => {
        let created;
        try {
          created = accounts.createKey({ accountId: opts.account, organizationId: opts.organization, environment: opts.env });
        } catch (err) {
          throw new CliError((err as Error).message);
        }
        const out = {
          key: created.key,
          prefix: created.prefix,
          ...(created.account_id ? { account_id: created.account_id } : { organization_id: created.organization_id }),
          environment: created.environment,
        };
        if (opts.json) printJson(out);
        else process.stdout.write(`${created.key}\n(shown once; it is stored only as a hash)\n`);
      });
    });
  withDataOptions(keys.command('list'))
    .description('list keys by prefix (the keys themselves are never stored)')
    .option('--json', 'print JSON')
    .action((opts: DataOptions & { json?: boolean }) =>
      withAccounts(opts, (accounts) => {
        const rows = accounts.keys();
        if (opts.json) return printJson(rows);
        printTable(rows as never, ['prefix', 'kind', 'environment', 'account_id', 'organization_id', 'created_at', 'revoked_at']);
      }),
    );
  withDataOptions(keys.command('revoke'))
    .description('revoke a key by its prefix (as listed)')
    .argument('<prefix>')
    .action((prefix: string, opts: DataOptions) =>
      withAccounts(opts, (accounts) => {
        if (!accounts.revokeKey(prefix)) throw new CliError(`no active key with prefix ${prefix}`);
        process.stdout.write(`revoked ${prefix}\n`);
      }),
    );
  return keys;
}

export function accountsCommand(): Command {
  const cmd = new Command('accounts').description('create and list accounts');
  withDataOptions(cmd.command('create'))
    .description('create a live account with its sandbox: a connected child (--parent) or an organization member')
    .requiredOption('--name <name>', 'account name')
    .option('--parent <id>', 'platform account this child connects to')
    .option('--organization <id>', 'organization the account belongs to')
    .option('--json', 'print JSON')
    .action((opts: DataOptions & { name: string; parent?: string; organization?: string; json?: boolean }) =>
      withAccounts(opts, (accounts) => {
        const organizationId = opts.organization ?? (opts.parent ? undefined : accounts.accounts()[0]?.organization_id);
        let made;
        try {
          made = accounts.createAccount({ name: opts.name, parentId: opts.parent, organizationId });
        } catch (err) {
          throw new CliError((err as Error).message);
        }
        const out = {
          account_id: made.account.id,
          sandbox_id: made.sandbox.id,
          organization_id: made.account.organization_id,
          parent_account_id: made.account.parent_account_id,
        };
        if (opts.json) printJson(out);
        else process.stdout.write(`created ${made.account.id} (sandbox ${made.sandbox.id})\n`);
      }),
    );
  withDataOptions(cmd.command('list'))
    .description('list accounts')
    .option('--json', 'print JSON')
    .action((opts: DataOptions & { json?: boolean }) =>
      withAccounts(opts, (accounts) => {
        const rows = accounts.accounts().map((a) => ({ ...a, environment: a.live_mode ? 'live' : 'sandbox' }));
        if (opts.json) return printJson(rows);
        printTable(rows as never, ['id', 'name', 'environment', 'parent_account_id', 'organization_id', 'created_at']);
      }),
    );
  withDataOptions(cmd.command('settings'))
    .description(`show or change an account's settings (${Object.keys(ACCOUNT_SETTINGS).join(', ')}); a running posd sees the change at once`)
    .argument('<account>', 'account id (live or sandbox)')
    .option('--set <key=value>', 'set a setting (repeatable): true or false', (v: string, all: string[] = []) => [...all, v])
    .option('--unset <key>', `back to the default (repeatable; also ${EMBED_ORIGINS_SETTING})`, (v: string, all: string[] = []) => [...all, v])
    .option(
      '--embed-origins <origins>',
      "comma-separated shop origins (https://shop.example) that may frame this live account's checkout pages with embed=true; a sandbox's may be framed by any",
    )
    .option('--json', 'print JSON')
    .action((accountId: string, opts: DataOptions & { set?: string[]; unset?: string[]; embedOrigins?: string; json?: boolean }) =>
      withAccounts(opts, (accounts) => {
        const account = accounts.account(accountId);
        if (!account) throw new CliError(`no account ${accountId}`);
        const patch: Record<string, unknown> = {};
        if (opts.embedOrigins !== undefined) {
          if (!account.live_mode)
            throw new CliError(`${account.id} is a sandbox: any origin may frame its checkout pages; set the origins on its live account`);
          const parsed = parseEmbedOrigins(opts.embedOrigins);
          if ('error' in parsed) throw new CliError(`--embed-origins: ${parsed.error}`);
          patch[EMBED_ORIGINS_SETTING] = parsed.origins;
        }
        for (const pair of opts.set ?? []) {
          const m = /^([a-z_]+)=(true|false)$/.exec(pair);
          if (!m || !(m[1]! in ACCOUNT_SETTINGS)) throw new CliError(`--set takes key=true|false with key one of ${Object.keys(ACCOUNT_SETTINGS).join(', ')}`);
          patch[m[1]!] = m[2] === 'true';
        }
        for (const key of opts.unset ?? []) {
          if (!(key in ACCOUNT_SETTINGS) && key !== EMBED_ORIGINS_SETTING) {
            throw new CliError(`--unset takes one of ${[...Object.keys(ACCOUNT_SETTINGS), EMBED_ORIGINS_SETTING].join(', ')}`);
          }
          patch[key] = undefined;
        }
        const settings = Object.keys(patch).length ? accounts.updateSettings(account.id, patch).settings : account.settings;
        const out = Object.fromEntries(Object.entries(ACCOUNT_SETTINGS).map(([k, def]) => [k, typeof settings[k] === 'boolean' ? settings[k] : def]));
        const embed = embedOriginsOf({ live_mode: account.live_mode, settings });
        const embedOrigins = embed.any ? '*' : embed.origins;
        if (opts.json) printJson({ account_id: account.id, event_format: account.event_format, settings: { ...out, [EMBED_ORIGINS_SETTING]: embedOrigins } });
        else {
          for (const [k, v] of Object.entries(out)) process.stdout.write(`${k}: ${v === null ? '(configuration default)' : v}\n`);
          const shown = embed.any ? '* (a sandbox: any origin)' : embed.origins.length ? embed.origins.join(', ') : '(none: the checkout page is never framed)';
          process.stdout.write(`${EMBED_ORIGINS_SETTING}: ${shown}\n`);
          process.stdout.write(`event_format: ${account.event_format} (change with posd accounts set ${account.id} --event-formats unified|both)\n`);
        }
      }),
    );
  withDataOptions(cmd.command('set'))
    .description(
      'change an account: --event-formats both sends the legacy payment events (payment_intent.succeeded, ...) beside the unified intent.* ones (spec 6.3); ' +
        'named by its live id, its sandbox changes too; a running posd sees the change at once',
    )
    .argument('<account>', 'account id (live, or a sandbox alone)')
    .addOption(new Option('--event-formats <format>', 'unified, or both (unified plus legacy)').choices(['unified', 'both']).makeOptionMandatory())
    .option('--json', 'print JSON')
    .action((accountId: string, opts: DataOptions & { eventFormats: 'unified' | 'both'; json?: boolean }) =>
      withAccounts(opts, (accounts) => {
        if (!accounts.account(accountId)) throw new CliError(`no account ${accountId}`);
        const changed = accounts.setEventFormat(accountId, opts.eventFormats);
        const rows = changed.map((a) => ({ account_id: a.id, environment: a.live_mode ? 'live' : 'sandbox', event_format: a.event_format }));
        if (opts.json) return printJson(rows);
        for (const r of rows) process.stdout.write(`${r.account_id} (${r.environment}): event_format ${r.event_format}\n`);
      }),
    );
  return cmd;
}

/**
 * The account settings behind the API's 403s and refusals, with their defaults (null: the
 * configuration decides). Changed here rather than in the database by hand (issue 15).
 */
const ACCOUNT_SETTINGS: Record<string, boolean | null> = {
  bookings_enabled: true,
  money_movement_enabled: true,
  tax_invoicing_enabled: null,
};
