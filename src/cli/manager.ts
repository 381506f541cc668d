import { Command } from 'commander';
import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import { CliError, cliConfig, openCliDatabase, printJson, printTable, requireInstallation, withDataOptions, type DataOptions } from './common.js';
import { tx, type Db } from '../db/database.js';
import {
  addManager,
  adoptSinglePassword,
  issueManagerToken,
  listManagers,
  managerByName,
  NAME_SHAPE,
  removeManager,
  setManagerPasswordOf,
} from '../modules/ops/managers.js';
import { hashPassword, MIN_PASSWORD_LENGTH } from '../modules/ops/password.js';
import { setManagerPassword } from '../modules/ops/store.js';

async function readStdin(): Promise<string> {
  let text = '';
  for await (const chunk of process.stdin) text += chunk;
  return text.replace(/\r?\n$/, '');
}

/** Asks on the terminal without echoing what is typed. */
function askHidden(question: string): Promise<string> {
  let muted = false;
  const output = new Writable({
    write(chunk, _enc, done) {
      if (!muted) process.stderr.write(chunk);
      done();
    },
  });
  const rl = createInterface({ input: process.stdin, output, terminal: true });
  return new Promise((resolve) => {
    rl.question(question, (answer) => {
      rl.close();
      process.stderr.write('\n');
      resolve(answer);
    });
    muted = true;
  });
}

/** The password from standard input (--password-stdin) or asked twice on a terminal; checked for length. */
async function newPassword(fromStdin: boolean | undefined, who: string): Promise<string> {
  let password: string;
  if (fromStdin) password = await readStdin();
  else if (process.stdin.isTTY) {
    password = await askHidden(`New password for ${who}: `);
    if ((await askHidden('Again: ')) !== password) throw new CliError('the two passwords differ; nothing was changed');
  } else throw new CliError('no terminal to ask on: pass --password-stdin and send the password on standard input');
  if (password.length < MIN_PASSWORD_LENGTH) throw new CliError(`the password must have at least ${MIN_PASSWORD_LENGTH} characters; nothing was changed`);
  return password;
}

/** Runs `fn` on the box's database, after the single password of earlier builds became the first manager. */
async function withManagers<T>(opts: DataOptions, fn: (db: Db, now: string) => T): Promise<T> {
  const db = openCliDatabase(cliConfig(opts));
  try {
    return tx(db, () => {
      const now = new Date().toISOString();
      adoptSinglePassword(db, now);
      return fn(db, now);
    });
  } finally {
    db.close();
  }
}

function existing(db: Db, name: string) {
  const m = managerByName(db, name);
  if (!m) throw new CliError(`no manager named ${name} (posd managers list)`);
  return m;
}

/**
 * `posd managers add|list|remove|password|token`: the people who look after the box, each with a
 * password of their own for the status page and, if they need it, a manager token for the API's
 * offline-policy changes. Every change they make is audited under their name.
 */
export function managersCommand(): Command {
  const cmd = new Command('managers').description('the named managers of the status page and of the offline policy (docs/operations.md)');
  withDataOptions(cmd.command('add <name>'))
    .description('add a manager with a password of their own (asked twice on a terminal)')
    .option('--password-stdin', 'read the password from standard input (for scripts)')
    .option('--json', 'print JSON')
    .action(async (name: string, opts: DataOptions & { passwordStdin?: boolean; json?: boolean }) => {
      requireInstallation(cliConfig(opts));
      if (!NAME_SHAPE.test(name))
        throw new CliError('a manager name is 1 to 64 letters, digits, spaces, dots, dashes or apostrophes, starting with a letter or digit');
      const hash = await hashPassword(await newPassword(opts.passwordStdin, name));
      const added = await withManagers(opts, (db, now) => {
        if (managerByName(db, name)) throw new CliError(`a manager named ${name} exists already`);
        return addManager(db, name, hash, now);
      });
      if (opts.json) return printJson(added);
      process.stdout.write(`posd: manager ${added.name} added\n`);
    });
  withDataOptions(cmd.command('list'))
    .description('every manager: name, whether they hold a manager token, since when')
    .option('--json', 'print JSON')
    .action(async (opts: DataOptions & { json?: boolean }) => {
      const rows = await withManagers(opts, (db) => listManagers(db));
      if (opts.json) return printJson(rows);
      if (rows.length === 0) return void process.stdout.write('No manager yet: posd managers add <name>\n');
      printTable(rows as never, ['name', 'has_token', 'created_at']);
    });
  withDataOptions(cmd.command('remove <name>'))
    .description('remove a manager: their sessions end and their token stops working (the audit keeps their name)')
    .action(async (name: string, opts: DataOptions) => {
      await withManagers(opts, (db) => removeManager(db, existing(db, name).id));
      process.stdout.write(`posd: manager ${name} removed\n`);
    });
  withDataOptions(cmd.command('password <name>'))
    .description("set a manager's password (ends their open sessions)")
    .option('--password-stdin', 'read the password from standard input (for scripts)')
    .action(async (name: string, opts: DataOptions & { passwordStdin?: boolean }) => {
      await withManagers(opts, (db) => existing(db, name));
      const hash = await hashPassword(await newPassword(opts.passwordStdin, name));
      await withManagers(opts, (db) => setManagerPasswordOf(db, existing(db, name).id, hash));
      process.stdout.write(`posd: password of ${name} set; their open sessions were ended\n`);
    });
  withDataOptions(cmd.command('token <name>'))
    .description("issue the manager's token for the API's offline-policy changes (X-Manager-Token); replaces the one before; shown once")
    .action(async (name: string, opts: DataOptions) => {
      const token = await withManagers(opts, (db) => issueManagerToken(db, existing(db, name).id));
      process.stdout.write(`${token}\n`);
    });
  return cmd;
}

export function managerCommand(): Command {
  const cmd = new Command('manager').description("the first manager's password (see posd managers for the others)");
  withDataOptions(cmd.command('set-password'))
    .description('set the password of the manager named manager, adding them if need be (asked twice on a terminal; ends their sessions)')
    .option('--password-stdin', 'read the password from standard input (for scripts)')
    .action(async (opts: DataOptions & { passwordStdin?: boolean }) => {
      const config = cliConfig(opts);
      requireInstallation(config); // before asking for a password that could not be stored
      const password = await newPassword(opts.passwordStdin, 'manager');
      const hash = await hashPassword(password);
      const db = openCliDatabase(config);
      try {
        tx(db, () => setManagerPassword(db, hash));
      } finally {
        db.close();
      }
      process.stdout.write('posd: password of the manager named manager set; their open sessions were ended\n');
    });
  return cmd;
}
