import { join } from 'node:path';
import type { Config } from '../../config.js';

/** Where the box's PKI lives: the CA's certificate is public, both keys are sealed with the box's key. */
export function tlsFiles(config: Pick<Config, 'data_dir'>) {
  const dir = join(config.data_dir, 'tls');
  return {
    dir,
    caCert: join(dir, 'ca.pem'),
    caKey: join(dir, 'ca-key.sealed'),
    cert: join(dir, 'server.pem'),
    key: join(dir, 'server-key.sealed'),
  };
}
