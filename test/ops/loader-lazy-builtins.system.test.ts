import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, expect, it } from 'vitest';
import { MAIN, assertBuilt } from '../helpers/process.js';

const run = promisify(execFile);

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/**
 * The loader (scripts/posd-entry.cjs, built as dist/posd/posd.js) hands the bundle a stand-in for
 * some of node's modules and loads the real one at first use (issue 16). Here the built loader runs
 * a main.js of our own beside it, as it runs the bundle's, and reports what node had loaded when.
 */
it("the loader's stand-ins for node's modules load the real one at first use and act as it does", async () => {
  assertBuilt();
  dir = mkdtempSync(join(tmpdir(), 'posd-loader-'));
  copyFileSync(MAIN, join(dir, 'posd.js'));
  writeFileSync(
    join(dir, 'main.js'),
    `
const loaded = (m) => process.moduleLoadList.includes('NativeModule ' + m);
const out = {};
const assert = require('node:assert');
const dns = require('dns');
const fsp = require('node:fs/promises');
const readline = require('node:readline');
out.requiredNotLoaded = ['assert', 'dns', 'fs/promises', 'readline'].filter(loaded);
assert(true, 'passes without node:assert');
out.afterPassingAssert = loaded('assert');
try { assert(0, 'the value was 0'); } catch (err) { out.failed = [err.name, err.message, err.code]; }
out.afterFailingAssert = loaded('assert');
try { assert.strictEqual(1, 2); } catch (err) { out.strictEqual = err.code; }
out.sameFunction = dns.lookup === require('node:dns').lookup && typeof dns.lookup === 'function';
out.dnsLoaded = loaded('dns');
out.keys = Object.keys(fsp).includes('readFile') && 'writeFile' in fsp;
out.readlineStillNotLoaded = !loaded('readline');
out.sameStandIn = readline === require('readline') && readline === require('node:readline');
console.log(JSON.stringify(out));
`,
  );
  const { stdout } = await run(process.execPath, [join(dir, 'posd.js')]);
  expect(JSON.parse(stdout)).toEqual({
    requiredNotLoaded: [],
    afterPassingAssert: false,
    failed: ['AssertionError', 'the value was 0', 'ERR_ASSERTION'],
    afterFailingAssert: true,
    strictEqual: 'ERR_ASSERTION',
    sameFunction: true,
    dnsLoaded: true,
    keys: true,
    readlineStillNotLoaded: true,
    sameStandIn: true,
  });
});
