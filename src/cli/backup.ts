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
import { newRecoveryPair, readRecoveryPublic, type RecoveryPair } from '../system/recovery-key.js';
import { runningDaemon } from '../system/daemon-lock.js';

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
    .option('--passphrase-file <file>', 'also seal the webhook signing key and the settings under this passphrase (default: backup.passphrase)')
    .addCommand(recoveryKeyCommand())
    .action(async (opts: DataOptions & PassphraseOptions & { to?: string }) => {
      const config = cliConfig(opts);
      const passphrase = passphraseOf(opts, config);
      const source = databaseFile(config);
      if (!existsSync(source)) throw new CliError(`no database in ${config.data_dir}`);
      // A box from before recovery keys gets its pair now, shown once here: this backup is complete.
      const made = readRecoveryPublic(config) ? undefined : newRecoveryPair(config);
      if (made) process.stdout.write(recoveryKeyLines(made, 'this box had no recovery key; one was made').join('\n'));
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
              'run posd backup recovery-key and write down the key it shows\n',
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

/** What a manager is shown of a new pair: the private half, once, and what it is for. */
export function recoveryKeyLines(pair: RecoveryPair, why: string): string[] {
  return [
    `posd: ${why}: ${pair.id}`,
    `  recovery key  ${pair.recoveryKey}`,
    '  Write the recovery key down and keep it away from the box: it is shown only now, and posd restore',
    '  asks for it to bring back the webhook signing key and the settings. The box keeps only its public half.',
    '',
  ];
}

function recoveryKeyCommand(): Command {
  return withDataOptions(new Command('recovery-key'))
    .description('make a new recovery key pair: later backups are sealed to it; older backups still need the old key')
    .option('--json', 'print the key and its id as one JSON object and nothing else')
    .action((_own: unknown, cmd: Command) => {
      // `posd backup` has the same --data and --config: commander gives them to it, wherever they stand.
      const opts = cmd.optsWithGlobals<DataOptions & { json?: boolean }>();
      const config = cliConfig(opts);
      if (!existsSync(databaseFile(config))) throw new CliError(`no database in ${config.data_dir}`);
      const old = readRecoveryPublic(config);
      const pair = newRecoveryPair(config);
      if (opts.json) {
        process.stdout.write(`${JSON.stringify({ recovery_key: pair.recoveryKey, recovery_key_id: pair.id, replaced: old?.id ?? null })}\n`);
        return;
      }
      const lines = recoveryKeyLines(pair, 'a new recovery key pair');
      if (old) lines.splice(-1, 0, `  Backups made before now are sealed to ${old.id}: keep that key as long as you keep them.`);
      // The daemon seals each backup to the key file as it is then: the next nightly backup uses this one.
      if (runningDaemon(config) !== null) lines.splice(-1, 0, '  The running daemon seals its next backup to the new key.');
      process.stdout.write(lines.join('\n'));
    });
}
