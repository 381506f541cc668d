import { Command } from 'commander';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import cliProgress from 'cli-progress';
import { CliError, cliConfig, openCliDatabase, withDataOptions, type DataOptions } from './common.js';
import { tx } from '../db/database.js';
import { databaseFile } from '../db/paths.js';
import { backupDatabase, backupDir, stamp } from '../system/backup.js';
import { insertBackupRun } from '../modules/ops/store.js';
import { packBackup } from '../modules/ops/backup-contents.js';
import type { Config } from '../config.js';

export type PassphraseOptions = { passphraseFile?: string };

/** The passphrase from --passphrase-file (its first line), else backup.passphrase (POSD_BACKUP_PASSPHRASE). */
export function passphraseOf(opts: PassphraseOptions, config: Config): string | undefined {
  if (opts.passphraseFile) {
    let text: string;
    try {
      text = readFileSync(opts.passphraseFile, 'utf8');
    } catch (err) {
      throw new CliError(`--passphrase-file ${opts.passphraseFile}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    const line = text.split(/\r?\n/)[0];
    if (!line) throw new CliError(`--passphrase-file ${opts.passphraseFile} is empty`);
    return line;
  }
  return config.backup.passphrase || undefined;
}

export function backupCommand(): Command {
  return withDataOptions(new Command('backup'))
    .description('copy the database to a file, safely while the daemon runs')
    .option('--to <file>', 'where to write the backup (default <backup.dir>/manual-<time>.db)')
    .option('--passphrase-file <file>', 'seal the webhook signing key and the settings in the backup under this passphrase (default: backup.passphrase)')
    .action(async (opts: DataOptions & PassphraseOptions & { to?: string }) => {
      const config = cliConfig(opts);
      const passphrase = passphraseOf(opts, config);
      const source = databaseFile(config);
      if (!existsSync(source)) throw new CliError(`no database in ${config.data_dir}`);
      const dest = resolve(opts.to ?? join(backupDir(config), `manual-${stamp(Date.now())}.db`));
      if (existsSync(dest)) throw new CliError(`${dest} already exists; choose another --to`);
      const db = openCliDatabase(config); // refuses a database newer than this posd
      const started = new Date().toISOString();
      const bar = process.stderr.isTTY
        ? new cliProgress.SingleBar(
            { format: 'backup [{bar}] {percentage}% | {value}/{total} pages', stream: process.stderr },
            cliProgress.Presets.shades_classic,
          )
        : undefined;
      try {
        const packed = packBackup(config, db, passphrase ?? '');
        const result = await backupDatabase(source, dest, {
          busyTimeoutMs: config.database.busy_timeout_ms,
          bundle: packed.bundle,
          onProgress: ({ totalPages, remainingPages }) => {
            if (!bar) return;
            if (bar.getTotal() !== totalPages) bar.start(totalPages, 0);
            bar.update(totalPages - remainingPages);
          },
        });
        bar?.update(bar.getTotal());
        bar?.stop();
        const leftOut = packed.leftOut.length ? JSON.stringify(packed.leftOut) : null;
        tx(db, () =>
          insertBackupRun(db, {
            file: dest,
            trigger: 'manual',
            started_at: started,
            finished_at: new Date().toISOString(),
            bytes: result.bytes,
            ok: 1,
            error: null,
            left_out: leftOut,
          }),
        );
        process.stdout.write(`posd: backup written to ${dest} (${result.bytes} bytes, integrity checked)\n  holds: ${packed.holds}\n`);
        if (packed.leftOut.length) {
          process.stdout.write(
            `  left out: ${packed.leftOut.join(', ')}: a box restored from it cannot sign webhooks as before; ` +
              'set backup.passphrase (POSD_BACKUP_PASSPHRASE) or pass --passphrase-file to seal them in\n',
          );
        }
      } catch (err) {
        bar?.stop();
        tx(db, () =>
          insertBackupRun(db, {
            file: dest,
            trigger: 'manual',
            started_at: started,
            finished_at: new Date().toISOString(),
            bytes: null,
            ok: 0,
            error: (err as Error).message,
          }),
        );
        throw new CliError(`backup failed: ${(err as Error).message}`);
      } finally {
        db.close();
      }
    });
}
