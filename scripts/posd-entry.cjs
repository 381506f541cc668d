'use strict';
// dist/posd/posd.js, the command (`posd`, `npm start`, bin/posd): runs the bundle (main.js and its
// chunks, CommonJS, beside this file) and the CommonJS packages it requires (better-sqlite3, pino and
// theirs) from V8's code cache when one was made for exactly that file. Compiling that code was the
// largest single cost of a start left after bundling (issue 16, docs/startup.md): with the cache, V8
// reads the compiled functions instead of parsing and compiling them again.
//
// The caches (`code-cache/<hash of the file's path>.v8cache`) are made by `npm run build`
// (scripts/bundle.mjs), which starts the daemon once on a throw-away folder with
// POSD_WRITE_CODE_CACHE=1, asks it GET /api/test and stops it: the functions a start and a first
// answer compile are in the cache. Each cache begins with the SHA-256 of the file's path and text it
// was made from and is used only for that file at that path (V8 keeps the path the cache was made at
// and would name it in stack traces: a folder moved after its build starts without the caches, as
// before them); V8 refuses one made by another node version or other V8 flags
// (`cachedDataRejected`). Either way the file is compiled as without a cache: a cache can make a
// start faster, never different. Nothing is written at run time.
//
// Loaded here, once each (cycles as node does: the partial exports): the chunks (`./name.js`) and
// the package files that have a cache (at the build: every CommonJS .js/.cjs file the bundle's
// requires reach). Everything else (node's own modules, JSON, native addons, the packages without a
// cache) goes through node's own require from the requiring file. Under --enable-source-maps node's
// require loads everything, as it would without this file.
const { chmodSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } = require('node:fs');
const { createHash } = require('node:crypto');
const { dirname, join } = require('node:path');
const { builtinModules, createRequire } = require('node:module');
const vm = require('node:vm');
const v8 = require('node:v8');

// A start allocates ~30 MB of short-lived objects (schemas, routes, the modules' top levels) into a
// young generation that V8 begins at 1 MB and only doubles after each scavenge: ~8 scavenges and an
// early full collection, ~60 ms of a 0.6 s start (issue 16, docs/startup.md). Growing it 8-fold
// instead reaches its usual ceiling (16 MB) after two: ~20 ms. Set before any chunk is compiled, in
// this same place for the build's cache-making run, because V8 accepts a code cache only from a
// process with the same flags (a process started with other V8 flags compiles as without a cache).
v8.setFlagsFromString('--semi-space-growth-factor=8');

const WRITE = process.env.POSD_WRITE_CODE_CACHE === '1';
const CACHES = join(__dirname, 'code-cache');
const HASH_BYTES = 32;
const BUILTIN = new Set(builtinModules);
const loaded = new Map();
const made = [];
/** The cache files there are: one readdir, not a failed open per file without one; none readable, none. */
const caches = new Set(WRITE ? [] : cacheFiles());

function cacheFiles() {
  try {
    return readdirSync(CACHES);
  } catch {
    return [];
  }
}

const cacheName = (file) => `${createHash('sha256').update(file).digest('hex').slice(0, 32)}.v8cache`;

/** At the build's run: whether node would load this file as CommonJS (.cjs, or .js outside a "type": "module" package). */
function commonJs(file) {
  if (file.endsWith('.cjs')) return true;
  if (!file.endsWith('.js')) return false;
  for (let dir = dirname(file); dir !== dirname(dir); dir = dirname(dir)) {
    let pkg;
    try {
      pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    } catch {
      continue;
    }
    return pkg.type !== 'module';
  }
  return true;
}

/**
 * Where each package `require` of the last build's run led (`<requiring folder>\0<id>` to a file):
 * node's resolution walks node_modules and reads package.json `exports` for each, ~15 ms of a start
 * (issue 16). Used only while the packages are as they were at that run: npm rewrites
 * node_modules/.package-lock.json on every install, and its size and time are the stamp; no stamp
 * (another installer, a moved folder), no map, node resolves as before.
 */
const RESOLVED = join(CACHES, 'resolved.json');
const resolvedAtBuild = WRITE ? new Map() : readResolved();

function installStamp() {
  for (let dir = __dirname; dir !== dirname(dir); dir = dirname(dir)) {
    try {
      const st = statSync(join(dir, 'node_modules', '.package-lock.json'));
      return `${join(dir, 'node_modules')} ${st.size} ${st.mtimeMs}`;
    } catch {}
  }
  return undefined;
}

function readResolved() {
  try {
    const { stamp, files } = JSON.parse(readFileSync(RESOLVED, 'utf8'));
    return stamp !== undefined && stamp === installStamp() ? new Map(Object.entries(files)) : new Map();
  } catch {
    return new Map();
  }
}

function resolveFrom(nodeRequire, here, id) {
  const key = `${here}\0${id}`;
  let path = resolvedAtBuild.get(key);
  if (path === undefined) {
    path = nodeRequire.resolve(id);
    if (WRITE) resolvedAtBuild.set(key, path);
  }
  return path;
}

/**
 * node's own modules that the bundle and its packages require at their top level for paths a start
 * never takes: a child process, a prompt, a DNS lookup, a worker, an assertion that fails, the
 * promise file API, and https, http2 and tls (fastify's server for options posd does not pass, ws's
 * client side). Each is handed over as a stand-in that requires it at its first use (issue 16,
 * docs/startup.md). `assert` is also called as a function. A package that destructures one at its
 * load (pino's `isMainThread`) loads it then, as before; so does zlib, which prom-client's
 * pushgateway destructures, and is left out for that.
 */
const LAZY_BUILTINS = new Set(['assert', 'child_process', 'cluster', 'dgram', 'dns', 'fs/promises', 'http2', 'https', 'readline', 'tls', 'worker_threads']);
const lazyModules = new Map();

function lazyBuiltin(id) {
  id = id.replace(/^node:/, '');
  let proxy = lazyModules.get(id);
  if (proxy) return proxy;
  let real;
  const module = () => (real ??= require(id));
  const passes = id === 'assert';
  // An arrow function as the target: callable (assert), and no own property a trap must keep.
  proxy = new Proxy(() => undefined, {
    get: (_, key) => module()[key],
    set: (_, key, value) => Reflect.set(module(), key, value),
    has: (_, key) => key in module(),
    // `assert(value, message)` with a truthy value does nothing: find-my-way asserts each route's
    // arguments, and node's assert is needed only for one that fails.
    apply: (_, self, args) => (passes && args[0] ? undefined : Reflect.apply(module(), self, args)),
    ownKeys: () => Reflect.ownKeys(module()),
    getOwnPropertyDescriptor: (_, key) => {
      const d = Reflect.getOwnPropertyDescriptor(module(), key);
      return d && { ...d, configurable: true };
    },
    getPrototypeOf: () => Reflect.getPrototypeOf(module()),
  });
  lazyModules.set(id, proxy);
  return proxy;
}

function requireFrom(file) {
  const nodeRequire = createRequire(file);
  const here = dirname(file);
  const req = (id) => {
    if (id.startsWith('./') && id.endsWith('.js') && here === __dirname) return load(join(here, id));
    if (BUILTIN.has(id) || id.startsWith('node:')) return LAZY_BUILTINS.has(id.replace(/^node:/, '')) ? lazyBuiltin(id) : nodeRequire(id);
    const path = resolveFrom(nodeRequire, here, id);
    return (WRITE ? commonJs(path) : caches.has(cacheName(path))) ? load(path) : nodeRequire(path);
  };
  req.resolve = nodeRequire.resolve;
  req.cache = nodeRequire.cache;
  req.main = nodeRequire.main;
  return req;
}

function cachedDataFor(file, hash) {
  const name = cacheName(file);
  if (!caches.has(name)) return undefined; // none made for it: compiled as usual
  try {
    const cache = readFileSync(join(CACHES, name));
    return cache.subarray(0, HASH_BYTES).equals(hash) ? cache.subarray(HASH_BYTES) : undefined;
  } catch {
    return undefined;
  }
}

function load(file) {
  const known = loaded.get(file);
  if (known) return known.exports;
  const module = { exports: {}, id: file, filename: file, loaded: false };
  loaded.set(file, module);
  // Hashed as read (bytes, not the decoded text: no second encoding of a megabyte of text).
  const bytes = readFileSync(file);
  const hash = createHash('sha256').update(file).update('\0').update(bytes).digest();
  // A shebang is not valid inside the wrapper: blanked, lines kept.
  const source = bytes.toString('utf8').replace(/^#!.*/, '');
  // The wrapper's first line is taken back by lineOffset: lines and columns in stack traces are the file's.
  const script = new vm.Script(`(function (exports, require, module, __filename, __dirname) {\n${source}\n})`, {
    filename: file,
    lineOffset: -1,
    cachedData: WRITE ? undefined : cachedDataFor(file, hash),
    importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
  if (WRITE) made.push({ file, script, hash });
  script.runInThisContext()(module.exports, requireFrom(file), module, file, dirname(file));
  module.loaded = true;
  return module.exports;
}

if (WRITE) {
  // At exit: the cache then holds every function the run compiled, not only the top level.
  process.on('exit', () => {
    // Readable by whoever can read the bundle (the service's user), whatever umask posd runs under
    // (0077, src/main.ts): the folder and files take the bundle folder's and main.js's modes.
    mkdirSync(CACHES, { recursive: true });
    chmodSync(CACHES, statSync(__dirname).mode & 0o777);
    const mode = statSync(join(__dirname, 'main.js')).mode & 0o666;
    const stamp = installStamp();
    if (stamp !== undefined) {
      writeFileSync(RESOLVED, JSON.stringify({ stamp, files: Object.fromEntries(resolvedAtBuild) }));
      chmodSync(RESOLVED, mode);
    }
    for (const { file, script, hash } of made) {
      const cache = join(CACHES, cacheName(file));
      writeFileSync(cache, Buffer.concat([hash, script.createCachedData()]));
      chmodSync(cache, mode);
    }
  });
}

// `node --enable-source-maps dist/posd/posd.js`: node maps stack traces only for the files its own
// loader compiles, so the bundle is left to it (no code cache; the maps beside the chunks apply).
if (process.sourceMapsEnabled && !WRITE) require('./main.js');
else load(join(__dirname, 'main.js'));
