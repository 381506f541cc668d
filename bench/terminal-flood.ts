import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { load, startBenchDaemon, type BenchResult } from './lib.js';

/**
 * Issue 32: `GET /api/account` (4 connections) while one paired terminal floods its WebSocket link
 * (its own process, reconnecting each time posd closes it), beside the same daemon without the
 * flood. Target: p99 under 50 ms during the flood (it was a p50 of 220-425 ms before the frame budget).
 */
export async function run(): Promise<BenchResult[]> {
  // Without a budget to speak of first (as before issue 32), then with the defaults.
  return [
    ...(await measure('no frame budget', { POSD_TERMINALS_LINK_FRAMES_PER_SECOND: '1000000000', POSD_TERMINALS_LINK_BYTES_PER_SECOND: '1000000000000' })),
    ...(await measure('default frame budget', {})),
  ];
}

async function measure(label: string, env: Record<string, string>): Promise<BenchResult[]> {
  const daemon = await startBenchDaemon(env);
  const headers = { 'x-secret-key': daemon.keys.test };
  try {
    const quiet = await load({ url: `${daemon.url}/api/account`, headers, connections: 4 });
    const res = await request(`${daemon.url}/api/terminals`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Flooder' }),
    });
    const trm = (await res.body.json()) as { id: string; pairing_token: string };
    const script = fileURLToPath(new URL('./terminal-flooder.js', import.meta.url));
    const flooder = spawn(process.execPath, [script, `${daemon.url.replace('http', 'ws')}/terminals/link`, trm.id, trm.pairing_token], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let closes = 0;
    flooder.stdout!.on(
      'data',
      (d: Buffer) =>
        (closes += String(d)
          .split('\n')
          .filter((l) => l.startsWith('frames')).length),
    );
    try {
      // Let the flood start before measuring.
      await new Promise((r) => setTimeout(r, 1000));
      const flooded = await load({ url: `${daemon.url}/api/account`, headers, connections: 4 });
      if (flooded.non2xx || flooded.errors)
        throw new Error(`GET /api/account answered ${flooded.non2xx} non-2xx and ${flooded.errors} errors during the flood`);
      return [
        {
          scenario: `GET /api/account, 4 connections, one terminal flooding, ${label} (link closed ${closes} times)`,
          metrics: { 'req/s': flooded.rps, 'p50 ms': flooded.p50, 'p99 ms': flooded.p99 },
          baseline: { 'req/s': quiet.rps, 'p50 ms': quiet.p50, 'p99 ms': quiet.p99 },
          ratio: flooded.p99 / 50,
          target: '< 1 (p99 under 50 ms)',
        },
      ];
    } finally {
      flooder.kill();
    }
  } finally {
    await daemon.stop();
  }
}
