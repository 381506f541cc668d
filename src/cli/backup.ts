import { Command } from 'commander';
import { copyFileSync, existsSync, renameSync, rmSync } from 'node:fs';
import { ownerOnlyDir, ownerOnlyFiles } from '../system/file-modes.js';
import { join, resolve } from 'node:path';
import cliProgress from 'cli-progress';
import Database from 'better-sqlite3';
import { CliError, cliConfig, openCliDatabase, withDataOptions, type DataOptions } from './common.js';
import { tx } from '../db/database.js';
import { databaseFile } from '../db/paths.js';
import { backupDatabase, backupDir, inspectDatabase, stamp } from '../system/backup.js';
import { runningDaemon } from '../system/daemon-lock.js';
import { insertBackupRun } from '../modules/ops/store.js';

export function backupCommand(): Command {
  return withDataOptions(new Command('backup'))
    .description('copy the database to a file, safely while the daemon runs')
    .option('--to <file>', 'where to write the backup (default <backup.dir>/manual-<time>.db)')
    .action(async (opts: DataOptions & { to?: string }) => {
      const config = cliConfig(opts);
      const source = databaseFile(config);
      if (!existsSync(source)) throw new CliError(`no database in ${config.data_dir}`);
      const dest = resolve(opts.to ?? join(backupDir(config), `manual-${stamp(Date.now())}.db`));
      if (existsSync(dest)) throw new CliError(`${dest} already exists; choose another --to`);
      const db = openCliDatabase(config); // refuses a database newer than this posd
      const started = new Date().toISOString();
      const bar = process.stderr.isTTY
        ? new cliProgress.SingleBar({ format: 'backup [{bar}] {percentage}% | {value}/{total} pages', stream: process.stderr }, cliProgress.Presets.shades_classic)
        : undefined;
      try {
        const result = await backupDatabase(source, dest, {
          busyTimeoutMs: config.database.busy_timeout_ms,
          onProgress: ({ totalPages, remainingPages }) => {
            if (!bar) return;
            if (bar.getTotal() !== totalPages) bar.start(totalPages, 0);
            bar.update(totalPages - remainingPages);
          },
        });
        bar?.update(bar.getTotal());
        bar?.stop();
        tx(db, () => insertBackupRun(db, { file: dest, trigger: 'manual', started_at: started, finished_at: new Date().toISOString(), bytes: result.bytes, ok: 1, error: null }));
        process.stdout.write(`posd: backup written to ${dest} (${result.bytes} bytes, integrity checked)\n`);
      } catch (err) {
        bar?.stop();
        tx(db, () => insertBackupRun(db, { file: dest, trigger: 'manual', started_at: started, finished_at: new Date().toISOString(), bytes: null, ok: 0, error: (err as Error).message }));
        throw new CliError(`backup failed: ${(err as Error).message}`);
      } finally {
        db.close();
      }
    });
}

export function restoreCommand(): Command {
  return withDataOptions(new Command('restore'))
    .description('replace the database with a backup (the daemon must be stopped)')
    .argument('<file>', 'a backup made by posd backup or the nightly backup')
    .action((file: string, opts: DataOptions) => {
      const config = cliConfig(opts);
      const pid = runningDaemon(config);
      if (pid !== null) throw new CliError(`posd is running on ${config.data_dir} (pid ${pid}); stop it first (systemctl stop posd), nothing was changed`);
      const backup = resolve(file);
      const inspection = inspectDatabase(backup);
      if (!inspection.ok) throw new CliError(`${backup} cannot be restored: ${inspection.problem}; nothing was changed`);
      const target = databaseFile(config);
      ownerOnlyDir(config.data_dir);
      let kept: string | undefined;
      if (existsSync(target)) {
        // Fold the log into the file first, so the copy kept aside is the whole current database.
        const current = new Database(target);
        current.pragma('wal_checkpoint(TRUNCATE)');
        current.close();
        kept = `${target}.pre-restore-${stamp(Date.now())}`;
        renameSync(target, kept);
      }
      // A log left beside the new file would be replayed into it: remove both.
      rmSync(`${target}-wal`, { force: true });
      rmSync(`${target}-shm`, { force: true });
      const staging = `${target}.restoring`;
      copyFileSync(backup, staging);
      ownerOnlyFiles(staging);
      renameSync(staging, target);
      process.stdout.write(
        `posd: restored ${backup} (schema ${inspection.schemaVersion}) into ${config.data_dir}` +
          (kept ? `; the previous database is kept as ${kept}` : '') +
          '\n',
      );
    });
}
