// `npm run build`, after tsc: bundles the daemon (dist/src/main.js and the packages it imports) into
// dist/posd/, the files `posd`, `npm start` and the tests that spawn the daemon run (issue 16: loading
// ~480 modules one file at a time was most of a start). See docs/startup.md.
//
// Kept outside the bundle, loaded from node_modules as before: native addons (better-sqlite3,
// serialport) and packages that find files beside their own (pino's transport worker and
// thread-stream, pino-pretty run in that worker, pdfkit's fonts). The thread programs
// (src/db/threads/*.cjs) and baseline.sql are copied beside the bundle, where its
// `new URL('./threads/…', import.meta.url)` and `new URL('./baseline.sql', import.meta.url)` look.
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'rolldown';

// An other folder as argument (a copy to measure beside this one); `npm run build` makes dist/posd.
const OUT = process.argv[2] ?? 'dist/posd';
const started = performance.now();
rmSync(OUT, { recursive: true, force: true });
await build({
  input: 'dist/src/main.js',
  platform: 'node',
  external: [/\.node$/, 'better-sqlite3', 'serialport', /^@serialport\//, 'pino', 'pino-pretty', 'thread-stream', 'pdfkit'],
  // Chunks sit beside the entry (no subfolder): relative URLs resolve from whichever chunk holds them.
  // CommonJS, so that posd.js (scripts/posd-entry.cjs) can compile each chunk with V8's code cache
  // (vm.Script; node 20 has no code cache for ES modules); dist/posd/package.json says so.
  output: {
    dir: OUT,
    format: 'cjs',
    entryFileNames: 'main.js',
    chunkFileNames: '[name]-[hash].js',
    // Whitespace and comments only: names and code are kept as written (stack traces name the same
    // functions, `fn.name` is unchanged), and a third less text to read and hold (docs/startup.md).
    // The maps beside the chunks give the source lines with `node --enable-source-maps`.
    minify: { compress: false, mangle: false, codegen: { removeWhitespace: true } },
    // Non-ASCII characters in literals written as escapes: a chunk of ASCII text only is held by V8 as
    // one byte per character and decoded by a copy; one `é` anywhere made the whole megabyte a
    // two-byte string, decoded from UTF-8 at every start (issue 16, docs/startup.md).
    charset: 'ascii',
    sourcemap: true,
  },
  plugins: [findMyWayPrefixMatch(), findMyWayParamsObject(), asciiOnly()],
  onLog(level, log, handler) {
    // A module both imported and import()ed stays in the importer's chunk: harmless, and said once per build.
    if (log.code === 'INEFFECTIVE_DYNAMIC_IMPORT') return;
    handler(level, log);
  },
});
mkdirSync(`${OUT}/threads`);
for (const f of readdirSync('src/db/threads')) if (f.endsWith('.cjs')) copyFileSync(`src/db/threads/${f}`, `${OUT}/threads/${f}`);
copyFileSync('src/db/baseline.sql', `${OUT}/baseline.sql`);
writeFileSync(`${OUT}/package.json`, `${JSON.stringify({ type: 'commonjs' })}\n`);
copyFileSync('scripts/posd-entry.cjs', `${OUT}/posd.js`);
await makeCodeCache();
process.stdout.write(`bundled dist/posd/ in ${Math.round(performance.now() - started)} ms\n`);

// What `charset: 'ascii'` leaves: legal comments (a package's licence line, opened with slash star
// bang) are copied as written, and one (formdata-polyfill's author) is not ASCII. Its characters are
// written as \u escapes in the comment's text, so every chunk is ASCII; any other character outside
// ASCII fails the build (that chunk would be a two-byte string again, and nothing would say so).
function asciiOnly() {
  const nonAscii = /[^\x00-\x7f]/;
  const escape = (text) => text.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return {
    name: 'ascii-only',
    generateBundle(_options, bundle) {
      for (const file of Object.values(bundle)) {
        if (file.type !== 'chunk' || !nonAscii.test(file.code)) continue;
        file.code = file.code.replace(/\/\*![\s\S]*?\*\//g, escape);
        const left = file.code.search(nonAscii);
        if (left >= 0) throw new Error(`${file.fileName}: a character outside ASCII is left after charset 'ascii', at ${JSON.stringify(file.code.slice(Math.max(0, left - 40), left + 20))}`);
      }
    },
  };
}

/**
 * find-my-way also compiles a `new Function` per route (static ones too) that builds its params
 * object: ~10 ms of a start for ~250 routes (issue 16). In the bundle it is one closure over the
 * route's parameter names: the same object (a NullObject with the names in order, the first four
 * values from the arguments, the rest from extraParams) with no code made per route.
 */
function findMyWayParamsObject() {
  const start = '  _compileCreateParamsObject (params) {\n';
  const end = "    return new Function('NullObject', fnBody.join('\\n'))(NullObject)  // eslint-disable-line\n  }\n";
  return {
    name: 'find-my-way-params-object',
    transform(code, id) {
      if (!id.replaceAll('\\', '/').endsWith('/node_modules/find-my-way/lib/handler-storage.js')) return null;
      const from = code.indexOf(start);
      const to = code.indexOf(end, from);
      if (from < 0 || to < 0 || code.indexOf(start, from + 1) >= 0) throw new Error('find-my-way/lib/handler-storage.js: _compileCreateParamsObject is not the one scripts/bundle.mjs replaces; check it and update the pattern');
      const old = code.slice(from, to + end.length);
      const closure = [
        start.trimEnd(),
        '    const names = params.slice()',
        '    return function _createParamsObject (param0, param1, param2, param3, extraParams) {',
        '      const out = new NullObject()',
        '      for (let i = 0; i < names.length; i++) out[names[i]] = i === 0 ? param0 : i === 1 ? param1 : i === 2 ? param2 : i === 3 ? param3 : extraParams[i - 4]',
        '      return out',
        '    }',
        '  }',
      ].join('\n');
      // Lines kept (blank ones for the removed), so the source map of the rest stays true.
      const pad = '\n'.repeat(old.split('\n').length - closure.split('\n').length);
      return { code: code.slice(0, from) + closure + pad + code.slice(to + end.length), map: null };
    },
  };
}

/**
 * find-my-way (fastify's router) compiles a `new Function` for every static path segment it stores
 * (a chain of charCodeAt comparisons), about 5 % of a start for posd's ~500 routes with their HEAD
 * twins (issue 16, docs/startup.md). In the bundle the chain is `path.startsWith(prefix, i)`: the
 * same answer (the caller has matched the first char; a shorter path fails both) with no code made
 * per segment. A find-my-way whose code no longer reads as expected fails the build, not the router.
 */
function findMyWayPrefixMatch() {
  const generated =
    /  const lines = \[\]\n  for \(let i = 1; i < prefix\.length; i\+\+\) \{\n    const charCode = prefix\.charCodeAt\(i\)\n    lines\.push\(`path\.charCodeAt\(i \+ \$\{i\}\) === \$\{charCode\}`\)\n  \}\n  return new Function\([^\n]*\n/;
  return {
    name: 'find-my-way-prefix-match',
    transform(code, id) {
      if (!id.replaceAll('\\', '/').endsWith('/node_modules/find-my-way/lib/node.js')) return null;
      if (!generated.test(code)) throw new Error('find-my-way/lib/node.js: compilePrefixMatch is not the one scripts/bundle.mjs replaces; check it and update the pattern');
      // Lines kept (blank ones for the removed), so the source map of the rest stays true.
      return { code: code.replace(generated, (m) => `  return function matchPrefix (path, i) { return path.startsWith(prefix, i) }${'\n'.repeat(m.split('\n').length - 1)}`), map: null };
    },
  };
}

/**
 * Starts the bundled daemon once on a throw-away data folder with POSD_WRITE_CODE_CACHE=1, asks it
 * GET /api/test and stops it: at its exit posd.js writes each chunk's V8 code cache beside it
 * (`<chunk>.v8cache`, read by later starts; scripts/posd-entry.cjs). A start that fails fails the build.
 */
async function makeCodeCache() {
  const dir = mkdtempSync(join(tmpdir(), 'posd-code-cache-'));
  try {
    const child = spawn(process.execPath, [`${OUT}/posd.js`, 'serve', '--data', join(dir, 'data'), '--port', '0'], {
      // No POSD_* setting of the building shell (a central's URL, a port) reaches this run.
      env: { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('POSD_'))), POSD_WRITE_CODE_CACHE: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    let text = '';
    const [, api, key] = await new Promise((resolve, reject) => {
      const on = (d) => {
        text += d;
        const m = /API\s+(http:\/\/127\.0\.0\.1:\d+\/api)[\s\S]*test key\s+(sk_test_\w+)/.exec(text);
        if (m && /posd listening/.test(text)) resolve(m);
      };
      child.stdout.on('data', on);
      child.stderr.on('data', on);
      exited.then(() => reject(new Error(`the daemon run for the code cache exited:\n${text}`)));
    });
    const status = await new Promise((resolve, reject) => {
      request(`${api}/test`, { headers: { 'x-secret-key': key } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
      })
        .on('error', reject)
        .end();
    });
    if (status !== 200) throw new Error(`GET /api/test answered ${status} in the daemon run for the code cache`);
    child.kill('SIGTERM');
    const code = await exited;
    if (code !== 0) throw new Error(`the daemon run for the code cache stopped with ${code}:\n${text}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
