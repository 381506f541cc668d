import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runBash, walkthrough } from '../helpers/walkthrough.js';

// Issue 16: the README's central-and-store walk-through works exactly as written. The block is read
// from README.md and run by bash, unchanged, in the project folder (the built daemon, real
// processes, real files, real ports). Issue 19 step 6: the same for the chain past one machine
// (PostgreSQL, the core, two fronts, HAProxy).
describe("README's chain walk-through", () => {
  it('runs as written: the store joins the central over https pinning its CA, a sale made at the store is at the central, the day reconciles equal', async () => {
    const { code, out } = await runBash(walkthrough('README.md', 'chain'), 150_000);
    expect(code, out).toBe(0);
    expect(out).toMatch(/this box is now store store_\w+ of https:\/\/127\.0\.0\.1:4300/);
    expect(out).toMatch(/pinned {8}SHA-256 ([0-9A-F]{2}:){31}[0-9A-F]{2}: the only certificate/);
    const sale = JSON.parse(out.split('\n').find((l) => l.startsWith('{"id":"in_'))!);
    expect(sale).toMatchObject({ status: 'succeeded', amount_in_cents: 2500 });
    expect(out).toMatch(/: equal \(\d+ totals compared\)/);
    const atCentral = JSON.parse(out.split('\n').find((l) => l.startsWith('[{'))!);
    expect(atCentral[0]).toMatchObject({ id: sale.checkout.id, status: 'paid', amount_in_cents: 2500 });
  }, 180_000);
});

/** Whether something accepts connections on 127.0.0.1:port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** The pids of processes whose command line names `path`. */
function processesNaming(path: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(path)) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

describe("README's chain walk-through past one machine (PostgreSQL, the core, two fronts, HAProxy)", () => {
  it('runs as written: the store joins through HAProxy over TLS pinning the chain CA, its sale is applied at the core, the day reconciles equal, the standby takes over, nothing is left running', async () => {
    // The block's `mktemp -d` lands in a folder of this test's, so what it started can be found.
    // Traversable by others: as root the block lends its folder to the postgres user.
    const tmp = mkdtempSync(join(tmpdir(), 'posd-walk-'));
    chmodSync(tmp, 0o755);
    try {
      const { code, out } = await runBash(walkthrough('README.md', 'chain-pg'), 170_000, { ...process.env, TMPDIR: tmp });
      expect(code, out).toBe(0);
      // Over HTTPS through HAProxy, pinning the chain's CA (the core's box CA, which issued the
      // certificate HAProxy serves); a client with only the system's CAs is refused at the handshake.
      expect(out).toMatch(/this box is now store store_\w+ of https:\/\/127\.0\.0\.1:8443/);
      expect(out).toMatch(/pinned {8}SHA-256 ([0-9A-F]{2}:){31}[0-9A-F]{2}: the only certificate/);
      expect(out).toContain("curl exit 60: refused without the chain's CA\n");
      expect(out).toMatch(/posd: wrote \S+\/lb\/haproxy\.pem \(certificate, CA and key; mode 0600\)/);
      const sale = JSON.parse(out.split('\n').find((l) => l.startsWith('{"id":"in_'))!);
      expect(sale).toMatchObject({ status: 'succeeded', amount_in_cents: 2500 });
      expect(out).toMatch(/: equal \(\d+ totals compared\)/);
      expect(out).not.toMatch(/difference/i);
      // The sale at the core, read through HAProxy (the core's /api, not a front's 421).
      const lists = out.split('\n').filter((l) => l.startsWith('[{'));
      const atCore = JSON.parse(lists[0]);
      expect(atCore[0]).toMatchObject({ id: sale.checkout.id, status: 'paid', amount_in_cents: 2500 });
      // The second core said standby, then led after the first was killed: a sale through HAProxy
      // landed there, and it holds the first core's sale too (replayed from the log).
      expect(out).toContain('{"status":"standby"}');
      const sales = out
        .split('\n')
        .filter((l) => l.startsWith('{"id":"in_'))
        .map((l) => JSON.parse(l));
      expect(sales.map((x) => x.amount_in_cents)).toEqual([2500, 1500]);
      expect(lists, out).toHaveLength(2);
      const afterFailover = JSON.parse(lists[1]) as Array<{ id: string; amount_in_cents: number }>;
      expect(afterFailover.map((c) => c.id)).toEqual([sales[1].checkout.id, sale.checkout.id]);

      // Nothing left: no port open, no process naming the folder (the PostgreSQL server leaves
      // the shell's process group, so only the block's own pg_ctl stop ends it), no socket.
      for (const port of [8443, 4300, 4301, 4302, 4303, 4242]) expect(await listening(port), `port ${port}`).toBe(false);
      expect(processesNaming(tmp)).toEqual([]);
      const [folder] = readdirSync(tmp);
      expect(existsSync(join(tmp, folder, '.s.PGSQL.5432'))).toBe(false);
      expect(existsSync(join(tmp, folder, 'pg', 'postmaster.pid'))).toBe(false);
    } finally {
      // A failed run may leave the PostgreSQL server (outside the killed process group).
      for (const folder of readdirSync(tmp)) {
        const pidFile = join(tmp, folder, 'pg', 'postmaster.pid');
        if (!existsSync(pidFile)) continue;
        try {
          process.kill(Number(readFileSync(pidFile, 'utf8').split('\n')[0]), 'SIGQUIT');
        } catch {
          // already gone
        }
      }
      rmSync(tmp, { recursive: true, force: true });
    }
  }, 200_000);
});
