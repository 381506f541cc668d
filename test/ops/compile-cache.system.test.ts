import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileCacheDir } from '../../src/system/compile-cache.js';
import { MAIN } from '../helpers/process.js';

const run = promisify(execFile);
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'posd-compile-cache-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The built command with systemd's CACHE_DIRECTORY set as a unit's CacheDirectory would (node's own variables, which win, unset). */
const posd = (cacheDirectory: string, ...args: string[]) => {
  const { NODE_COMPILE_CACHE: _, NODE_DISABLE_COMPILE_CACHE: __, ...env } = process.env;
  return run(process.execPath, [MAIN, ...args], { env: { ...env, CACHE_DIRECTORY: cacheDirectory } });
};

describe("node's compile cache (src/posd.ts)", () => {
  it('is the unit CacheDirectory when systemd sets one, else node_modules/.cache/posd of the install', () => {
    expect(compileCacheDir({ CACHE_DIRECTORY: '/var/cache/posd' }, 'file:///opt/posd/dist/posd/posd.js')).toBe('/var/cache/posd/compile-cache');
    expect(compileCacheDir({ CACHE_DIRECTORY: '/var/cache/posd:/var/cache/other' }, 'file:///opt/posd/dist/posd/posd.js')).toBe(
      '/var/cache/posd/compile-cache',
    );
    expect(compileCacheDir({}, 'file:///opt/posd/dist/posd/posd.js')).toBe('/opt/posd/node_modules/.cache/posd/');
  });

  it('a missing folder is made and filled by the first run; the next run reads it', async () => {
    const cache = join(dir, 'missing', 'cache');
    expect((await posd(cache, '--version')).stdout).toBe('0.1.0\n');
    const made = join(cache, 'compile-cache');
    expect(existsSync(made)).toBe(true);
    const [versionFolder] = readdirSync(made);
    expect(readdirSync(join(made, versionFolder)).length).toBeGreaterThan(10);
    expect((await posd(cache, '--version')).stdout).toBe('0.1.0\n');
  });

  it('a folder that cannot be made, or cannot be written, changes nothing but the speed', async () => {
    const file = join(dir, 'a-file');
    writeFileSync(file, '');
    const cannotMake = await posd(join(file, 'below'), '--version');
    expect(cannotMake).toEqual({ stdout: '0.1.0\n', stderr: '' });
    const readOnly = join(dir, 'read-only');
    mkdirSync(join(readOnly, 'compile-cache'), { recursive: true });
    chmodSync(join(readOnly, 'compile-cache'), 0o555);
    chmodSync(readOnly, 0o555);
    expect(await posd(readOnly, '--version')).toEqual({ stdout: '0.1.0\n', stderr: '' });
    chmodSync(readOnly, 0o755);
    chmodSync(join(readOnly, 'compile-cache'), 0o755);
  });
});
