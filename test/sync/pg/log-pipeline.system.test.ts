import type pg from 'pg';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startPgCluster, type PgCluster } from '../../helpers/pg-cluster.js';
import { until } from '../helpers.js';
import { chainCentralFolder, killStarted, peek, removeTempDirs, requireBuild, startDaemonProcess, tempDir, type DaemonProcess } from '../e2e/processes.js';
import { createPool } from '../../../src/sync/pg/index.js';
import { freePort } from '../../helpers/free-port.js';

/**
 * The leading core's group commit of the central's log (docs/central.md, "One log"), with real
 * PostgreSQL and real processes: a transaction commits to SQLite with its entry kept in the file,
 * the appender sends it after. Appends are held back by locking the lease row the append reads
 * FOR SHARE (what a slow PostgreSQL does), so the file holds entries not appended: an `/api`
 * answer waits for its entry; a leader SIGKILLed with entries not appended either restarts alone
 * and appends them, or finds that a standby took over and wrote first, and undoes them.
 */
let cluster: PgCluster;
let pool: pg.Pool;
let pgUrl: string;
let key: string;
const dirs: string[] = [];
const cores: Array<DaemonProcess | undefined> = [undefined, undefined];
const ports: number[] = [];

const coreConfig = (i: number) => ({
  role: 'central',
  limits: { per_key_per_second: 100_000 },
  http: { host: '127.0.0.1', port: ports[i], shutdown_grace_ms: 500 },
  // The second core runs its projector and its appender on threads of their own: the tests that
  // find it leading (the takeover's write, the fence) go through the appender's thread.
  sync: { postgres: { url: pgUrl, pool_max: 4, projector_thread: i === 1 } },
});

const startCore = async (i: number) => {
  cores[i] = await startDaemonProcess(dirs[i], coreConfig(i));
};

const readyz = (i: number) =>
  request(`http://127.0.0.1:${ports[i]}/readyz`)
    .then(async (r) => ({ status: r.statusCode, body: (await r.body.json().catch(() => undefined)) as { status?: string } | undefined }))
    .catch(() => ({ status: 0, body: undefined }));

/** A product made at core `i`; the promise settles with the answer (or the connection's end). */
function makeProduct(i: number, name: string): { answer: Promise<{ status: number; body: any }>; answered: () => boolean } {
  let done = false;
  const answer = request(`http://127.0.0.1:${ports[i]}/api/products`, {
    method: 'POST',
    headers: { 'x-secret-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ product: { name, prices_attributes: [{ amount_in_cents: 1000, currency: 'GTQ' }] } }),
    headersTimeout: 30_000,
    bodyTimeout: 30_000,
  })
    .then(async (r) => ({ status: r.statusCode, body: await r.body.json().catch(() => undefined) }))
    .catch(() => ({ status: 0, body: undefined }))
    .finally(() => {
      done = true;
    });
  return { answer, answered: () => done };
}

/** Holds every append (and every takeover's epoch move) until released: the lease row locked FOR UPDATE. */
async function holdAppends(): Promise<() => Promise<void>> {
  const client = await pool.connect();
  await client.query('BEGIN');
  await client.query('SELECT 1 FROM central_lease WHERE id = 1 FOR UPDATE');
  return async () => {
    await client.query('ROLLBACK');
    client.release();
  };
}

/** The appends a killed core left waiting on the lock: ended, so they never land after it. */
async function endOrphanedAppends(): Promise<void> {
  await pool.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND wait_event_type = 'Lock'");
}

const productsNamed = (dir: string, name: string) => peek(dir, (db) => db.prepare('SELECT id FROM products WHERE name = ?').all(name) as Array<{ id: string }>);
const pending = (dir: string) =>
  peek(dir, (db) => db.prepare('SELECT position, id FROM central_log_pending ORDER BY position').all() as Array<{ position: number; id: string }>);
const inLog = async (text: string) => Number((await pool.query('SELECT count(*) AS n FROM central_log WHERE changes LIKE $1', [`%${text}%`])).rows[0].n);

/** Every table of a core's file but its own place in the log, row for row. */
const digest = (dir: string) =>
  peek(dir, (db) =>
    (
      db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'central_log_%' ORDER BY name")
        .pluck()
        .all() as string[]
    )
      .map((t) => `${t}:${JSON.stringify(db.prepare(`SELECT * FROM "${t}" ORDER BY 1`).all())}`)
      .join('\n'),
  );

beforeAll(async () => {
  requireBuild();
  ports.push(await freePort(), await freePort());
  cluster = await startPgCluster();
  pgUrl = cluster.url();
  pool = createPool({ ...cluster.config(), max: 3 });
  dirs.push(tempDir('posd-pipeline-a-'), tempDir('posd-pipeline-b-'));
  key = (await chainCentralFolder(dirs[0])).key;
  await startCore(0);
  await until('the first core leads', async () => (await readyz(0)).status === 200, 20_000);
}, 120_000);

afterAll(async () => {
  await Promise.all(cores.map((c) => c?.kill('SIGTERM')));
  await killStarted();
  await pool?.end();
  await cluster?.stop();
  removeTempDirs();
}, 60_000);

describe('the leading core appends its log after the commit, and acknowledges nothing the log does not hold', () => {
  test('an /api write commits at once, is answered only once its entry is in central_log; killed before that, the core restarts alone and appends it', async () => {
    let release = await holdAppends();
    const first = makeProduct(0, 'Held-1');
    // Committed in the file, its entry kept there, and not answered: the log does not hold it.
    await until('the write committed with its entry not appended', () => productsNamed(dirs[0], 'Held-1').length === 1 && pending(dirs[0]).length > 0, 10_000);
    expect(await inLog('Held-1')).toBe(0);
    expect(first.answered()).toBe(false);
    await release();
    const answer = await first.answer;
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    // The answer came after the append: the log holds it now.
    expect(await inLog(answer.body.id)).toBeGreaterThan(0);

    release = await holdAppends();
    const second = makeProduct(0, 'Held-2');
    await until('the second write committed, not appended', () => productsNamed(dirs[0], 'Held-2').length === 1 && pending(dirs[0]).length > 0, 10_000);
    const left = pending(dirs[0]).at(-1)!;
    expect(second.answered()).toBe(false);
    await cores[0]!.kill('SIGKILL');
    cores[0] = undefined;
    await endOrphanedAppends();
    await release();
    expect((await second.answer).status).toBe(0);
    expect(await inLog('Held-2')).toBe(0);
    expect(Number((await pool.query('SELECT count(*) AS n FROM central_log WHERE position >= $1', [left.position])).rows[0].n)).toBe(0);

    // Restarted alone: it takes the lease and appends what its file held past the log's end.
    await startCore(0);
    await until('the restarted core leads', async () => (await readyz(0)).status === 200, 20_000);
    const row = (await pool.query('SELECT position, id FROM central_log WHERE id = $1', [left.id])).rows[0];
    expect(row && Number(row.position)).toBe(left.position);
    expect(await inLog('Held-2')).toBe(1);
    expect(productsNamed(dirs[0], 'Held-2')).toHaveLength(1);
  }, 90_000);

  test('killed with entries not appended while a standby takes over and writes first: the old leader undoes them and ends equal to the new leader', async () => {
    await startCore(1);
    await until('the second core is a standby', async () => (await readyz(1)).body?.status === 'standby', 20_000);
    await until('the standby replayed the log', () => productsNamed(dirs[1], 'Held-2').length === 1, 20_000);

    const release = await holdAppends();
    const lost = makeProduct(0, 'Unappended');
    await until(
      'the write committed at the old leader, not appended',
      () => productsNamed(dirs[0], 'Unappended').length === 1 && pending(dirs[0]).length > 0,
      10_000,
    );
    const tail = pending(dirs[0]).at(-1)!;
    expect(lost.answered()).toBe(false);
    await cores[0]!.kill('SIGKILL');
    cores[0] = undefined;
    await endOrphanedAppends();
    await release();
    expect((await lost.answer).status).toBe(0);

    // The standby takes over and writes at the position the old leader had kept.
    await until('the standby leads', async () => (await readyz(1)).status === 200, 20_000);
    const made = await makeProduct(1, 'New-leader').answer;
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const there = (await pool.query('SELECT id FROM central_log WHERE position = $1', [tail.position])).rows[0];
    expect(there).toBeDefined();
    expect(there.id).not.toBe(tail.id);

    // The old leader restarts: another entry at its position, so its tail is undone and the log replayed.
    await startCore(0);
    await until('the old leader is a standby', async () => (await readyz(0)).body?.status === 'standby', 20_000);
    await until(
      "the old leader holds the new leader's write and not its own unacknowledged one",
      () => {
        return productsNamed(dirs[0], 'New-leader').length === 1 && productsNamed(dirs[0], 'Unappended').length === 0;
      },
      20_000,
    );
    expect(pending(dirs[0])).toEqual([]);
    expect(await inLog('Unappended')).toBe(0);
    await until("the old leader's file equals the new leader's, table for table", () => digest(dirs[0]) === digest(dirs[1]), 20_000).catch(() => {
      const [a, b] = [digest(dirs[0]).split('\n'), digest(dirs[1]).split('\n')];
      const differ = a.filter((line, i) => line !== b[i]).map((line) => line.slice(0, 300));
      throw new Error(`tables differ: ${differ.join('\n')}`);
    });
  }, 90_000);

  test('a leader whose append finds the epoch moved and another entry at its position refuses the write, steps down and undoes it', async () => {
    const leader = (await readyz(0)).status === 200 ? 0 : 1;
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SELECT 1 FROM central_lease WHERE id = 1 FOR UPDATE');
      const fenced = makeProduct(leader, 'Fenced');
      await until(
        'the write committed at the leader, not appended',
        () => productsNamed(dirs[leader], 'Fenced').length === 1 && pending(dirs[leader]).length > 0,
        10_000,
      );
      const tail = pending(dirs[leader]).at(-1)!;
      // Another core (this test) moves the epoch and writes the log at that position first.
      await client.query('UPDATE central_lease SET epoch = epoch + 1 WHERE id = 1');
      await client.query(
        "INSERT INTO central_log (position, epoch, id, changes, count) SELECT $1, epoch, 'another-core', '[]', 0 FROM central_lease WHERE id = 1",
        [pending(dirs[leader])[0].position],
      );
      await client.query('COMMIT');
      const answer = await fenced.answer;
      expect(answer.status, JSON.stringify(answer.body)).toBe(503);
      expect(answer.body.code).toBe('central_standby');
      expect(Number((await pool.query('SELECT count(*) AS n FROM central_log WHERE id = $1', [tail.id])).rows[0].n)).toBe(0);
    } finally {
      client.release();
    }
    await until(
      'the fenced core undid its write and holds no entry the log lacks',
      () => productsNamed(dirs[leader], 'Fenced').length === 0 && pending(dirs[leader]).length === 0,
      20_000,
    );
    // Some core leads again and writes; both files end equal.
    await until('a core leads again', async () => (await readyz(0)).status === 200 || (await readyz(1)).status === 200, 20_000);
    const next = (await readyz(0)).status === 200 ? 0 : 1;
    const made = await makeProduct(next, 'After-fence').answer;
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    await until(
      'both files hold the write made after the fence',
      () => productsNamed(dirs[0], 'After-fence').length === 1 && productsNamed(dirs[1], 'After-fence').length === 1,
      20_000,
    );
    await until('both files equal, table for table', () => digest(dirs[0]) === digest(dirs[1]), 20_000);
  }, 90_000);
});
