'use strict';
// dist/posd/posd.js, the command (`posd`, `npm start`, bin/posd): runs the bundle (main.js and its
// chunks, CommonJS, beside this file) from V8's code cache when one made for exactly that text is
// beside it. Compiling the bundle's code was the largest single cost of a start left after bundling
// (issue 16, docs/startup.md): with the cache, V8 reads the compiled functions instead of parsing and
// compiling them again.
//
// The caches (`<chunk>.v8cache`) are made by `npm run build` (scripts/bundle.mjs), which starts the
// daemon once on a throw-away folder with POSD_WRITE_CODE_CACHE=1, asks it GET /api/test and stops
// it: the functions a start and a first answer compile are in the cache. Each cache begins with the
// SHA-256 of the chunk's path and text it was made from and is used only for that file at that path
// (V8 keeps the path the cache was made at and would name it in stack traces: a folder copied
// elsewhere after its build starts without the caches, as before them); V8 refuses one made by
// another node version or other V8 flags (`cachedDataRejected`). Either way the chunk is compiled
// as without a cache: a cache can make a start faster, never different. Nothing is written at run time.
//
// The chunks require each other by `./name.js`; those are loaded here (once each, cycles as node
// does: the partial exports), everything else through node's own require from the chunk's file.
const { readFileSync, writeFileSync } = require('node:fs');
const { createHash } = require('node:crypto');
const { dirname, join } = require('node:path');
const { createRequire } = require('node:module');
const vm = require('node:vm');

const WRITE = process.env.POSD_WRITE_CODE_CACHE === '1';
const HASH_BYTES = 32;
const loaded = new Map();
const made = [];

function requireFrom(file) {
  const nodeRequire = createRequire(file);
  const here = dirname(file);
  const req = (id) => (id.startsWith('./') && id.endsWith('.js') ? load(join(here, id)) : nodeRequire(id));
  req.resolve = nodeRequire.resolve;
  req.cache = nodeRequire.cache;
  req.main = nodeRequire.main;
  return req;
}

function cachedDataFor(file, hash) {
  try {
    const cache = readFileSync(`${file}.v8cache`);
    return cache.subarray(0, HASH_BYTES).equals(hash) ? cache.subarray(HASH_BYTES) : undefined;
  } catch {
    return undefined; // none beside it: compiled as usual
  }
}

function load(file) {
  const known = loaded.get(file);
  if (known) return known.exports;
  const module = { exports: {}, id: file, filename: file, loaded: false };
  loaded.set(file, module);
  // A shebang is not valid inside the wrapper: blanked, lines kept.
  const source = readFileSync(file, 'utf8').replace(/^#!.*/, '');
  const hash = createHash('sha256').update(`${file}\0${source}`).digest();
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
    for (const { file, script, hash } of made) writeFileSync(`${file}.v8cache`, Buffer.concat([hash, script.createCachedData()]));
  });
}

load(join(__dirname, 'main.js'));
