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
  posd,
  posdExit,
  removeTempDirs,
  requireBuild,
  startDaemonProcess,
  tempDir,
  type DaemonProcess,
} from '../e2e/processes.js';
import { createPool } from '../../../src/sync/pg/index.js';
import { freePort } from '../../helpers/free-port.js';

/**
 * `posd` commands that write a chain core's SQLite file (docs/central.md, "One log"): the file is a
 * projection of the central log, so a command writes it only through that log. With a daemon on
 * the folder, another core leading, or no PostgreSQL configured, every write is refused with the
 * reason and nothing changes; with every core stopped and the core's configuration given, the
 * command takes the lease, replays the log's tail and appends its writes, which the next core to
 * lead replays.
 */
let cluster: PgCluster;
let pool: pg.Pool;
let pgUrl: string;
const dirs: string[] = [];
const cores: Array<DaemonProcess | undefined> = [undefined, undefined];
let ports: number[];
let organization: string;
let key: string;

const coreConfig = (i: number) => ({
  role: 'central',
  http: { host: '127.0.0.1', port: ports[i], shutdown_grace_ms: 500 },
  sync: { postgres: { url: pgUrl, pool_max: 2 } },
});
const configOf = (i: number) => join(dirs[i], 'test-config.json');

const readyz = (i: number) =>
  request(`http://127.0.0.1:${ports[i]}/readyz`)
    .then((r) => r.body.text().then(() => r.statusCode))
    .catch(() => 0);

const accountNamed = (i: number, name: string) =>
  peek(dirs[i], (db) => db.prepare('SELECT id FROM accounts WHERE name = ?').get(name) as { id: string } | undefined);

beforeAll(async () => {
  requireBuild();
  ports = [await freePort(), await freePort()];
  cluster = await startPgCluster();
  pgUrl = cluster.url();
  pool = createPool({ ...cluster.config(), max: 2 });
  dirs.push(tempDir('posd-cliw-a-'), tempDir('posd-cliw-b-'));
  // Before the first core starts, the folder is no chain core's yet: its first leader's snapshot carries this.
  ({ organizationId: organization, key } = await chainCentralFolder(dirs[0]));
  cores[0] = await startDaemonProcess(dirs[0], coreConfig(0));
  await until('core A leads', async () => (await readyz(0)) === 200, 20_000);
  cores[1] = await startDaemonProcess(dirs[1], coreConfig(1));
  await until('core B replayed the snapshot', () => accountNamed(1, 'Zona 10') !== undefined, 20_000);
}, 120_000);

afterAll(async () => {
  await Promise.all(cores.map((c) => c?.kill('SIGTERM')));
  await killStarted();
  await pool?.end();
  await cluster?.stop();
  removeTempDirs();
}, 60_000);

describe("posd commands on a chain core's folder", () => {
  test('a write is refused, saying why, while a daemon serves the folder, another core leads, or no PostgreSQL is configured', async () => {
    const create = (i: number, name: string, withConfig: boolean) =>
      posdExit([
        'accounts',
        'create',
        '--name',
        name,
        '--organization',
        organization,
        '--json',
        '--data',
        dirs[i],
        ...(withConfig ? ['--config', configOf(i)] : []),
      ]);
    // Core A serves its folder.
    const served = await create(0, 'Antigua', true);
    expect(served.code).toBe(2);
    expect(served.stderr).toMatch(/is a chain core's folder, a projection of the central log in PostgreSQL, and a daemon \(pid \d+\) serves it/);
    expect(served.stderr).toContain('nothing was written');
    // A read still answers.
    expect((await posdExit(['accounts', 'list', '--json', '--data', dirs[0]])).code).toBe(0);

    // A stopped, B leads: A's folder is free but the lease is B's.
    await cores[0]!.kill('SIGTERM');
    cores[0] = undefined;
    await until('core B leads', async () => (await readyz(1)) === 200, 20_000);
    const leads = await create(0, 'Antigua', true);
    expect(leads.code).toBe(2);
    expect(leads.stderr).toContain(`a core leads the chain (http://127.0.0.1:${ports[1]})`);
    const noPg = await create(0, 'Antigua', false);
    expect(noPg.code).toBe(2);
    expect(noPg.stderr).toContain('no sync.postgres.url is configured');
    expect(accountNamed(0, 'Antigua')).toBeUndefined();
    expect(accountNamed(1, 'Antigua')).toBeUndefined();
    // Six posd processes and a failover: well under a minute quiet, more at a load of 25.
  }, 180_000);

  test('with every core stopped a command writes through the log: it replays the tail first, and the next leader replays its writes', async () => {
    // B, leading, makes a product A's file has not seen; then B stops too.
    const made = await request(`http://127.0.0.1:${ports[1]}/api/products`, {
      method: 'POST',
      headers: { 'x-secret-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ product: { name: 'Corte', prices_attributes: [{ amount_in_cents: 1000, currency: 'GTQ' }] } }),
    });
    expect(made.statusCode).toBe(201);
    const product = ((await made.body.json()) as { id: string }).id;
    await cores[1]!.kill('SIGTERM');
    cores[1] = undefined;
    const end = Number((await pool.query('SELECT max(position) AS m FROM central_log')).rows[0].m);

    const out = await posd(['accounts', 'create', '--name', 'Antigua', '--organization', organization, '--json', '--data', dirs[0], '--config', configOf(0)]);
    // A's file replayed B's tail, then its own write went to the log at the next position.
    expect(peek(dirs[0], (db) => db.prepare('SELECT id FROM products WHERE id = ?').get(product))).toEqual({ id: product });
    // (One entry per transaction the command made: the account and its sandbox may be two.)
    const entries = (await pool.query('SELECT position, changes FROM central_log WHERE position > $1 ORDER BY position', [end])).rows;
    const appended = entries.map((e) => Number(e.position));
    expect(appended.length).toBeGreaterThanOrEqual(1);
    expect(appended).toEqual(appended.map((_, i) => end + 1 + i));
    expect(entries.some((e) => e.changes.includes(out.account_id))).toBe(true);
    const mine = end + appended.length;
    expect(peek(dirs[0], (db) => db.prepare('SELECT position FROM central_log_state').get())).toEqual({ position: mine });
    // A key for it, the same way: appended past the account's entries.
    await posd(['keys', 'create', '--account', out.account_id, '--env', 'live', '--json', '--data', dirs[0], '--config', configOf(0)]);
    const keyEntries = (await pool.query('SELECT changes FROM central_log WHERE position > $1', [mine])).rows;
    expect(keyEntries.some((e) => e.changes.includes('"api_keys"') && e.changes.includes(out.account_id))).toBe(true);

    // B, started again, leads and replays both: the account and its key are at the leader.
    cores[1] = await startDaemonProcess(dirs[1], coreConfig(1));
    await until('core B leads again', async () => (await readyz(1)) === 200, 20_000);
    expect(accountNamed(1, 'Antigua')).toEqual({ id: out.account_id });
    expect(peek(dirs[1], (db) => db.prepare('SELECT count(*) AS n FROM api_keys WHERE account_id = ?').get(out.account_id))).toEqual({ n: 1 });
  }, 180_000);
});
