import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Where node's compile cache for posd lives (src/posd.ts). Under systemd, the unit's CacheDirectory
 * (`CACHE_DIRECTORY`, /var/cache/posd: the one place a hardened service may write besides its state);
 * otherwise `node_modules/.cache/posd` in the folder posd is installed in, beside the code it caches
 * (the usual place for a tool's cache; npm ci and git ignore it). Either may be missing (node makes
 * it) or read-only (node then compiles as without a cache). NODE_COMPILE_CACHE, when set, wins: node
 * enables that one before any code runs.
 */
export function compileCacheDir(env: NodeJS.ProcessEnv, entryUrl: string): string {
  if (env.CACHE_DIRECTORY) return join(env.CACHE_DIRECTORY.split(':')[0], 'compile-cache');
  // The entry is <root>/dist/src/posd.js.
  return fileURLToPath(new URL('../../node_modules/.cache/posd/', entryUrl));
}
