import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { MAIN, type BenchResult } from './lib.js';

interface Started {
  ms: number;
  /** The process's user+sys CPU time until the answer (Linux), steadier than wall time on a busy box. */
  cpuMs: number;
  child: ChildProcess;
  url: string;
  headers: Record<string, string>;
}

/** Spawns a server, reads its port (and key) from its output, and returns the ms until `probe` first answers. */
async function timeToFirstAnswer(args: string[], outputPattern: RegExp, path: (m: RegExpMatchArray) => { url: string; headers: Record<string, string> }): Promise<Started> {
  const started = performance.now();
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  const match = await new Promise<RegExpMatchArray>((resolve, reject) => {
    const on = (d: Buffer) => {
      text += d;
      const m = outputPattern.exec(text);
      if (m) resolve(m);
    };
    child.stdout!.on('data', on);
    child.stderr!.on('data', on);
    child.once('exit', () => reject(new Error(text)));
  });
  const { url, headers } = path(match);
  for (;;) {
    const res = await request(url, { headers }).catch(() => null);
    if (res) await res.body.text();
    if (res?.statusCode === 200) break;
  }
  return { ms: performance.now() - started, cpuMs: cpuMs(child.pid!), child, url, headers };
}

async function stop(child: ChildProcess): Promise<void> {
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
}

/** User+sys CPU time of a process so far (Linux, /proc/<pid>/stat, in clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Resident memory of a process (Linux), in MiB. */
function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const BARE = ['-e', "require('http').createServer((q,s)=>s.end('ok')).listen(0,'127.0.0.1',function(){console.log('port '+this.address().port)})"];
const barePath = (m: RegExpMatchArray) => ({ url: `http://127.0.0.1:${m[1]}/`, headers: {} });

/**
 * From spawning `posd serve` to its first 200 on /api/test, beside a `node -e` HTTP server's first
 * answer measured in the same run (issue 16: under 0.5 s on an existing data folder, under 1 s on an
 * empty one), and the idle RSS after it answered (under 100 MB) beside the bare server's.
 */
export async function run(): Promise<BenchResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'posd-bench-start-'));
  const data = join(dir, 'data');
  try {
    const first = await timeToFirstAnswer(
      [MAIN, 'serve', '--data', data, '--port', '0'],
      /API\s+(http:\/\/127\.0\.0\.1:\d+\/api)[\s\S]*test key\s+(sk_test_\w+)/,
      (m) => ({ url: `${m[1]}/test`, headers: { 'x-secret-key': m[2] } }),
    );
    const key = first.headers['x-secret-key'];
    await stop(first.child);

    const existing: number[] = [];
    const existingCpu: number[] = [];
    const bare: number[] = [];
    const bareCpu: number[] = [];
    let rss = NaN;
    let bareRss = NaN;
    for (let i = 0; i < 3; i++) {
      const b = await timeToFirstAnswer(BARE, /port (\d+)/, barePath);
      bare.push(b.ms);
      bareCpu.push(b.cpuMs);
      await new Promise((r) => setTimeout(r, 1000));
      bareRss = rssMiB(b.child.pid!);
      await stop(b.child);
      const s = await timeToFirstAnswer([MAIN, 'serve', '--data', data, '--port', '0'], /"url":"(http:\/\/127\.0\.0\.1:\d+\/api)"/, (m) => ({
        url: `${m[1]}/test`,
        headers: { 'x-secret-key': key },
      }));
      existing.push(s.ms);
      existingCpu.push(s.cpuMs);
      if (i === 2) {
        // Idle: the workers have started and the first request was answered.
        await new Promise((r) => setTimeout(r, 3000));
        rss = rssMiB(s.child.pid!);
      }
      await stop(s.child);
    }
    const bareMs = median(bare);
    return [
      {
        scenario: 'start to first 200 on /api/test, existing data folder (median of 3)',
        metrics: { ms: median(existing), cpu_ms: median(existingCpu) },
        baseline: { ms: bareMs, cpu_ms: median(bareCpu) },
        ratio: bareMs / median(existing),
        target: 'posd under 500 ms',
      },
      {
        scenario: 'start to first 200 on /api/test, empty data folder',
        metrics: { ms: first.ms, cpu_ms: first.cpuMs },
        baseline: { ms: bareMs, cpu_ms: median(bareCpu) },
        ratio: bareMs / first.ms,
        target: 'posd under 1000 ms',
      },
      {
        scenario: 'idle RSS after the first answer (MiB)',
        metrics: { rss_mib: rss },
        baseline: { rss_mib: bareRss },
        ratio: bareRss / rss,
        target: 'posd under 100 MB',
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
