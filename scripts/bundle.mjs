// `npm run build`, after tsc: bundles the daemon (dist/src/main.js and the packages it imports) into
// dist/posd/, the files `posd`, `npm start` and the tests that spawn the daemon run (issue 16: loading
// ~480 modules one file at a time was most of a start). See docs/startup.md.
//
// Kept outside the bundle, loaded from node_modules as before: native addons (better-sqlite3,
// serialport) and packages that find files beside their own (pino's transport worker and
// thread-stream, pino-pretty run in that worker, pdfkit's fonts). The thread programs
// (src/db/threads/*.cjs) and baseline.sql are copied beside the bundle, where its
// `new URL('./threads/…', import.meta.url)` and `new URL('./baseline.sql', import.meta.url)` look.
import { copyFileSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { build } from 'rolldown';

const OUT = 'dist/posd';
const started = performance.now();
rmSync(OUT, { recursive: true, force: true });
await build({
  input: 'dist/src/main.js',
  platform: 'node',
  external: [/\.node$/, 'better-sqlite3', 'serialport', /^@serialport\//, 'pino', 'pino-pretty', 'thread-stream', 'pdfkit'],
  // Chunks sit beside the entry (no subfolder): relative URLs resolve from whichever chunk holds them.
  output: {
    dir: OUT,
    format: 'esm',
    entryFileNames: 'posd.js',
    chunkFileNames: '[name]-[hash].js',
    // Whitespace and comments only: names and code are kept as written (stack traces name the same
    // functions, `fn.name` is unchanged), and a third less text to read and hold (docs/startup.md).
    // The maps beside the chunks give the source lines with `node --enable-source-maps`.
    minify: { compress: false, mangle: false, codegen: { removeWhitespace: true } },
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
process.stdout.write(`bundled dist/posd/ in ${Math.round(performance.now() - started)} ms\n`);
