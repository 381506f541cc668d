import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
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
    .option('--kind <kind>', 'websocket, serial or nexo (default: serial with --serial-path, else websocket)')
    .option('--serial-path <path>', 'serial port of a serial terminal, e.g. /dev/ttyUSB0')
    .option('--baud-rate <n>', 'serial baud rate (default 115200)')
    .option('--address <ip>', 'nexo: the literal IP address of the terminal on the store network')
    .option('--port <n>', 'nexo: the port of its Terminal API (default 8443)')
    .option('--poiid <id>', 'nexo: the terminal POIID, e.g. V400m-324688179')
    .option('--key-identifier <id>', 'nexo: the shared key identifier')
    .option('--key-version <n>', 'nexo: the shared key version')
    .option('--passphrase-file <path>', 'nexo: a file holding the key passphrase (else it is prompted for, or read from stdin)')
    .option('--json', 'print JSON')
    .action(async (opts: DataOptions & AddOptions) => {
      if (opts.kind === 'nexo') return addNexo(opts);
      if (opts.kind !== undefined && opts.kind !== 'websocket' && opts.kind !== 'serial')
        throw new CliError(`--kind: websocket, serial or nexo, not ${opts.kind}`);
      return withContext(opts, (ctx, accounts, { createTerminal }) => {
        if (opts.baudRate !== undefined && !/^\d+$/.test(opts.baudRate)) throw new CliError(`--baud-rate: not a number: ${opts.baudRate}`);
        const { terminal, pairingToken } = createTerminal(ctx, accountOf(accounts, opts.account), {
          name: opts.name,
          transport: (opts.kind as 'websocket' | 'serial' | undefined) ?? (opts.serialPath ? 'serial' : 'websocket'),
          serial_path: opts.serialPath ?? null,
          baud_rate: opts.baudRate === undefined ? null : Number(opts.baudRate),
        });
        if (opts.json) return printJson({ ...terminal, pairing_token: pairingToken });
        process.stdout.write(`${terminal.id}\npairing token: ${pairingToken}\n(shown once; it is stored only as a hash)\n`);
      });
    });
  withDataOptions(cmd.command('list'))
    .description("list the terminals: every account's on the box, or one account's")
    .option('--account <id>', 'only this account (default: every account on the box, live and sandbox)')
    .option('--json', 'print JSON')
    .action((opts: DataOptions & { account?: string; json?: boolean }) =>
      withContext(opts, (ctx, accounts, { listTerminals }) => {
        const scope = opts.account ? [accountOf(accounts, opts.account)] : accounts.accounts();
        const rows = scope.flatMap((a) => listTerminals(ctx, { accountIds: [a.id], liveMode: a.live_mode }, 1000, 0).rows);
        if (opts.json) return printJson(rows);
        printTable(rows.map((r) => ({ ...r, where: r.serial_path ?? (r.nexo ? `${r.nexo.poiid} at ${r.nexo.address}:${r.nexo.port}` : null) })) as never, [
          'id',
          'name',
          'account_id',
          'transport',
          'availability',
          'last_seen_at',
          'model',
          'firmware',
          'where',
        ]);
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

interface AddOptions {
  account: string;
  name: string;
  kind?: string;
  serialPath?: string;
  baudRate?: string;
  address?: string;
  port?: string;
  poiid?: string;
  keyIdentifier?: string;
  keyVersion?: string;
  passphraseFile?: string;
  json?: boolean;
}

/** The passphrase from its file, else typed at a prompt (not echoed), else stdin: never from argv, where `ps` shows it. */
async function readPassphrase(file: string | undefined): Promise<string> {
  if (file) return readFileSync(file, 'utf8').replace(/\r?\n$/, '');
  if (process.stdin.isTTY) {
    process.stderr.write('key passphrase: ');
    const rl = createInterface({ input: process.stdin, terminal: true });
    // Nothing typed is echoed: the prompt was written above, every keystroke is swallowed.
    (rl as unknown as { _writeToOutput: (s: string) => void })._writeToOutput = () => {};
    const line = await new Promise<string>((resolve) => rl.once('line', resolve));
    rl.close();
    process.stderr.write('\n');
    return line;
  }
  let text = '';
  for await (const chunk of process.stdin) text += chunk;
  return text.replace(/\r?\n$/, '');
}

/** `posd terminals add --kind nexo`: only the manager registers a nexo terminal (docs/terminals-nexo.md). */
async function addNexo(opts: DataOptions & AddOptions): Promise<void> {
  for (const [flag, value] of [
    ['--address', opts.address],
    ['--poiid', opts.poiid],
    ['--key-identifier', opts.keyIdentifier],
    ['--key-version', opts.keyVersion],
  ] as const) {
    if (!value) throw new CliError(`${flag} is required for a nexo terminal`);
  }
  if (opts.serialPath || opts.baudRate) throw new CliError('--serial-path and --baud-rate belong to a serial terminal');
  for (const [flag, value] of [
    ['--port', opts.port],
    ['--key-version', opts.keyVersion],
  ] as const) {
    if (value !== undefined && !/^\d+$/.test(value)) throw new CliError(`${flag}: not a number: ${value}`);
  }
  const passphrase = await readPassphrase(opts.passphraseFile);
  await withContext(opts, (ctx, accounts, { createNexoTerminal }) => {
    const terminal = createNexoTerminal(ctx, accountOf(accounts, opts.account), {
      name: opts.name,
      address: opts.address!,
      port: opts.port === undefined ? 8443 : Number(opts.port),
      poiid: opts.poiid!,
      keyIdentifier: opts.keyIdentifier!,
      keyVersion: Number(opts.keyVersion),
      passphrase,
    });
    if (opts.json) return printJson(terminal);
    process.stdout.write(
      `${terminal.id}\nnexo terminal ${terminal.nexo!.poiid} at ${terminal.nexo!.address}:${terminal.nexo!.port} (key passphrase stored encrypted)\n`,
    );
  });
}
