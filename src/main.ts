#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { CliError, isChainRefusal } from './cli/common.js';
import { LogWriteRefused } from './sync/central/central-log-cli.js';
import { initCommand } from './cli/init.js';
import { tlsCommand } from './cli/tls.js';
import { serveCommand } from './cli/serve.js';
import { accountsCommand, keysCommand } from './cli/keys.js';
import { managerCommand, managersCommand } from './cli/manager.js';
import { backupCommand } from './cli/backup.js';
import { restoreCommand } from './cli/restore.js';
import { doctorCommand } from './cli/doctor.js';
import { reconcileCommand, syncCommand } from './cli/sync.js';
import { terminalsCommand } from './cli/terminals.js';
import { paymentsCommand } from './cli/payments.js';
import { outageCommand } from './cli/outage.js';
import { webhooksCommand } from './cli/webhooks.js';
import { transfersCommand } from './cli/transfers.js';
import { storesCommand } from './cli/stores.js';

/** The `posd` command line: parses, loads config, calls into the rest. */
export function buildProgram(): Command {
  const program = new Command('posd').description('point-of-sale terminal agent and sync daemon').version('0.1.0').showSuggestionAfterError().exitOverride();
  for (const cmd of [
    initCommand(),
    serveCommand(),
    keysCommand(),
    accountsCommand(),
    managerCommand(),
    managersCommand(),
    backupCommand(),
    restoreCommand(),
    doctorCommand(),
    terminalsCommand(),
    paymentsCommand(),
    outageCommand(),
    syncCommand(),
    storesCommand(),
    reconcileCommand(),
    webhooksCommand(),
    transfersCommand(),
    tlsCommand(),
  ])
    program.addCommand(cmd);
  for (const cmd of program.commands) {
    cmd.exitOverride();
    for (const sub of cmd.commands) sub.exitOverride();
  }
  return program;
}

async function main(argv: string[]): Promise<number> {
  try {
    await buildProgram().parseAsync(argv);
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode; // commander already printed its one line
    if (err instanceof CliError) {
      if (err.message) process.stderr.write(`posd: ${err.message}\n`);
      return err.exitCode;
    }
    // A write refused on a chain core's folder (src/cli/common.ts): its message says why and what to use.
    if (err instanceof LogWriteRefused || isChainRefusal(err)) {
      process.stderr.write(`posd: ${(err as Error).message}\n`);
      return 2;
    }
    process.stderr.write(`posd: unexpected error: ${(err as Error).message}\n`);
    return 1;
  }
}

// Owner-only from the start: every file posd or a library it uses creates (the database, SQLite's
// -wal and -shm, backups, key files) is 0600 and every folder 0700, whatever umask started it.
process.umask(0o077);
main(process.argv).then((code) => {
  process.exitCode = code;
});
