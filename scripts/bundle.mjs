// `npm run build`, after tsc: bundles the `posd` command (dist/src/posd.js and the packages it
// imports) into dist/posd/, the files `posd` (package.json `bin`), `npm start`, bin/posd, the
// systemd units, the bench and the tests that spawn the daemon run. A plain bundle: rolldown's own
// options, no plugin. It halves a start's CPU and saves ~20 MB of idle RSS beside tsc's output run
// file by file (docs/decisions/0100-plain-start.md).
//
// Kept outside the bundle, loaded from node_modules: native addons (better-sqlite3, serialport) and
// packages that find files beside their own (pino's transport worker and thread-stream, pino-pretty
// run in that worker, pdfkit's fonts). The thread programs (src/db/threads/*.cjs) and baseline.sql
// are copied beside the bundle, where its `new URL('./threads/…', import.meta.url)` and
// `new URL('./baseline.sql', import.meta.url)` look.
import { chmodSync, copyFileSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { build } from 'rolldown';

const OUT = 'dist/posd';
const started = performance.now();
rmSync(OUT, { recursive: true, force: true });
await build({
  // The chain core's projector thread (src/projector-thread.ts) is a second entry, beside posd.js.
  input: {
    posd: 'dist/src/posd.js',
    'projector-thread': 'dist/src/projector-thread.js',
    'log-appender-thread': 'dist/src/sync/central/log-appender-thread.js',
  },
  platform: 'node',
  external: [/\.node$/, 'better-sqlite3', 'serialport', /^@serialport\//, 'pino', 'pino-pretty', 'thread-stream', 'pdfkit'],
  output: {
    dir: OUT,
    format: 'esm',
    // Chunks sit beside the entry (no subfolder): relative URLs resolve from whichever chunk holds them.
    entryFileNames: '[name].js',
    chunkFileNames: '[name]-[hash].js',
    // Whitespace and comments only: names and code are kept as written (stack traces name the same
    // functions); less text for V8 to hold. ASCII only (other characters as escapes; licence
    // comments, one of which is not ASCII, left to the packages' own files): V8 holds an ASCII
    // script as one byte per character, any other as two. Together ~4 MB of idle RSS (0100).
    minify: { compress: false, mangle: false, codegen: { removeWhitespace: true } },
    charset: 'ascii',
    comments: { legal: false },
    // `node --enable-source-maps dist/posd/posd.js` maps stack traces to the sources.
    sourcemap: true,
  },
  onLog(level, log, handler) {
    // A module both imported and import()ed stays in the importer's chunk: harmless, and said once per build.
    if (log.code === 'INEFFECTIVE_DYNAMIC_IMPORT') return;
    handler(level, log);
  },
});
mkdirSync(`${OUT}/threads`);
for (const f of readdirSync('src/db/threads')) if (f.endsWith('.cjs')) copyFileSync(`src/db/threads/${f}`, `${OUT}/threads/${f}`);
copyFileSync('src/db/baseline.sql', `${OUT}/baseline.sql`);
// Run as a command (`npx posd`, node_modules/.bin/posd): its first line is src/posd.ts's `#!`.
chmodSync(`${OUT}/posd.js`, 0o755);
process.stdout.write(`bundled dist/posd/ in ${Math.round(performance.now() - started)} ms\n`);
