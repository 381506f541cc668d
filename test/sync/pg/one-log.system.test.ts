import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type pg from 'pg';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startPgCluster, type PgCluster } from '../../helpers/pg-cluster.js';
import { until } from '../helpers.js';
import {
  chainCentralFolder,
  killStarted,
  peek,
  removeTempDirs,
  requireBuild,
  ROOT,
  startDaemonProcess,
  tempDir,
  type DaemonProcess,
} from '../e2e/processes.js';
import { createPool } from '../../../src/sync/pg/index.js';
import { plainHaproxyConfig } from '../../helpers/haproxy-plain.js';
import { freePort } from '../../helpers/free-port.js';

/**
 * The central's one log (docs/central.md, "One log"), every part its own process: PostgreSQL, two
 * cores behind HAProxy running deploy/haproxy.cfg (ports substituted). The second core starts
 * from an empty data folder: it replays the log as a standby, says `standby` at /readyz, refuses
 * writes naming the leader. Then, under `/api` writes through HAProxy, the leader is SIGKILLed and
 * restarted, then the other: every write acknowledged is in the final leader's file exactly once,
 * and both cores' files hold the same rows.
 */
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let cluster: PgCluster;
let pool: pg.Pool;
let pgUrl: string;
const dirs: string[] = [];
const cores: Array<DaemonProcess | undefined> = [undefined, undefined];
let ports: { lb: number; cores: number[] };
let haproxy: ChildProcess | undefined;
let haproxyLog = '';
let lbUrl: string;
let key: string;

const coreConfig = (i: number) => ({
  role: 'central',
  limits: { per_key_per_second: 100_000 },
  http: { host: '127.0.0.1', port: ports.cores[i], shutdown_grace_ms: 500 },
  sync: { postgres: { url: pgUrl, pool_max: 4 } },
});

async function call(method: 'GET' | 'POST', url: string, body?: unknown, idempotencyKey?: string): Promise<{ status: number; body: any }> {
  const res = await request(url, {
    method,
    headers: { 'x-secret-key': key, ...(body ? { 'content-type': 'application/json' } : {}), ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}) },
    body: body ? JSON.stringify(body) : undefined,
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
  const text = await res.body.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = text;
  }
  return { status: res.statusCode, body: parsed };
}

const readyz = (i: number) =>
  request(`http://127.0.0.1:${ports.cores[i]}/readyz`)
    .then(async (r) => ({ status: r.statusCode, body: await r.body.json().catch(() => undefined) }))
    .catch(() => ({ status: 0, body: undefined }));

async function startCore(i: number): Promise<void> {
  cores[i] = await startDaemonProcess(dirs[i], coreConfig(i));
}

/** deploy/haproxy.cfg with this test's ports: the bind and the two cores (the fronts' lines are left: nothing here syncs). */
function haproxyConfig(): string {
  const src = readFileSync(join(ROOT, 'deploy/haproxy.cfg'), 'utf8');
  const out = plainHaproxyConfig(src, ports.lb)
    .replace(/^(\s*)log \/dev\/log local0$/m, '$1log stdout format raw local0')
    .replace(/server core1 127\.0\.0\.1:4300/, `server core1 127.0.0.1:${ports.cores[0]}`)
    .replace(/server core2 127\.0\.0\.1:4303/, `server core2 127.0.0.1:${ports.cores[1]}`);
  expect(out).toContain(`server core1 127.0.0.1:${ports.cores[0]}`);
  expect(out).toContain(`server core2 127.0.0.1:${ports.cores[1]}`);
  expect(out).toContain('option httpchk GET /readyz');
  return out;
}

beforeAll(async () => {
  requireBuild();
  ports = { lb: await freePort(), cores: [await freePort(), await freePort()] };
  cluster = await startPgCluster();
  pgUrl = cluster.url();
  pool = createPool({ ...cluster.config(), max: 2 });
  dirs.push(tempDir('posd-onelog-a-'), tempDir('posd-onelog-b-'));
  key = (await chainCentralFolder(dirs[0])).key;
  await startCore(0);
  await until('the first core leads', async () => (await readyz(0)).status === 200, 20_000);
  // The second core: an empty data folder, no copy of anything; all it has comes from the log.
  await startCore(1);
  const cfg = join(tempDir('posd-onelog-lb-'), 'haproxy.cfg');
  writeFileSync(cfg, haproxyConfig());
  haproxy = spawn('/usr/sbin/haproxy', ['-db', '-f', cfg], { stdio: ['ignore', 'pipe', 'pipe'] });
  haproxy.stdout!.on('data', (d) => (haproxyLog = (haproxyLog + d).slice(-4000)));
  haproxy.stderr!.on('data', (d) => (haproxyLog = (haproxyLog + d).slice(-4000)));
  lbUrl = `http://127.0.0.1:${ports.lb}`;
  // HAProxy starts with every server up: the standby is taken out by its first /readyz check.
  await until('HAProxy takes the standby out', () => /posd_core\/core2 is DOWN/.test(haproxyLog), 20_000).catch((err: Error) => {
    throw new Error(`${err.message}; haproxy: ${haproxyLog}`);
  });
}, 120_000);

afterAll(async () => {
  if (haproxy && haproxy.exitCode === null) {
    const gone = new Promise((r) => haproxy!.once('exit', r));
    haproxy.kill('SIGKILL');
    await gone;
  }
  await Promise.all(cores.map((c) => c?.kill('SIGTERM')));
  await killStarted();
  await pool?.end();
  await cluster?.stop();
  removeTempDirs();
}, 60_000);

const product = (name: string) => ({ product: { name, prices_attributes: [{ amount_in_cents: 1000, currency: 'GTQ' }] } });

describe('the central on one log', () => {
  test('a standby from an empty folder replays the log, says standby to the load balancer and refuses writes naming the leader', async () => {
    expect(await readyz(0)).toEqual({ status: 200, body: { status: 'leader' } });
    expect(await readyz(1)).toEqual({ status: 503, body: { status: 'standby' } });
    const made = await call('POST', `${lbUrl}/api/products`, product('Corte'));
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    // The standby holds it (its installation, account and key came from the log's snapshot).
    await until('the standby replayed the write', () => peek(dirs[1], (db) => db.prepare('SELECT name FROM products WHERE id = ?').get(made.body.id)), 5000);
    const refused = await call('POST', `http://127.0.0.1:${ports.cores[1]}/api/products`, product('Tinte'));
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({ code: 'central_standby', leader: `http://127.0.0.1:${ports.cores[0]}` });
    // A read is answered by the standby, from the replayed rows (the key authenticates there too).
    expect((await call('GET', `http://127.0.0.1:${ports.cores[1]}/api/products/${made.body.id}`)).status).toBe(200);
    expect(peek(dirs[1], (db) => db.prepare("SELECT count(*) AS n FROM products WHERE name = 'Tinte'").get())).toEqual({ n: 0 });
  }, 30_000);

  test('the leader killed and restarted, then the other, under writes through HAProxy: every acknowledged write once', async () => {
    const acked = new Map<string, string>();
    let stop = false;
    let attempts = 0;
    const writer = async (w: number) => {
      for (let i = 0; !stop; i++) {
        const name = `w${w}-${i}`;
        // Retried with the same Idempotency-Key until answered 2xx: a write whose answer was lost
        // to a kill is answered again, not made twice.
        for (;;) {
          attempts++;
          const r = await call('POST', `${lbUrl}/api/products`, product(name), `idem-${name}`).catch(() => ({ status: 0, body: undefined }));
          if (r.status === 201 || r.status === 200) {
            acked.set(name, (r.body as { id: string }).id);
            break;
          }
          await sleep(50);
        }
      }
    };
    const writers = [0, 1, 2].map(writer);
    const failovers: number[] = [];
    for (const [dead, next] of [
      [0, 1],
      [1, 0],
    ]) {
      await until('writes go on', () => acked.size >= 20 * (failovers.length + 1), 30_000);
      const killedAt = performance.now();
      await cores[dead]!.kill('SIGKILL');
      cores[dead] = undefined;
      await until('the other core leads', async () => (await readyz(next)).status === 200, 20_000);
      failovers.push(performance.now() - killedAt);
      const before = acked.size;
      await until('writes are acknowledged through the new leader', () => acked.size >= before + 10, 20_000);
      await startCore(dead);
      await until('the restarted core is a standby', async () => ((await readyz(dead)).body as { status?: string } | undefined)?.status === 'standby', 20_000);
    }
    const before = acked.size;
    await until('a last few writes', () => acked.size >= before + 10, 20_000);
    stop = true;
    await Promise.all(writers);
    console.log(`one log: ${acked.size} writes acknowledged in ${attempts} attempts; failovers ${failovers.map((ms) => `${Math.round(ms)} ms`).join(', ')}`);
    for (const ms of failovers) expect(ms).toBeLessThan(10_000);

    // The leader's file: every acknowledged write exactly once, with the id it was answered with.
    const leader = (await readyz(0)).status === 200 ? 0 : 1;
    const rows = peek(dirs[leader], (db) => db.prepare("SELECT id, name FROM products WHERE name LIKE 'w%-%'").all() as Array<{ id: string; name: string }>);
    const byName = new Map<string, string[]>();
    for (const r of rows) byName.set(r.name, [...(byName.get(r.name) ?? []), r.id]);
    const lost = [...acked].filter(([name]) => !byName.has(name));
    const doubled = [...byName].filter(([, ids]) => ids.length > 1);
    const wrong = [...acked].filter(([name, id]) => byName.get(name)?.[0] !== id);
    expect({ lost, doubled, wrong }).toEqual({ lost: [], doubled: [], wrong: [] });
    // Nothing the writers never saw acknowledged beyond the attempts in flight at the kills.
    expect(rows.length - acked.size).toBeLessThanOrEqual(3);

    // The standby catches up to the same rows, table for table.
    const standby = 1 - leader;
    const digest = (dir: string) =>
      peek(dir, (db) =>
        ['products', 'prices', 'api_keys', 'accounts', 'organizations', 'idempotency_keys']
          .filter((t) => db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(t))
          .map((t) => `${t}:${JSON.stringify(db.prepare(`SELECT * FROM "${t}" ORDER BY rowid`).all())}`)
          .join('\n'),
      );
    await until("the standby holds the leader's rows", () => digest(dirs[standby]) === digest(dirs[leader]), 10_000);
  }, 180_000);
});
