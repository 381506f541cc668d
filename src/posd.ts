#!/usr/bin/env node
// The `posd` command (package.json `bin`, `npm start`, bin/posd, the systemd units, and every test and
// bench that spawns the daemon): tsc's output, run by node as it is. Its one addition is node's
// compile cache, enabled before the program's modules load (a static import would load them first):
// V8 reads the compiled code of the ~480 modules a start loads instead of compiling them again.
// Measured in docs/decisions/0100-plain-start.md.
import { enableCompileCache } from 'node:module';
import { compileCacheDir } from './system/compile-cache.js';

// A cache that cannot be made or written (a read-only install, a full disk) leaves the start as it
// would be without one: node reports FAILED and compiles as usual. Nothing to say about it.
enableCompileCache(compileCacheDir(process.env, import.meta.url));
await import('./main.js');
