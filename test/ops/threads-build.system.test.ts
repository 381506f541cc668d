import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { Script } from 'node:vm';
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

// The bundle (scripts/bundle.mjs) is one file that looks for the thread programs and the baseline
// beside itself (`new URL('./threads/…', import.meta.url)`): each must be there, as in the sources.
it('the bundle has every thread program and the baseline beside it', () => {
  const sources = new URL('../../src/db/threads/', import.meta.url);
  const programs = readdirSync(sources).filter((f) => f.endsWith('.cjs'));
  expect(programs).toEqual(expect.arrayContaining(['checkpoint.cjs', 'bookkeeping.cjs', 'integrity.cjs', 'open.cjs']));
  for (const f of programs) {
    expect(readFileSync(new URL(`../../dist/posd/threads/${f}`, import.meta.url), 'utf8'), f).toBe(readFileSync(new URL(f, sources), 'utf8'));
  }
  expect(readFileSync(new URL('../../dist/posd/baseline.sql', import.meta.url), 'utf8')).toBe(readFileSync(new URL('../../src/db/baseline.sql', import.meta.url), 'utf8'));
});

// posd.js (scripts/posd-entry.cjs) compiles each chunk and each CommonJS package file a start
// requires with the V8 code cache the build's own run of the daemon made (docs/startup.md). Each
// has one, made for its path and text, and this node accepts it: a cache V8 refused would cost
// nothing but the start time it saves.
it('the files a start loads have a code cache made for their path and text, which this node accepts', () => {
  const posd = fileURLToPath(new URL('../../dist/posd/', import.meta.url));
  expect(readFileSync(join(posd, 'posd.js'), 'utf8')).toBe(readFileSync(new URL('../../scripts/posd-entry.cjs', import.meta.url), 'utf8'));
  const caches = new Set(readdirSync(join(posd, 'code-cache')));
  // Readable by whoever runs the bundle (the build's run made them under posd's umask 0077).
  expect(statSync(join(posd, 'code-cache')).mode & 0o777).toBe(statSync(posd).mode & 0o777);
  for (const c of caches) expect(statSync(join(posd, 'code-cache', c)).mode & 0o777, c).toBe(statSync(join(posd, 'main.js')).mode & 0o666);
  const cacheOf = (file: string) => `${createHash('sha256').update(file).digest('hex').slice(0, 32)}.v8cache`;
  const chunks = readdirSync(posd).filter((f) => f.endsWith('.js') && f !== 'posd.js');
  const cached = chunks.filter((f) => caches.has(cacheOf(join(posd, f))));
  expect(cached).toEqual(expect.arrayContaining(['main.js', expect.stringMatching(/^daemon-.*\.js$/), expect.stringMatching(/^modules-.*\.js$/)]));
  // V8 accepts a cache only under the flags it was made with: the loader's, set here the same way.
  const flags = /v8\.setFlagsFromString\('([^']+)'\)/.exec(readFileSync(join(posd, 'posd.js'), 'utf8'))?.[1];
  expect(flags).toMatch(/^--/);
  setFlagsFromString(flags!);
  const files = [...cached.map((f) => join(posd, f)), createRequire(join(posd, 'main.js')).resolve('better-sqlite3'), createRequire(join(posd, 'main.js')).resolve('pino')];
  for (const file of files) {
    expect(caches.has(cacheOf(file)), file).toBe(true);
    const bytes = readFileSync(file);
    const source = bytes.toString('utf8').replace(/^#!.*/, '');
    const cache = readFileSync(join(posd, 'code-cache', cacheOf(file)));
    expect(cache.subarray(0, 32).equals(createHash('sha256').update(file).update('\0').update(bytes).digest()), file).toBe(true);
    const script = new Script(`(function (exports, require, module, __filename, __dirname) {\n${source}\n})`, { filename: file, lineOffset: -1, cachedData: cache.subarray(32) });
    expect(script.cachedDataRejected, file).toBe(false);
  }
});
