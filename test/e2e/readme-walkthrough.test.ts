import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// Issue 16: the README's central-and-store walk-through works exactly as written. The block is read
// from README.md and run by bash, unchanged, in the project folder (the built daemon, real
// processes, real files, real ports).
function walkthrough(): string {
  const readme = readFileSync('README.md', 'utf8');
  const m = /<!-- walkthrough:chain -->\n```sh\n([\s\S]*?)\n```/.exec(readme);
  if (!m) throw new Error('README.md has no walkthrough:chain block');
  return m[1];
}

function runBash(script: string, timeoutMs: number): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    // Its own process group, so a failure mid-way still stops the daemons it started.
    const child = spawn('bash', ['-e', '-c', script], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        // the group is gone already: the block stopped its daemons itself
      }
      resolve({ code, out });
    });
  });
}

describe("README's chain walk-through", () => {
  it('runs as written: the store joins the central, a sale made at the store is at the central, the day reconciles equal', async () => {
    const { code, out } = await runBash(walkthrough(), 150_000);
    expect(code, out).toBe(0);
    expect(out).toMatch(/this box is now store store_\w+ of http:\/\/127\.0\.0\.1:4300/);
    const sale = JSON.parse(out.split('\n').find((l) => l.startsWith('{"id":"in_'))!);
    expect(sale).toMatchObject({ status: 'succeeded', amount_in_cents: 2500 });
    expect(out).toMatch(/: equal \(\d+ totals compared\)/);
    const atCentral = JSON.parse(out.split('\n').find((l) => l.startsWith('[{'))!);
    expect(atCentral[0]).toMatchObject({ id: sale.checkout.id, status: 'paid', amount_in_cents: 2500 });
  }, 180_000);
});
