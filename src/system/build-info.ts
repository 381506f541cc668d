import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | undefined;

/** posd's version from its package.json (found upward from this file: src/ under tests, dist/src/ when built). */
export function posdVersion(): string {
  if (cached !== undefined) return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'posd') return (cached = pkg.version ?? 'unknown');
    }
    dir = dirname(dir);
  }
  return (cached = 'unknown');
}
