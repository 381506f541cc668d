import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { MAIN, type BenchResult } from './lib.js';

/** Spawns a server, reads its port (and key) from its output, and returns the ms until `probe` answers 200. */
async function timeToFirst200(args: string[], outputPattern: RegExp, path: (m: RegExpMatchArray) => { url: string; headers: Record<string, string> }): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  const match = await new Promise<RegExpMatchArray>((resolve, reject) => {
    const on = (d: Buffer) => {
      text += d;
      const m = outputPattern.exec(text);
      if (m) resolve(m);
    };
    child.stdout.on('data', on);
    child.stderr.on('data', on);
    child.once('exit', () => reject(new Error(text)));
  });
  const { url, headers } = path(match);
  for (;;) {
    const res = await request(url, { headers }).catch(() => null);
    if (res) await res.body.text();
    if (res?.statusCode === 200) break;
  }
  const elapsed = performance.now() - started;
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  return elapsed;
}

/** From spawning `posd serve` on an empty data folder to its first 200 on /api/test (the issue asks under 2 s). */
export async function run(): Promise<BenchResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'posd-bench-start-'));
  const posd = await timeToFirst200(
    [MAIN, 'serve', '--data', dir, '--port', '0'],
    /API\s+(http:\/\/127\.0\.0\.1:\d+\/api)[\s\S]*test key\s+(sk_test_\w+)/,
    (m) => ({ url: `${m[1]}/test`, headers: { 'x-secret-key': m[2] } }),
  );
  rmSync(dir, { recursive: true, force: true });
  const bare = await timeToFirst200(
    ['-e', "require('http').createServer((q,s)=>s.end('ok')).listen(0,'127.0.0.1',function(){console.log('port '+this.address().port)})"],
    /port (\d+)/,
    (m) => ({ url: `http://127.0.0.1:${m[1]}/`, headers: {} }),
  );
  return [
    {
      scenario: 'start to first 200 on /api/test (empty data folder)',
      metrics: { ms: posd },
      baseline: { ms: bare },
      ratio: bare / posd,
      target: 'posd under 2000 ms',
    },
  ];
}
