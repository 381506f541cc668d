import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DaemonProcess, spawnDaemon } from '../helpers/process.js';

// What keeps an idle box under 100 MB (docs/decisions/0105-young-generation-at-start.md); the bench
// measures the RSS itself (`npm run bench -- startup`).
const run = promisify(execFile);
let dir: string;
let daemon: DaemonProcess;
let url: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'posd-idle-memory-'));
  daemon = spawnDaemon(['--port', '0'], { POSD_DATA_DIR: dir });
  url = (await daemon.waitFor(/"url":"(http:\/\/[^"]+)\/api"/))[1];
});
afterAll(async () => {
  daemon.child.kill('SIGTERM');
  await daemon.exited;
  rmSync(dir, { recursive: true, force: true });
});

describe('an idle box', () => {
  it('keeps the young generation the start was held to (V8 doubles it to 16 MiB through a start when let)', async () => {
    const metrics = await (await fetch(`${url}/metrics`)).text();
    const newSpace = metrics.match(/^nodejs_heap_space_size_total_bytes\{space="new"\} (\d+)$/m);
    expect(newSpace, 'the new-space gauge').not.toBeNull();
    expect(Number(newSpace![1])).toBeLessThanOrEqual(4 * 1024 * 1024);
  });

  it("never loads node's bundled undici: node:http is required, not ES-imported (its facade reads the lazy WebSocket)", async () => {
    const connections = fileURLToPath(new URL('../../dist/src/api/connections.js', import.meta.url));
    const script = `const m = await import(${JSON.stringify(connections)}); if (typeof m.createGuardedServer !== 'function') throw new Error('no createGuardedServer');
      process.stdout.write(JSON.stringify(process.moduleLoadList.filter((n) => n.includes('undici'))));`;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script]);
    expect(JSON.parse(stdout)).toEqual([]);
    // The check can fail: an ES import of node:http in the same process does load it.
    const facade = await run(process.execPath, [
      '--input-type=module',
      '-e',
      `await import('node:http'); process.stdout.write(String(process.moduleLoadList.some((n) => n.includes('undici'))));`,
    ]);
    expect(facade.stdout).toBe('true');
  });
});
