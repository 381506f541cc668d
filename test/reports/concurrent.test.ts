import { createHash } from 'node:crypto';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { reportWorker } from '../../src/modules/reports/index.js';
import { ReportsStore } from '../../src/modules/reports/store.js';
import { tx } from '../../src/db/database.js';
import { parseCsv, postRows } from './helpers.js';

let s: TestServer;
const sha = (t: string) => createHash('sha256').update(t).digest('hex');
const period = { from_time: '2000-01-01', until_time: '2100-01-01' };

beforeAll(async () => {
  // Small batches: each report takes many steps, so downloads and ledger writes interleave with it.
  s = await startTestServer({ config: { reports: { batch_rows: 20 }, limits: { per_key_per_second: 100000 } } });
  postRows(s.daemon.ctx, s.installation.sandbox_id, 1200);
});
afterAll(() => s.stop());

describe('report download under concurrent generation', () => {
  it('never returns an empty or partial file: 409 until complete, then the whole file', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await s.api('POST', '/report_runs', { body: period })).body.id);
    const seen = { notReady: 0, complete: 0, whileOthersRan: 0 };
    const done = new Set<string>();
    let writes = 0;
    while (done.size < ids.length) {
      // Money keeps moving while reports are written: rows posted now must not tear a file.
      postRows(s.daemon.ctx, s.installation.sandbox_id, 5);
      writes += 5;
      const results = await Promise.all(
        ids.map(async (id) => ({ id, dl: await s.api('GET', `/report_runs/${id}/download`), run: await s.api('GET', `/report_runs/${id}`) })),
      );
      for (const { id, dl, run } of results) {
        if (dl.status === 409) {
          seen.notReady++;
          expect(dl.body.code).toBe('report_not_ready');
          continue;
        }
        expect(dl.status).toBe(200);
        expect(dl.text.length).toBeGreaterThan(0);
        expect(run.body.status).toBe('succeeded');
        expect(sha(dl.text)).toBe(run.body.result.sha256);
        const rows = parseCsv(dl.text);
        expect(rows.length - 1).toBe(run.body.result.row_count);
        expect(rows.length - 1).toBeGreaterThanOrEqual(1200);
        expect(rows.every((r) => r.length === 14)).toBe(true);
        seen.complete++;
        if (done.size < ids.length - 1 && !done.has(id)) seen.whileOthersRan++;
        done.add(id);
      }
    }
    expect(seen.notReady).toBeGreaterThan(0);
    expect(seen.whileOthersRan).toBeGreaterThan(0);
    expect(writes).toBeGreaterThan(0);
    // No temporary file is left behind.
    expect(readdirSync(join(s.dataDir, 'reports')).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('a file damaged outside posd is never served: the run is generated again', async () => {
    const id = (await s.api('POST', '/report_runs', { body: period })).body.id;
    await reportWorker(s.daemon.ctx).idle();
    const good = await s.api('GET', `/report_runs/${id}/download`);
    writeFileSync(join(s.dataDir, 'reports', `${id}.csv`), good.text.slice(0, 100));
    const r = await s.api('GET', `/report_runs/${id}/download`);
    expect(r.status).toBe(409);
    await new Promise((res) => setImmediate(res));
    await reportWorker(s.daemon.ctx).idle();
    const again = await s.api('GET', `/report_runs/${id}/download`);
    expect(again.status).toBe(200);
    const run = (await s.api('GET', `/report_runs/${id}`)).body;
    expect(sha(again.text)).toBe(run.result.sha256);
  });
});

describe('restart', () => {
  it('a run left running by a crashed process is generated again at start', async () => {
    const first = await startTestServer({ config: { reports: { batch_rows: 50 }, http: { port: 0, host: '127.0.0.1', shutdown_grace_ms: 50 } } });
    const dataDir = first.dataDir;
    postRows(first.daemon.ctx, first.installation.sandbox_id, 30);
    const id = (await first.api('POST', '/report_runs', { body: period })).body.id;
    await reportWorker(first.daemon.ctx).idle();
    const expected = (await first.api('GET', `/report_runs/${id}/download`)).text;
    // Make it look like the process died mid-write: status running under another boot, a stray temp file.
    const store = new ReportsStore(first.daemon.ctx.db);
    tx(first.daemon.ctx.db, () => {
      store.requeue(id);
      store.start(id, 'old-boot', new Date().toISOString());
    });
    writeFileSync(join(dataDir, 'reports', `.${id}.csv.old-boot.tmp`), 'Id,Cre');
    const keys = first.installation.keys;
    await first.daemon.stop();

    // The test helper makes fresh installations only: start the daemon on the same data directly.
    const { startDaemon } = await import('../../src/daemon.js');
    const { validateConfig } = await import('../../src/config.js');
    const pino = (await import('pino')).default;
    const daemon = await startDaemon({
      config: validateConfig({ data_dir: dataDir, http: { port: 0, host: '127.0.0.1', shutdown_grace_ms: 50 }, log: { level: 'silent' } }),
      log: pino({ level: 'silent' }),
    });
    try {
      await reportWorker(daemon.ctx).idle();
      const { request } = await import('undici');
      const res = await request(`${daemon.url}/api/report_runs/${id}/download`, { headers: { 'x-secret-key': keys.test } });
      expect(res.statusCode).toBe(200);
      expect(await res.body.text()).toBe(expected);
    } finally {
      await daemon.stop();
      // The first daemon is stopped already (its stop runs once); this removes the data folder.
      await first.stop();
    }
  });
});
