import { randomUUID } from 'node:crypto';
import { Command } from 'commander';
import pino from 'pino';
import { CliError, cliConfig, openCliDatabase, printJson, printTable, withDataOptions, type DataOptions } from './common.js';
import { systemClock } from '../clock.js';
import { Outbox } from '../outbox/events.js';
import { ApiError, notFound } from '../errors.js';
import type { AppContext } from '../context.js';
import { accountsOf, type AccountsService } from '../accounts/service.js';

type Registry = typeof import('../modules/terminals/service.js') & typeof import('../modules/terminals/retire.js');

/**
 * Runs `fn` with a context on the database alone: the CLI works beside a running daemon. The
 * registry (and the money modules behind it) loads only for this command, so other commands start
 * as fast as before.
 */
export async function withContext<T>(opts: DataOptions, fn: (ctx: AppContext, accounts: AccountsService, registry: Registry) => T): Promise<T> {
  const registry = { ...(await import('../modules/terminals/service.js')), ...(await import('../modules/terminals/retire.js')) };
  const { buildRegistry, MODULES } = await import('../modules/index.js');
  const config = cliConfig(opts);
  const db = openCliDatabase(config);
  const abort = new AbortController();
  const ctx: AppContext = {
    config,
    db,
    clock: systemClock,
    log: pino({ level: 'silent' }),
    outbox: new Outbox(db, systemClock),
    registry: buildRegistry(MODULES),
    bootId: randomUUID(),
    shutdown: abort.signal,
  };
  try {
    return fn(ctx, accountsOf(ctx), registry);
  } catch (err) {
    if (err instanceof ApiError) throw new CliError(err.errors ? `${err.message} ${JSON.stringify(err.errors)}` : err.message);
    throw err;
  } finally {
    db.close();
  }
}

export function accountOf(accounts: AccountsService, id: string) {
  const account = accounts.account(id);
  if (!account) throw new CliError(`no account ${id}`);
  return account;
}

/**
 * `posd terminals add|list|retire`: the registry from the store box's shell. A running daemon sees a
 * new WebSocket terminal at once (hellos are checked against the database); it opens a new serial
 * terminal's port at its next start (or register it through POST /api/terminals instead).
 */
export function terminalsCommand(): Command {
  const cmd = new Command('terminals').description('register, list and retire card terminals (pairing token shown once)');
  withDataOptions(cmd.command('add'))
    .description('register a terminal and print its pairing token (shown once, stored hashed)')
    .requiredOption('--account <id>', 'account (ac_… live, sbx_… sandbox) the terminal charges for')
    .requiredOption('--name <name>', 'terminal name')
    .option('--serial-path <path>', 'serial port of a serial terminal, e.g. /dev/ttyUSB0')
    .option('--baud-rate <n>', 'serial baud rate (default 115200)')
    .option('--json', 'print JSON')
    .action((opts: DataOptions & { account: string; name: string; serialPath?: string; baudRate?: string; json?: boolean }) =>
      withContext(opts, (ctx, accounts, { createTerminal }) => {
        if (opts.baudRate !== undefined && !/^\d+$/.test(opts.baudRate)) throw new CliError(`--baud-rate: not a number: ${opts.baudRate}`);
        const { terminal, pairingToken } = createTerminal(ctx, accountOf(accounts, opts.account), {
          name: opts.name,
          transport: opts.serialPath ? 'serial' : 'websocket',
          serial_path: opts.serialPath ?? null,
          baud_rate: opts.baudRate === undefined ? null : Number(opts.baudRate),
        });
        if (opts.json) return printJson({ ...terminal, pairing_token: pairingToken });
        process.stdout.write(`${terminal.id}\npairing token: ${pairingToken}\n(shown once; it is stored only as a hash)\n`);
      }),
    );
  withDataOptions(cmd.command('list'))
    .description("list the terminals: every account's on the box, or one account's")
    .option('--account <id>', 'only this account (default: every account on the box, live and sandbox)')
    .option('--json', 'print JSON')
    .action((opts: DataOptions & { account?: string; json?: boolean }) =>
      withContext(opts, (ctx, accounts, { listTerminals }) => {
        const scope = opts.account ? [accountOf(accounts, opts.account)] : accounts.accounts();
        const rows = scope.flatMap((a) => listTerminals(ctx, { accountIds: [a.id], liveMode: a.live_mode }, 1000, 0).rows);
        if (opts.json) return printJson(rows);
        printTable(rows as never, ['id', 'name', 'account_id', 'transport', 'availability', 'last_seen_at', 'model', 'firmware', 'serial_path']);
      }),
    );
  withDataOptions(cmd.command('retire'))
    .description('retire a terminal: its token stops working')
    .argument('<id>')
    .option('--account <id>', "the terminal's account (default: the one the terminal belongs to)")
    .action((id: string, opts: DataOptions & { account?: string }) =>
      withContext(opts, (ctx, accounts, { retireTerminal, terminalRow }) => {
        // A terminal id names its account; --account only narrows (a wrong one answers "No terminal").
        const accountId = opts.account ?? terminalRow(ctx, id)?.account_id;
        if (!accountId) throw notFound('terminal', id);
        retireTerminal(ctx, accountOf(accounts, accountId), id);
        process.stdout.write(`retired ${id}\n`);
      }),
    );
  return cmd;
}
