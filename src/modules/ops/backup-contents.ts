import { changedSettings, type Config } from '../../config.js';
import type { Db } from '../../db/database.js';
import { openWithPassphrase, sealWithPassphrase } from '../../system/backup-bundle.js';
import { keyFingerprint, readSecretsKey } from '../../system/secret-box.js';
import { openWithRecoveryKey, readRecoveryPublic, sealToRecoveryKey, sealedKeyId } from '../../system/recovery-key.js';
import { endpointCount } from '../webhooks/service.js';

/**
 * What a backup must carry to rebuild the box besides its database (docs/operations.md, "Complete
 * backups"): the webhook signing key and the settings. Secrets travel only sealed: to the box's
 * recovery key (recovery-key.ts, made by `posd init`) and, where set, under `backup.passphrase`
 * too; without either the backup holds the database and the settings less their secrets, and says
 * what it left out.
 */

const SECRET_SETTING = /(key|secret|token|password|passphrase)$/i;

interface Sealed {
  /** The key file's text, when the key comes from the data folder (a configured key is in `settings`). */
  webhook_secrets_key: string | null;
  settings: Record<string, unknown>;
}

export interface PackedBackup {
  bundle: Record<string, string>;
  /** What a restore of it will lack, in words; empty: the backup rebuilds the whole box. */
  leftOut: string[];
  /** One line for the manager: what the backup holds. */
  holds: string;
}

/** The settings without the values that look secret, and the dotted paths of those left out. */
function publicSettings(settings: Record<string, unknown>, path: string[] = []): { settings: Record<string, unknown>; secret: string[] } {
  const out: Record<string, unknown> = {};
  const secret: string[] = [];
  for (const [k, v] of Object.entries(settings)) {
    if (SECRET_SETTING.test(k) && v) secret.push([...path, k].join('.'));
    else if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
      const inner = publicSettings(v as Record<string, unknown>, [...path, k]);
      out[k] = inner.settings;
      secret.push(...inner.secret);
    } else out[k] = v;
  }
  return { settings: out, secret };
}

/** The settings to seal: all but the passphrase, which opens the backup and so never travels in it. */
function sealedSettings(settings: Record<string, unknown>): Record<string, unknown> {
  const backup = settings.backup as Record<string, unknown> | undefined;
  if (!backup || !('passphrase' in backup)) return settings;
  const { passphrase: _left, ...rest } = backup;
  const { backup: _section, ...others } = settings;
  return Object.keys(rest).length === 0 ? others : { ...others, backup: rest };
}

export function packBackup(config: Config, db: Db, passphrase = config.backup.passphrase): PackedBackup {
  const settings = changedSettings(config);
  const pub = publicSettings(sealedSettings(settings));
  const key = readSecretsKey(config);
  const recovery = readRecoveryPublic(config);
  const fromFile = key && !config.webhooks.secrets_key ? `${key.key.toString('base64')}\n` : null;
  const bundle: Record<string, string> = { format: '1', settings: JSON.stringify(pub.settings) };
  if (key) bundle.key_fingerprint = keyFingerprint(key.key);
  if (passphrase || recovery) {
    const sealed = JSON.stringify({ webhook_secrets_key: fromFile, settings: sealedSettings(settings) } satisfies Sealed);
    const to: string[] = [];
    if (recovery) {
      bundle.sealed_recovery = sealToRecoveryKey(sealed, recovery.raw);
      // Public: the restored box keeps sealing its backups to the key the manager wrote down.
      bundle.recovery_public = recovery.raw.toString('base64');
      to.push(`recovery key ${recovery.id}`);
    }
    if (passphrase) {
      bundle.sealed = sealWithPassphrase(sealed, passphrase);
      to.push('backup.passphrase');
    }
    const parts = ['database', 'settings'];
    if (key) parts.push(`webhook signing key ${keyFingerprint(key.key)}`);
    return { bundle, leftOut: [], holds: `${parts.join(', ')} (secrets sealed to ${to.join(' and ')})` };
  }
  const leftOut: string[] = [];
  // A key nothing was sealed with yet is not needed: a restored box makes a new one.
  if (key && endpointCount(db) > 0) leftOut.push(`the webhook signing key ${keyFingerprint(key.key)}`);
  for (const p of pub.secret) leftOut.push(`the setting ${p}`);
  bundle.left_out = JSON.stringify(leftOut);
  return { bundle, leftOut, holds: `database, settings${pub.secret.length ? ' (less their secrets)' : ''}` };
}

/** A sealed backup given neither of what opens it: says what would. */
export class SecretsNeededError extends Error {
  constructor(
    /** The id of the recovery key the backup is sealed to, if it is. */
    readonly recoveryKeyId: string | undefined,
    /** Also sealed under a passphrase. */
    readonly passphrase: boolean,
  ) {
    super('the backup holds the webhook signing key and the settings sealed');
    this.name = 'SecretsNeededError';
  }
}

export interface UnpackedBackup {
  /** Text of webhook-secrets.key to put in the data folder. */
  keyFile: string | null;
  keyFingerprint: string | null;
  /** The settings to restore (complete when unsealed, less their secrets otherwise). */
  settings: Record<string, unknown> | null;
  /** The recovery public half the backup was sealed to (base64), to keep sealing to it. */
  recoveryPublic: string | null;
  /** What the restored box will lack. */
  leftOut: string[];
}

export interface Openers {
  passphrase?: string;
  recoveryKey?: string;
  withoutSecrets?: boolean;
}

/**
 * The contents of a backup's bundle. A sealed bundle needs its recovery key or passphrase unless
 * `withoutSecrets`; throws SecretsNeededError, WrongRecoveryKeyError, RecoveryKeyError (recovery-key.ts)
 * or WrongPassphraseError (backup-bundle.ts). An older backup with no bundle restores its database only.
 */
export function unpackBackup(bundle: Record<string, string>, openers: Openers): UnpackedBackup {
  const recoveryPublic = bundle.recovery_public ?? null;
  if (!bundle.format)
    return {
      keyFile: null,
      keyFingerprint: null,
      settings: null,
      recoveryPublic,
      leftOut: ['the webhook signing key and the settings (the backup was made before backups carried them)'],
    };
  const publicOnly = (leftOut: string[]): UnpackedBackup => ({
    keyFile: null,
    keyFingerprint: null,
    settings: JSON.parse(bundle.settings ?? '{}'),
    recoveryPublic,
    leftOut,
  });
  if (!bundle.sealed && !bundle.sealed_recovery) return publicOnly(JSON.parse(bundle.left_out ?? '[]'));
  if (openers.withoutSecrets) return publicOnly(['the webhook signing key and secret settings (restored --without-secrets)']);
  let text: string;
  if (bundle.sealed_recovery && openers.recoveryKey) text = openWithRecoveryKey(bundle.sealed_recovery, openers.recoveryKey);
  else if (bundle.sealed && openers.passphrase) text = openWithPassphrase(bundle.sealed, openers.passphrase);
  else throw new SecretsNeededError(bundle.sealed_recovery ? sealedKeyId(bundle.sealed_recovery) : undefined, !!bundle.sealed);
  const sealed = JSON.parse(text) as Sealed;
  return {
    keyFile: sealed.webhook_secrets_key,
    keyFingerprint: bundle.key_fingerprint ?? null,
    settings: sealedSettings(sealed.settings),
    recoveryPublic,
    leftOut: [],
  };
}
