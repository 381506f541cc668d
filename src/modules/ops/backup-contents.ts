import { changedSettings, type Config } from '../../config.js';
import type { Db } from '../../db/database.js';
import { openWithPassphrase, sealWithPassphrase } from '../../system/backup-bundle.js';
import { keyFingerprint, readSecretsKey } from '../../system/secret-box.js';
import { endpointCount } from '../webhooks/service.js';

/**
 * What a backup must carry to rebuild the box besides its database (docs/operations.md, "Complete
 * backups"): the webhook signing key and the settings. Secrets travel only sealed under
 * `backup.passphrase`; without one the backup holds the database and the settings less their
 * secrets, and says what it left out.
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

export function packBackup(config: Config, db: Db, passphrase = config.backup.passphrase): PackedBackup {
  const settings = changedSettings(config);
  const pub = publicSettings(settings);
  const key = readSecretsKey(config);
  const fromFile = key && !config.webhooks.secrets_key ? `${key.key.toString('base64')}\n` : null;
  const bundle: Record<string, string> = { format: '1', settings: JSON.stringify(pub.settings) };
  if (key) bundle.key_fingerprint = keyFingerprint(key.key);
  if (passphrase) {
    const sealed: Sealed = { webhook_secrets_key: fromFile, settings };
    bundle.sealed = sealWithPassphrase(JSON.stringify(sealed), passphrase);
    const parts = ['database', 'settings'];
    if (key) parts.push(`webhook signing key ${keyFingerprint(key.key)} (sealed)`);
    return { bundle, leftOut: [], holds: parts.join(', ') };
  }
  const leftOut: string[] = [];
  // A key nothing was sealed with yet is not needed: a restored box makes a new one.
  if (key && endpointCount(db) > 0) leftOut.push(`the webhook signing key ${keyFingerprint(key.key)}`);
  for (const p of pub.secret) leftOut.push(`the setting ${p}`);
  bundle.left_out = JSON.stringify(leftOut);
  return { bundle, leftOut, holds: `database, settings${pub.secret.length ? ' (less their secrets)' : ''}` };
}

export class PassphraseNeededError extends Error {}

export interface UnpackedBackup {
  /** Text of webhook-secrets.key to put in the data folder. */
  keyFile: string | null;
  keyFingerprint: string | null;
  /** The settings to restore (complete when unsealed, less their secrets otherwise). */
  settings: Record<string, unknown> | null;
  /** What the restored box will lack. */
  leftOut: string[];
}

/**
 * The contents of a backup's bundle. A sealed bundle needs the passphrase unless `withoutSecrets`;
 * throws PassphraseNeededError or WrongPassphraseError (backup-bundle.ts). An older backup with no
 * bundle restores its database only.
 */
export function unpackBackup(bundle: Record<string, string>, passphrase: string | undefined, withoutSecrets = false): UnpackedBackup {
  if (!bundle.format)
    return {
      keyFile: null,
      keyFingerprint: null,
      settings: null,
      leftOut: ['the webhook signing key and the settings (the backup was made before backups carried them)'],
    };
  const publicOnly = (leftOut: string[]): UnpackedBackup => ({ keyFile: null, keyFingerprint: null, settings: JSON.parse(bundle.settings ?? '{}'), leftOut });
  if (!bundle.sealed) return publicOnly(JSON.parse(bundle.left_out ?? '[]'));
  if (withoutSecrets) return publicOnly(['the webhook signing key and secret settings (restored --without-secrets)']);
  if (!passphrase) throw new PassphraseNeededError('the backup holds the webhook signing key and the settings sealed under a passphrase');
  const sealed = JSON.parse(openWithPassphrase(bundle.sealed, passphrase)) as Sealed;
  return { keyFile: sealed.webhook_secrets_key, keyFingerprint: bundle.key_fingerprint ?? null, settings: sealed.settings, leftOut: [] };
}
