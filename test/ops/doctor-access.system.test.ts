import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, chownSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MAIN, runPosd } from '../helpers/process.js';

// Issue 37: "with posd.db unreadable doctor prints 'unexpected error: unable to open database file';
// with a root-owned database every check passes but backups; a store joined with --central-url and a
// clock 10 minutes ahead gets 'no problems found'". Run as root here; the service user is nobody.

const NOBODY = 65534;
let dir: string;
let central: Server | undefined;
/** Folders above node and the program that nobody could not pass through, and their modes before. */
const opened = new Map<string, number>();
afterEach(() => {
  central?.close();
  central = undefined;
  rmSync(dir, { recursive: true, force: true });
  for (const [folder, mode] of opened) chmodSync(folder, mode);
  opened.clear();
});

/**
 * nobody must reach node and the built program: a checkout made under a folder only its owner may
 * enter (`mktemp -d` is 700) would fail the spawn with EACCES before doctor runs. Each such folder
 * above them lets others pass through (search only, not list) until the test ends.
 */
function letNobodyReach(...files: string[]): void {
  for (const file of files) {
    for (let d = dirname(file); d !== dirname(d); d = dirname(d)) {
      const mode = statSync(d).mode & 0o7777;
      if (!(mode & 0o001) && !opened.has(d)) {
        opened.set(d, mode);
        chmodSync(d, mode | 0o001);
      }
    }
  }
}

interface Check {
  name: string;
  ok: boolean;
  detail: string;
  fix?: string;
}

async function doctorAs(uid: number | undefined, args: string[]): Promise<{ code: number | null; checks: Check[]; stderr: string }> {
  if (uid !== undefined) letNobodyReach(process.execPath, MAIN);
  const child = spawn(process.execPath, [MAIN, 'doctor', ...args, '--json'], { uid, gid: uid, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, checks: out ? (JSON.parse(out) as { checks: Check[] }).checks : [], stderr: err };
}

/** An installation whose folder belongs to the service user (nobody), as the package sets it up. */
async function installed(): Promise<string> {
  dir = mkdtempSync(join(tmpdir(), 'posd-doctor-access-'));
  chmodSync(dir, 0o755);
  const data = join(dir, 'data');
  expect((await runPosd(['init', '--data', data, '--json'])).code).toBe(0);
  expect((await runPosd(['backup', '--data', data])).code).toBe(0);
  chmodSync(data, 0o750);
  return data;
}

describe('posd doctor and the database file', () => {
  it('says who cannot read posd.db and what to run, instead of "unexpected error"; flags a root-owned file', async () => {
    const data = await installed();
    // Made by `sudo posd init`: the folder handed to the service user, the files left to root.
    chownSync(data, NOBODY, NOBODY);
    const unreadable = await doctorAs(NOBODY, ['--data', data]);
    expect(unreadable.stderr).not.toMatch(/unexpected error/);
    expect(unreadable.code).toBe(1);
    const file = join(data, 'posd.db');
    expect(unreadable.checks.find((c) => c.name === 'database file')).toEqual({
      name: 'database file',
      ok: false,
      detail: `${file} cannot be read or written by uid ${NOBODY} (owner uid 0, mode 600)`,
      fix: expect.stringContaining(`chown posd:posd ${file}*`),
    });

    // Root runs doctor: it can read the file, and is told the service cannot.
    const asRoot = await doctorAs(undefined, ['--data', data]);
    expect(asRoot.code).toBe(1);
    expect(asRoot.checks.find((c) => c.name === 'database file')).toMatchObject({
      ok: false,
      detail: `${file} is owned by uid 0 (root), not by the data folder's owner (uid ${NOBODY}): the service cannot write it`,
      fix: `chown ${NOBODY}:${NOBODY} ${file}*`,
    });

    chownSync(data, 0, 0);
    expect((await doctorAs(undefined, ['--data', data])).checks.find((c) => c.name === 'database file')).toMatchObject({ ok: true });
  });

  it('compares the clock with the central a store joined with posd init --central-url (no sync.central_url set)', async () => {
    const data = await installed();
    central = createServer((_req, res) => {
      res.sendDate = false;
      res.writeHead(200, { date: new Date(Date.now() - 10 * 60_000).toUTCString() }).end();
    }).listen(0, '127.0.0.1');
    await once(central, 'listening');
    // What joining stores (src/sync/join.ts): the central's address and key in sync_state.
    const db = new Database(join(data, 'posd.db'));
    const url = `http://127.0.0.1:${(central.address() as { port: number }).port}`;
    db.prepare('INSERT OR REPLACE INTO sync_state (key, value) VALUES (?, ?), (?, ?)').run('central_url', url, 'central_key', 'sk_central_joined');
    db.close();
    const r = await doctorAs(undefined, ['--data', data]);
    expect(r.checks.find((c) => c.name === 'clock')).toMatchObject({ ok: false, fix: expect.stringContaining('timedatectl set-ntp true') });
    expect(r.checks.find((c) => c.name === 'clock')?.detail).toMatch(/^(59\d|60\d) s ahead of the central$/);
    expect(r.code).toBe(1);
  });
});
