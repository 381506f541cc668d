import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.js';
import type { AppContext } from '../context.js';
import type { IdempotencyCodec } from '../api/idempotency.js';

/**
 * The box's key. Secrets posd must reuse (webhook signing secrets, tax-invoicing credentials, stored
 * idempotent answers that carry a secret) are encrypted at rest (AES-256-GCM) so that a copy of the
 * database alone (a backup, a support bundle, a synced snapshot) does not let anyone forge
 * deliveries or pose as the store. The name of the key's setting and file predate that wider use. The key comes from
 * `webhooks.secrets_key` (base64 of 32 bytes, e.g. from `POSD_WEBHOOKS_SECRETS_KEY`) or, when that is
 * empty, from `webhook-secrets.key` in the data folder, made (mode 0600) on first use. A backup that
 * must restore working endpoints has to include that file (or the configured key).
 */
export class SecretBox {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('webhooks.secrets_key must be base64 of 32 bytes');
  }

  static fromConfig(config: Config): SecretBox {
    if (config.webhooks.secrets_key) return new SecretBox(Buffer.from(config.webhooks.secrets_key, 'base64'));
    const file = join(config.data_dir, 'webhook-secrets.key');
    if (!existsSync(file)) {
      // 'wx' fails if another process made it meanwhile; then we read theirs.
      try {
        writeFileSync(file, `${randomBytes(32).toString('base64')}\n`, { flag: 'wx', mode: 0o600 });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      chmodSync(file, 0o600);
    }
    return new SecretBox(Buffer.from(readFileSync(file, 'utf8').trim(), 'base64'));
  }

  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64'), cipher.getAuthTag().toString('base64'), data.toString('base64')].join(':');
  }

  open(sealed: string): string {
    const [version, iv, tag, data] = sealed.split(':');
    if (version !== 'v1' || !iv || !tag || data === undefined) throw new Error('not a sealed secret');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64'));
    decipher.setAuthTag(Buffer.from(tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64')), decipher.final()]).toString('utf8');
  }
}

const boxes = new WeakMap<AppContext, SecretBox>();

/**
 * The box's key, one per daemon: seals every secret posd must keep and reuse (webhook signing
 * secrets, tax-invoicing credentials, idempotent responses that carry a secret shown once).
 */
export function secretBoxOf(ctx: AppContext): SecretBox {
  let box = boxes.get(ctx);
  if (!box) {
    box = SecretBox.fromConfig(ctx.config);
    boxes.set(ctx, box);
  }
  return box;
}

/** The codec a route names in `config.idempotencyCodec` when its answer holds a secret. */
export function sealedResponses(box: SecretBox): IdempotencyCodec {
  return { seal: (t) => box.seal(t), open: (t) => box.open(t) };
}
