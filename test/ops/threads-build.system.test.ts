import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, expect, it } from 'vitest';

const run = promisify(execFile);
const dist = (path: string) => new URL(`../../dist/src/${path}`, import.meta.url).href;

let dir: string;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// The thread programs are files (src/db/threads/*.cjs) that tsc copies into the build; the other
// tests run them from the sources. Here the built modules start them, in a process of their own
// as `posd serve` would: a thread file missing from dist/ would only show as a logged thread error.
it('the checkpoint and webhook bookkeeping threads run from the build', async () => {
  expect(existsSync(new URL(dist('db/threads/checkpoint.cjs')))).toBe(true);
  dir = mkdtempSync(join(tmpdir(), 'posd-threads-'));
  const file = join(dir, 'posd.db');
  const script = `
    import pino from 'pino';
    import { openDatabase } from ${JSON.stringify(dist('db/database.js'))};
    import { startCheckpointer } from ${JSON.stringify(dist('db/checkpointer.js'))};
    import { ThreadWriter } from ${JSON.stringify(dist('modules/webhooks/writer.js'))};
    const log = pino({ level: 'silent' });
    // The threads are unreferenced (the daemon's server keeps its process alive): this stands in.
    const alive = setInterval(() => {}, 1000);
    const db = openDatabase(${JSON.stringify(file)}, { synchronous: 'NORMAL' });
    const cp = startCheckpointer(db, { file: db.name, intervalMs: 5, synchronous: 'NORMAL', busyTimeoutMs: 1000, log });
    const checkpoint = await new Promise((resolve) => cp.notifier.once('checkpoint', resolve));
    await cp.stop();
    const writer = new ThreadWriter(db.name, 1000, log);
    await writer.write([['advanceCursor', { seq: 7 }]]);
    await writer.close();
    const cursor = db.prepare('SELECT seq FROM webhook_cursor').pluck().get();
    db.close();
    clearInterval(alive);
    process.stdout.write(JSON.stringify({ checkpoint, cursor }));
  `;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: new URL('../..', import.meta.url).pathname });
  const out = JSON.parse(stdout);
  expect(out.checkpoint.walPages).toBeGreaterThan(0);
  expect(out.checkpoint.checkpointedPages).toBe(out.checkpoint.walPages);
  expect(out.cursor).toBe(7);
});

// The bundle (scripts/bundle.mjs) looks for the thread programs and the baseline beside itself
// (`new URL('./threads/…', import.meta.url)` from its chunks): each must be there, as in the sources.
it('the bundle has every thread program and the baseline beside it', () => {
  const sources = new URL('../../src/db/threads/', import.meta.url);
  const programs = readdirSync(sources).filter((f) => f.endsWith('.cjs'));
  expect(programs).toEqual(expect.arrayContaining(['checkpoint.cjs', 'bookkeeping.cjs', 'integrity.cjs', 'open.cjs']));
  for (const f of programs)
    expect(readFileSync(new URL(`../../dist/posd/threads/${f}`, import.meta.url), 'utf8'), f).toBe(readFileSync(new URL(f, sources), 'utf8'));
  expect(readFileSync(new URL('../../dist/posd/baseline.sql', import.meta.url), 'utf8')).toBe(
    readFileSync(new URL('../../src/db/baseline.sql', import.meta.url), 'utf8'),
  );
});
