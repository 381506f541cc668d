import { type Command, Option } from 'commander';
import { existsSync } from 'node:fs';
import { loadConfigLayers, unknownEnvNames, ConfigError, type Config } from '../config.js';
import { openDatabase, type Db } from '../db/database.js';
import { databaseFile } from '../db/paths.js';
import { DatabaseRefusedError, migrate } from '../db/migrate.js';
import { isChainCoreFile, refuseWrites } from '../db/change-capture.js';
import { runningDaemon } from '../system/daemon-lock.js';
import { CliLogWriter, LogWriteRefused } from '../sync/central/central-log-cli.js';
import { AccountsService } from '../accounts/service.js';
import Database from 'better-sqlite3';
import { systemClock } from '../clock.js';

/** A failure the user can act on: printed as one line, exit code 2, never a stack trace. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 2,
  ) {
    super(message);
  }
}

export interface DataOptions {
  data?: string;
  config?: string;
}

export function dataOption(): Option {
  return new Option('--data <dir>', 'data folder (default ./data, or POSD_DATA)');
}

export function configOption(): Option {
  return new Option('--config <file>', 'JSON configuration file (or POSD_CONFIG)');
}

export function withDataOptions(cmd: Command): Command {
  return cmd.addOption(dataOption()).addOption(configOption());
}

export function cliConfig(opts: DataOptions, overrides: Record<string, unknown> = {}, how: { noFile?: boolean } = {}): Config {
  return cliConfigLayers(opts, overrides, how).config;
}

/** `cliConfig` with the settings as given before defaults (see loadConfigLayers). */
export function cliConfigLayers(
  opts: DataOptions,
  overrides: Record<string, unknown> = {},
  /** noFile: read no config file at all (restore is about to write it). */
  how: { noFile?: boolean } = {},
): { config: Config; given: Record<string, unknown> } {
  const env = how.noFile ? { ...process.env, POSD_CONFIG: undefined } : process.env;
  for (const u of unknownEnvNames(env)) {
    process.stderr.write(`posd: warning: ${u.name} is not a setting posd knows; it is ignored${u.nearest ? ` (did you mean ${u.nearest}?)` : ''}\n`);
  }
  try {
    return loadConfigLayers({ file: how.noFile ? undefined : opts.config, env, overrides: { ...(opts.data ? { data_dir: opts.data } : {}), ...overrides } });
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(err.message);
    throw err;
  }
}

/**
 * Only `init` and `serve` make a data folder: any other command on a folder without a database
 * would otherwise leave behind an empty installation that a later `serve` fills with keys nobody saw.
 */
export function requireInstallation(config: Config): void {
  if (!existsSync(databaseFile(config))) {
    throw new CliError(`no installation in ${config.data_dir} (wrong --data? posd init or posd serve creates one there)`);
  }
}

export function openCliDatabase(config: Config, opts: { create?: boolean } = {}): Db {
  if (!opts.create) requireInstallation(config);
  let db: Db;
  try {
    db = openDatabase(databaseFile(config), { synchronous: config.database.synchronous, busyTimeoutMs: config.database.busy_timeout_ms, migrate: false });
    // A chain core's file is migrated by its daemon only: the log's replay expects the leader's schema.
    if (!isChainCoreFile(db)) migrate(db);
  } catch (err) {
    if (err instanceof DatabaseRefusedError) throw new CliError(err.message);
    const code = (err as NodeJS.ErrnoException).code;
    if (code) throw new CliError(`cannot open the database in ${config.data_dir}: ${code} (${(err as Error).message})`);
    throw err;
  }
  if (isChainCoreFile(db)) guardChainCore(db, config);
  return db;
}

/**
 * The operator's way for the changes a command makes on a chain core, where one exists (the
 * command named by its first words).
 */
const CHAIN_WAYS: Array<[RegExp, string]> = [
  [/^webhooks replay/, 'the leading core\'s status page (/ops: each endpoint\'s "Resend the failed")'],
  [/^payments offline (allow|revoke)/, "the leading core's status page (/ops: POST /ops/offline/allow and /ops/offline/revoke)"],
];

const CHAIN_REFUSAL = "is a chain core's folder, a projection of the central log";

/** A write refused by guardChainCore's triggers (SQLite's error carries the message). */
export function isChainRefusal(err: unknown): boolean {
  return (err as { code?: string }).code === 'SQLITE_CONSTRAINT_TRIGGER' && String((err as Error).message).includes(CHAIN_REFUSAL);
}

/**
 * A chain core's file is a projection of the central's log in PostgreSQL (docs/central.md, "One
 * log"): a command may write it only through that log. With no daemon on the folder and the chain's
 * PostgreSQL configured, the command takes the lease and appends its writes (CliLogWriter) until its
 * connection closes; otherwise every write is refused, its error saying why and what to use.
 */
function guardChainCore(db: Db, config: Config): void {
  const command = process.argv
    .slice(2)
    .filter((a) => !a.startsWith('-'))
    .slice(0, 3)
    .join(' ');
  let why: string;
  const pid = runningDaemon(config);
  if (pid !== null) why = `a daemon (pid ${pid}) serves it`;
  else if (!config.sync.postgres.url) why = "no sync.postgres.url is configured for this command (give it the core's --config)";
  else {
    try {
      const writer = CliLogWriter.open(db, config.sync.postgres.url);
      const close = db.close.bind(db);
      db.close = () => {
        try {
          writer.finish();
        } catch (err) {
          if (err instanceof LogWriteRefused) throw new CliError(err.message);
          throw err;
        } finally {
          close();
        }
        return db;
      };
      return;
    } catch (err) {
      if (!(err instanceof LogWriteRefused)) throw err;
      why = err.message;
    }
  }
  const way = CHAIN_WAYS.find(([re]) => re.test(command))?.[1];
  refuseWrites(
    db,
    `${config.data_dir} ${CHAIN_REFUSAL} in PostgreSQL, and ${why}: ` +
      `a write made here would live in this file only, so nothing was written. ${way ? `Use ${way}, or` : 'To make this change,'} stop every core of the chain ` +
      "and run the command again with the core's configuration (--config): it then writes through the central log.",
  );
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/** A plain table for humans: columns padded to the widest cell. */
export function printTable(rows: Array<Record<string, unknown>>, columns: string[]): void {
  const cells = rows.map((r) => columns.map((c) => (r[c] === null || r[c] === undefined ? '' : String(r[c]))));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i].length)));
  const line = (vals: string[]) =>
    vals
      .map((v, i) => v.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  process.stdout.write(`${line(columns)}\n${cells.map(line).join('\n')}${cells.length ? '\n' : ''}`);
}

/**
 * The role the data folder was made for (`meta.role`, written by init and by the first serve), or
 * undefined for a folder with no installation yet. Read before the daemon starts so a central's
 * folder served without `--role` runs as a central.
 */
export function storedRole(config: Config): 'store' | 'central' | undefined {
  if (!existsSync(databaseFile(config))) return undefined;
  // Read-only: doctor reads the role too, and must change nothing.
  let db: Db;
  try {
    db = new Database(databaseFile(config), { readonly: true, fileMustExist: true });
  } catch {
    return undefined;
  }
  try {
    const role = new AccountsService(db, systemClock).meta('role');
    return role === 'central' || role === 'store' ? role : undefined;
  } catch {
    return undefined; // not a posd database, or one this posd cannot read: the start says why
  } finally {
    db.close();
  }
}

/** `cliConfig` in the role stored in the data folder unless one was given: doctor and sync act as the box runs. */
export function cliConfigInRole(opts: DataOptions): Config {
  const { config, given } = cliConfigLayers(opts);
  if (given.role !== undefined) return config;
  const stored = storedRole(config);
  return stored && stored !== config.role ? { ...config, role: stored } : config;
}
