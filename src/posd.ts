#!/usr/bin/env node
// The `posd` command (package.json `bin`, `npm start`, bin/posd, the systemd units, and every test and
// bench that spawns the daemon): tsc's output, run by node as it is. Its one addition is node's
// compile cache, enabled before the program's modules load (a static import would load them first):
// V8 reads the compiled code of the ~480 modules a start loads instead of compiling them again.
// Measured in docs/decisions/0100-plain-start.md.
import nodeModule from 'node:module';
import { compileCacheDir } from './system/compile-cache.js';
import { holdYoungGeneration } from './system/young-generation.js';

// An older node (the machine's own, say) would otherwise stop at a missing export or, later, crash in
// better-sqlite3's addon: say what is needed instead.
const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  process.stderr.write(`posd needs Node.js 24 or later; this is node ${process.version} (${process.execPath}). Install Node 24 LTS and run posd with it.\n`);
  process.exit(1);
}
// libuv's thread pool (four threads unless set) runs the WAL's flushes side by side on a slow disk,
// as many as the pool has threads less two (src/db/wal-flush.ts, decision 0299): eight let six run
// and leave two for the rest (DNS lookups, file reads). libuv reads it when the pool starts, at its
// first task, and nothing before this line gives it one. One the operator set is kept.
process.env.UV_THREADPOOL_SIZE ??= '8';
// A cache that cannot be made or written (a read-only install, a full disk) leaves the start as it
// would be without one: node reports FAILED and compiles as usual. Nothing to say about it.
nodeModule.enableCompileCache(compileCacheDir(process.env, import.meta.url));
holdYoungGeneration();
await import('./main.js');
