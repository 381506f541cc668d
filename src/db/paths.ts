import { join } from 'node:path';
import type { Config } from '../config.js';

export function databaseFile(config: Pick<Config, 'data_dir'>): string {
  return join(config.data_dir, 'posd.db');
}
