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
async function timeToFirstAnswer(
  args: string[],
  outputPattern: RegExp,
  path: (m: RegExpMatchArray) => { url: string; headers: Record<string, string> },
  env: NodeJS.ProcessEnv = BOX_ENV,
): Promise<Started> {
  const started = performance.now();
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
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

/**
 * The environment a store box's service starts posd in: this shell's, without
 * NODE_EXTRA_CA_CERTS. With that variable set (this build machine sets it, for its own proxy's
 * certificate), node reads and parses the whole CA bundle it names before running any code: ~85 ms
 * of every node process here, the `node -e` baseline's included, and nothing posd does or can defer.
 * A box sets it only to trust a private CA for outbound calls. When this shell has it, the start is
 * measured once more with it (docs/startup.md).
 */
const BOX_ENV: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'NODE_EXTRA_CA_CERTS'));

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const BARE = ['-e', "require('http').createServer((q,s)=>s.end('ok')).listen(0,'127.0.0.1',function(){console.log('port '+this.address().port)})"];
const barePath = (m: RegExpMatchArray) => ({ url: `http://127.0.0.1:${m[1]}/`, headers: {} });

/**
 * From spawning `posd serve` to its first 200 on /api/test, beside a `node -e` HTTP server's first
 * answer measured in the same run, alternating (issue 16: under 0.5 s on an existing data folder,
 * under 1 s on an empty one), and the idle RSS after it answered (under 100 MB) beside the bare
 * server's. In a store box's environment (BOX_ENV), and in this shell's when they differ.
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

    const serve = (env: NodeJS.ProcessEnv) =>
      timeToFirstAnswer(
        [MAIN, 'serve', '--data', data, '--port', '0'],
        /"url":"(http:\/\/127\.0\.0\.1:\d+\/api)"/,
        (m) => ({ url: `${m[1]}/test`, headers: { 'x-secret-key': key } }),
        env,
      );
    /** One start: its time and CPU to the first answer, and its RSS `idleMs` after (NaN without). */
    const once = async (start: Promise<Started>, idleMs?: number) => {
      const s = await start;
      let rss = NaN;
      if (idleMs !== undefined) {
        await new Promise((r) => setTimeout(r, idleMs));
        rss = rssMiB(s.child.pid!);
      }
      await stop(s.child);
      return { ms: s.ms, cpuMs: s.cpuMs, rss };
    };
    /** `rounds` starts of each, alternating; the idle RSS of the last of each when `withRss`. */
    const starts = async (env: NodeJS.ProcessEnv, rounds: number, withRss: boolean) => {
      const out = { posd: [] as number[], posdCpu: [] as number[], bare: [] as number[], bareCpu: [] as number[], rss: NaN, bareRss: NaN };
      for (let i = 0; i < rounds; i++) {
        const last = withRss && i === rounds - 1;
        const b = await once(timeToFirstAnswer(BARE, /port (\d+)/, barePath, env), last ? 1000 : undefined);
        out.bare.push(b.ms);
        out.bareCpu.push(b.cpuMs);
        out.bareRss = b.rss;
        // Idle: the workers have started and the first request was answered.
        const s = await once(serve(env), last ? 3000 : undefined);
        out.posd.push(s.ms);
        out.posdCpu.push(s.cpuMs);
        out.rss = s.rss;
      }
      return out;
    };
    const box = await starts(BOX_ENV, 5, true);
    const inherited = process.env.NODE_EXTRA_CA_CERTS ? await starts(process.env, 3, false) : undefined;
    const bareMs = median(box.bare);
    const bareCpuMs = median(box.bareCpu);
    return [
      {
        scenario: 'start to first 200 on /api/test, existing data folder (median of 5)',
        metrics: { ms: median(box.posd), cpu_ms: median(box.posdCpu) },
        baseline: { ms: bareMs, cpu_ms: bareCpuMs },
        ratio: bareMs / median(box.posd),
        target: 'posd under 500 ms',
      },
      ...(inherited
        ? [
            {
              scenario: 'the same with NODE_EXTRA_CA_CERTS as this shell sets it (median of 3)',
              metrics: { ms: median(inherited.posd), cpu_ms: median(inherited.posdCpu) },
              baseline: { ms: median(inherited.bare), cpu_ms: median(inherited.bareCpu) },
              ratio: median(inherited.bare) / median(inherited.posd),
              target: 'node reads the CA bundle before any code: every node process, the baseline too',
            },
          ]
        : []),
      {
        scenario: 'start to first 200 on /api/test, empty data folder',
        metrics: { ms: first.ms, cpu_ms: first.cpuMs },
        baseline: { ms: bareMs, cpu_ms: bareCpuMs },
        ratio: bareMs / first.ms,
        target: 'posd under 1000 ms',
      },
      {
        scenario: 'idle RSS after the first answer (MiB)',
        metrics: { rss_mib: box.rss },
        baseline: { rss_mib: box.bareRss },
        ratio: box.bareRss / box.rss,
        target: 'posd under 100 MB',
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
