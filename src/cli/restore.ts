import { Command } from 'commander';
import { existsSync, linkSync, readFileSync, renameSync, rmSync, writeFileSync, copyFileSync, mkdirSync, statSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { ownerOnlyDir, ownerOnlyFiles } from '../file-modes.js';
import { dirname, join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { CliError, cliConfig, withDataOptions, type DataOptions } from './common.js';
import { databaseFile } from '../db/paths.js';
import { fsyncPath, inspectDatabase, repairableIndexes, stamp, type Inspection } from '../system/backup.js';
import { runningDaemon } from '../system/daemon-lock.js';
import { SecretsNeededError, unpackBackup, type UnpackedBackup } from '../modules/ops/backup-contents.js';
import { RecoveryKeyError, WrongRecoveryKeyError, readRecoveryPublic, recoveryKeyId, writeRecoveryPublic } from '../system/recovery-key.js';
import { createInterface } from 'node:readline/promises';
import { dropBundle, readBundle, WrongPassphraseError } from '../system/backup-bundle.js';
import { checkSecretsKey, keyFingerprint, secretsKeyFile } from '../system/secret-box.js';
import { sealedSecretSample } from '../modules/webhooks/service.js';
import type { Config } from '../config.js';
import { rejoinNote } from './restore-sync.js';
import { restoreLosses } from './restore-losses.js';
import { passphraseOf, type PassphraseOptions } from './backup.js';
import { insertBackupRun } from '../modules/ops/store.js';

export function restoreCommand(): Command {
  return withDataOptions(new Command('restore'))
    .description('rebuild the box from a backup: database, webhook signing key and settings (the daemon must be stopped)')
    .argument('<file>', 'a backup made by posd backup or the nightly backup')
    .option('--recovery-key-file <file>', 'the recovery key shown by posd init (or posd backup recovery-key); - reads it from standard input')
    .option('--passphrase-file <file>', 'for a backup also sealed under backup.passphrase: that passphrase (default: backup.passphrase)')
    .option('--without-secrets', 'restore a sealed backup without its key: the database and the settings less their secrets')
    .option('--drop-newer', 'restore even though the database here holds stored payments or outage history the backup lacks (it is kept aside)')
    .action(async (file: string, opts: DataOptions & PassphraseOptions & RecoveryOptions & { withoutSecrets?: boolean; dropNewer?: boolean }) => {
      // On a fresh box the settings file named by --config is what the restore writes.
      const settingsFile = opts.config ?? process.env.POSD_CONFIG;
      const freshSettings = settingsFile !== undefined && !existsSync(settingsFile);
      const config = freshSettings ? cliConfig({ data: opts.data }, {}, { noFile: true }) : cliConfig(opts);
      const pid = runningDaemon(config);
      if (pid !== null) throw new CliError(`posd is running on ${config.data_dir} (pid ${pid}); stop it first (systemctl stop posd), nothing was changed`);
      const backup = resolve(file);
      // The full check, index against table included: the backup was checked with quick_check when
      // made (docs/operations.md, Integrity check). An index that disagrees with its table is rebuilt
      // from the table in the copy being restored, below; anything else is refused.
      let inspection: Inspection = inspectDatabase(backup);
      const rebuild = inspection.ok ? [] : repairableIndexes(inspection.findings ?? []);
      if (!inspection.ok && rebuild === null) throw new CliError(`${backup} cannot be restored: ${inspection.problem}; nothing was changed`);
      const contents = await openContents(backup, opts, config);
      const target = databaseFile(config);
      ownerOnlyDir(config.data_dir);
      const at = stamp(Date.now());
      let kept: string | undefined;
      // Staged and cleaned before anything live is touched, so a failure here changes nothing.
      const staging = `${target}.restoring`;
      // What a restore killed midway left: its journal would be rolled back into this new copy.
      for (const suffix of ['', '-journal', '-wal', '-shm']) rmSync(staging + suffix, { force: true });
      copyFileSync(backup, staging);
      ownerOnlyFiles(staging);
      if (rebuild && rebuild.length > 0) {
        const repaired = rebuildIndexes(staging, rebuild);
        if (!repaired.ok) {
          for (const suffix of ['', '-journal']) rmSync(staging + suffix, { force: true });
          throw new CliError(
            `${backup} cannot be restored: ${inspection.problem}; after rebuilding ${rebuild.join(', ')}: ${repaired.problem}; nothing was changed`,
          );
        }
        inspection = repaired;
      }
      dropBundle(staging);
      const losses = restoreLosses(staging, existsSync(target) ? target : null, opts.dropNewer ?? false);
      if (losses.refusal) {
        for (const suffix of ['', '-journal']) rmSync(staging + suffix, { force: true });
        throw new CliError(`${backup} was not restored: ${losses.refusal}`);
      }
      const logged = logRestoredBackup(staging, backup, contents.leftOut);
      fsyncPath(staging);
      if (existsSync(target)) {
        // Fold the log into the file first, so the copy kept aside is the whole current database.
        const current = new Database(target);
        current.pragma('wal_checkpoint(TRUNCATE)');
        current.close();
        kept = `${target}.pre-restore-${at}`;
        // A second name, not a move: killed at any point, the data folder holds a whole posd.db,
        // the old one until the rename below puts the new one in its place in one step.
        try {
          linkSync(target, kept);
        } catch {
          copyFileSync(target, kept); // a file system without hard links
        }
      }
      // A log left beside the new file would be replayed into it: remove both.
      rmSync(`${target}-wal`, { force: true });
      rmSync(`${target}-shm`, { force: true });
      renameSync(staging, target);
      fsyncPath(config.data_dir);
      const lines = [`posd: restored ${backup} (schema ${inspection.schemaVersion}) into ${config.data_dir}`];
      if (rebuild && rebuild.length > 0) lines.push(`  rebuilt from their tables (they disagreed with them in the backup): ${rebuild.join(', ')}`);
      if (kept) lines.push(`  the previous database is kept as ${kept}`);
      lines.push(...losses.lines);
      if (contents.keyFile !== null) lines.push(`  webhook signing key ${contents.keyFingerprint ?? ''}: ${restoreKeyFile(config, contents.keyFile, at)}`);
      if (contents.settings && Object.keys(contents.settings).length > 0) lines.push(`  settings: ${restoreSettings(config, contents.settings, settingsFile)}`);
      if (contents.recoveryPublic) lines.push(`  recovery key: ${restoreRecoveryPublic(config, Buffer.from(contents.recoveryPublic, 'base64'))}`);
      if (contents.leftOut.length) lines.push(`  not in this backup: ${contents.leftOut.join(', ')}`);
      if (logged) lines.push(`  backup log: ${backup} (written ${logged}) is now this box's last backup; older runs listed are the old box's`);
      // Whatever was or was not restored, say now whether webhooks will sign: the first delivery would tell too late.
      const db = new Database(target, { readonly: true });
      let check;
      try {
        check = checkSecretsKey(config, sealedSecretSample(db));
      } finally {
        db.close();
      }
      if (!check.ok) lines.push(`  WARNING: ${check.detail}; ${check.fix}`);
      // A store that synced: the backup is older than what its central holds; say what the next start does about it.
      lines.push(...(await rejoinNote(config, target)));
      process.stdout.write(`${lines.join('\n')}\n`);
    });
}

/**
 * Adds to the restored database's backup log the run that made `backup`: the old box wrote that row
 * after the copy, so the copy lacks it, and doctor and the page would otherwise judge the box by the
 * run before (another file, perhaps an incomplete one). Its time is the file's; what it left out is
 * what this restore lacks. Returns that time, or null for a database without a backup log.
 */
function logRestoredBackup(staging: string, backup: string, leftOut: string[]): string | null {
  const db = new Database(staging);
  try {
    if (!db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'backup_runs'").get()) return null;
    const st = statSync(backup);
    const written = st.mtime.toISOString();
    insertBackupRun(db, {
      file: backup,
      trigger: /^nightly-/.test(backup.split('/').pop() ?? '') ? 'nightly' : 'manual',
      started_at: written,
      finished_at: written,
      bytes: st.size,
      ok: 1,
      error: null,
      left_out: leftOut.length ? JSON.stringify(leftOut) : null,
    });
    return written;
  } finally {
    db.close();
  }
}

/**
 * `REINDEX` of each index in `file` (a copy being restored, never the user's backup), then the full
 * check again: ok only when the file is then whole.
 */
function rebuildIndexes(file: string, indexes: string[]): Inspection {
  try {
    const db = new Database(file, { fileMustExist: true });
    try {
      for (const index of indexes) db.exec(`REINDEX "${index.replace(/"/g, '""')}"`);
    } finally {
      db.close();
    }
  } catch (err) {
    return { ok: false, problem: (err as Error).message };
  }
  return inspectDatabase(file);
}

/** Puts the backup's key file in place (the one there, if different, kept aside); says what it did. */
function restoreKeyFile(config: Config, text: string, at: string): string {
  const file = secretsKeyFile(config);
  const fingerprint = keyFingerprint(Buffer.from(text.trim(), 'base64'));
  let note = `restored as ${file}`;
  if (existsSync(file)) {
    const current = readFileSync(file, 'utf8');
    if (current.trim() === text.trim()) return `already in ${file}`;
    const aside = `${file}.pre-restore-${at}`;
    renameSync(file, aside);
    note += `; the previous key is kept as ${aside}`;
  }
  const staging = `${file}.restoring`;
  writeFileSync(staging, text, { mode: 0o600 });
  ownerOnlyFiles(staging);
  renameSync(staging, file);
  if (config.webhooks.secrets_key && keyFingerprint(Buffer.from(config.webhooks.secrets_key, 'base64')) !== fingerprint) {
    note += '; but the webhooks.secrets_key setting (POSD_WEBHOOKS_SECRETS_KEY) overrides it and is another key: remove that setting';
  }
  return note;
}

/** Writes the backup's settings where serve will read them, never over a different file. */
function restoreSettings(config: Config, settings: Record<string, unknown>, settingsFile: string | undefined): string {
  const text = `${JSON.stringify(settings, null, 2)}\n`;
  if (settingsFile && !existsSync(settingsFile)) {
    mkdirSync(dirname(resolve(settingsFile)), { recursive: true });
    writeFileSync(settingsFile, text, { mode: 0o600 });
    return `written to ${settingsFile}`;
  }
  if (settingsFile) {
    try {
      if (isDeepStrictEqual(JSON.parse(readFileSync(settingsFile, 'utf8')), settings)) return `the same as ${settingsFile}`;
    } catch {
      // unreadable or not JSON: kept, the backup's copy is written beside the data
    }
  }
  const aside = join(config.data_dir, 'posd.json.from-backup');
  writeFileSync(aside, text, { mode: 0o600 });
  return settingsFile
    ? `${settingsFile} differs and is kept; the backup's settings are in ${aside}: compare and merge`
    : `written to ${aside}: serve with --config ${aside} (or move it to /etc/posd/posd.json)`;
}

type RecoveryOptions = { recoveryKeyFile?: string };

/** The recovery key from --recovery-key-file (- for standard input): the first line that is not blank. */
async function recoveryKeyOf(opts: RecoveryOptions): Promise<string | undefined> {
  if (!opts.recoveryKeyFile) return undefined;
  let text: string;
  try {
    text = opts.recoveryKeyFile === '-' ? await readStdin() : readFileSync(opts.recoveryKeyFile, 'utf8');
  } catch (err) {
    throw new CliError(`--recovery-key-file ${opts.recoveryKeyFile}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const line = text.split(/\r?\n/).find((l) => l.trim());
  if (!line) throw new CliError(`--recovery-key-file ${opts.recoveryKeyFile} is empty`);
  return line.trim();
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Asks for the recovery key at a terminal (restore by hand); undefined when nobody can answer. */
async function promptRecoveryKey(id: string): Promise<string | undefined> {
  if (!process.stdin.isTTY || !process.stderr.isTTY) return undefined;
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return (await rl.question(`recovery key for ${id} (POSD-RK1-...): `)).trim() || undefined;
  } finally {
    rl.close();
  }
}

/** The backup's bundle opened with what was given (or asked for); every refusal changes nothing. */
async function openContents(backup: string, opts: PassphraseOptions & RecoveryOptions & { withoutSecrets?: boolean }, config: Config): Promise<UnpackedBackup> {
  const bundle = readBundle(backup);
  const passphrase = passphraseOf(opts, config);
  let recoveryKey = await recoveryKeyOf(opts);
  for (let asked = false; ; asked = true) {
    try {
      return unpackBackup(bundle, { passphrase, recoveryKey, withoutSecrets: opts.withoutSecrets });
    } catch (err) {
      if (err instanceof SecretsNeededError) {
        if (err.recoveryKeyId && !asked && (recoveryKey = await promptRecoveryKey(err.recoveryKeyId))) continue;
        const without = '(or --without-secrets to restore without them: webhook deliveries then fail until the key is put back); nothing was changed';
        if (!err.recoveryKeyId) {
          throw new CliError(
            `${backup} holds the webhook signing key and the settings sealed under a passphrase: give it with --passphrase-file FILE or POSD_BACKUP_PASSPHRASE ${without}`,
          );
        }
        throw new CliError(
          `${backup} holds the webhook signing key and the settings sealed to recovery key ${err.recoveryKeyId}: give the key posd init showed ` +
            `with --recovery-key-file FILE (- for standard input)${err.passphrase ? ', or the passphrase with --passphrase-file FILE or POSD_BACKUP_PASSPHRASE' : ''} ${without}`,
        );
      }
      if (err instanceof WrongRecoveryKeyError || err instanceof RecoveryKeyError) throw new CliError(`${err.message}: ${backup}; nothing was changed`);
      if (err instanceof WrongPassphraseError) throw new CliError(`wrong passphrase for ${backup}; nothing was changed`);
      throw err;
    }
  }
}

/** Puts back the public half the backup was sealed to, so later backups open with the key written down. */
function restoreRecoveryPublic(config: Config, publicRaw: Buffer): string {
  const id = recoveryKeyId(publicRaw);
  let current: ReturnType<typeof readRecoveryPublic>;
  try {
    current = readRecoveryPublic(config);
  } catch {
    current = undefined; // unreadable: replaced by the backup's
  }
  if (current?.id === id) return `${id}, already here`;
  if (current) return `this box seals to ${current.id}, kept; the backup was sealed to ${id}`;
  writeRecoveryPublic(config, publicRaw);
  return `${id}: later backups are sealed to it`;
}
