import { Command } from 'commander';
import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import { CliError, cliConfig, openCliDatabase, requireInstallation, withDataOptions, type DataOptions } from './common.js';
import { tx } from '../db/database.js';
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

export function managerCommand(): Command {
  const cmd = new Command('manager').description("the store manager's access to the status page");
  withDataOptions(cmd.command('set-password'))
    .description('set the status page password (asked twice on a terminal; ends every open session)')
    .option('--password-stdin', 'read the password from standard input (for scripts)')
    .action(async (opts: DataOptions & { passwordStdin?: boolean }) => {
      const config = cliConfig(opts);
      requireInstallation(config); // before asking for a password that could not be stored
      let password: string;
      if (opts.passwordStdin) password = await readStdin();
      else if (process.stdin.isTTY) {
        password = await askHidden('New manager password: ');
        if ((await askHidden('Again: ')) !== password) throw new CliError('the two passwords differ; nothing was changed');
      } else throw new CliError('no terminal to ask on: pass --password-stdin and send the password on standard input');
      if (password.length < MIN_PASSWORD_LENGTH) throw new CliError(`the password must have at least ${MIN_PASSWORD_LENGTH} characters; nothing was changed`);
      const hash = await hashPassword(password);
      const db = openCliDatabase(config);
      try {
        tx(db, () => setManagerPassword(db, hash));
      } finally {
        db.close();
      }
      process.stdout.write('posd: manager password set; open sessions were ended\n');
    });
  return cmd;
}
