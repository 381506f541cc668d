/**
 * Terminals: 10 simulated terminals over WebSocket and 2 over serial pseudo-terminals (socat), all
 * talking to posd in its own process. Measured: the time from POST /api/terminal_session_commands
 * to the terminal receiving `charge` (p50, p99), and full charge cycles a second (POST, charge,
 * ack, progress x3, result, settlement, result_ack). Baselines in the same run: a bare `ws` round
 * trip to an echo server, and a bare round trip over a pty pair.
 */
import { performance } from 'node:perf_hooks';
import { spawn } from 'node:child_process';
import { Pool } from 'undici';
import WebSocket from 'ws';
import { SerialPort } from 'serialport';
import { startBaseline, startBenchDaemon, type BenchResult } from './lib.js';
import { TerminalSimulator } from '../devices/simulator/simulator.js';
import { serialConnector, webSocketConnector } from '../devices/simulator/connectors.js';

const WS_TERMINALS = 10;
const SERIAL_TERMINALS = 2;
const seconds = () => Number(process.env.POSD_BENCH_SECONDS ?? 5);

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}
const summary = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: pct(s, 50), p99: pct(s, 99) };
};

interface Pty {
  a: string;
  b: string;
  kill(): void;
}

function openPty(): Promise<Pty> {
  const proc = spawn('socat', ['-d', '-d', 'pty,raw,echo=0', 'pty,raw,echo=0'], { stdio: ['ignore', 'ignore', 'pipe'] });
  return new Promise((resolve, reject) => {
    let err = '';
    proc.once('error', reject);
    proc.stderr!.on('data', (d: Buffer) => {
      err += d;
      const paths = [...err.matchAll(/PTY is (\/dev\/pts\/\d+)/g)].map((m) => m[1]);
      if (paths.length === 2 && err.includes('starting data transfer loop')) resolve({ a: paths[0], b: paths[1], kill: () => proc.kill() });
    });
  });
}

/** Round trips of a 120-byte JSON text over one connection each, `connections` at once. */
async function wsBaseline(connections: number, durationMs: number) {
  const server = await startBaseline('ws-echo');
  const url = server.url.replace('http', 'ws');
  const rtts: number[] = [];
  const payload = JSON.stringify({ type: 'charge', command_id: 'tsc_0123456789abcdef', amount_in_cents: 1500, currency: 'GTQ', installments: 1 });
  const until = performance.now() + durationMs;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      const ws = new WebSocket(url);
      await new Promise((r) => ws.once('open', r));
      while (performance.now() < until) {
        const t0 = performance.now();
        await new Promise<void>((r) => {
          ws.once('message', () => r());
          ws.send(payload);
        });
        rtts.push(performance.now() - t0);
      }
      ws.close();
    }),
  );
  await server.stop();
  return { ...summary(rtts), perSecond: rtts.length / (durationMs / 1000) };
}

/** Round trips of a framed-size message across a pty pair, echoed by the far end. */
async function ptyBaseline(durationMs: number) {
  const pty = await openPty();
  const open = (path: string) =>
    new Promise<SerialPort>((resolve, reject) => {
      const p = new SerialPort({ path, baudRate: 115200, autoOpen: false });
      p.open((e) => (e ? reject(e) : resolve(p)));
    });
  const [a, b] = [await open(pty.a), await open(pty.b)];
  const msg = Buffer.alloc(160, 0x41);
  let got = 0;
  a.on('data', (d: Buffer) => a.write(d));
  const rtts: number[] = [];
  const until = performance.now() + durationMs;
  while (performance.now() < until) {
    const t0 = performance.now();
    got = 0;
    await new Promise<void>((r) => {
      const on = (d: Buffer) => {
        got += d.length;
        if (got >= msg.length) {
          b.off('data', on);
          r();
        }
      };
      b.on('data', on);
      b.write(msg);
    });
    rtts.push(performance.now() - t0);
  }
  await new Promise((r) => a.close(r));
  await new Promise((r) => b.close(r));
  pty.kill();
  return summary(rtts);
}

export async function run(): Promise<BenchResult[]> {
  const durationMs = seconds() * 1000;
  const rawWs = await wsBaseline(WS_TERMINALS, durationMs);
  const rawPty = await ptyBaseline(Math.min(durationMs, 2000));

  const daemon = await startBenchDaemon({ POSD_TERMINALS_DISPATCH_TIMEOUT_MS: '120000' });
  const api = new Pool(daemon.url, { connections: WS_TERMINALS + SERIAL_TERMINALS });
  const call = async (method: 'POST' | 'GET', path: string, body?: unknown) => {
    const res = await api.request({
      method,
      path: `/api${path}`,
      headers: { 'x-secret-key': daemon.keys.test, 'content-type': 'application/json' },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.body.text();
    if (res.statusCode >= 300) throw new Error(`${method} ${path}: ${res.statusCode} ${text}`);
    return JSON.parse(text);
  };

  const ptys: Pty[] = [];
  const sims: Array<{ sim: TerminalSimulator; id: string; transport: 'websocket' | 'serial' }> = [];
  const fast = { waiting_card: 0, reading: 0, authorizing: 0 };
  try {
    for (let i = 0; i < WS_TERMINALS + SERIAL_TERMINALS; i++) {
      const serial = i >= WS_TERMINALS;
      let pty: Pty | undefined;
      if (serial) ptys.push((pty = await openPty()));
      const t = await call('POST', '/terminals', serial ? { name: `S${i}`, transport: 'serial', serial_path: pty!.a } : { name: `W${i}` });
      const connect = serial
        ? serialConnector(pty!.b, { pingIntervalMs: 0 })
        : webSocketConnector(`${daemon.url.replace('http', 'ws')}/terminals/link`, { pingIntervalMs: 0 });
      const sim = new TerminalSimulator({ terminalId: t.id, token: t.pairing_token, connect, delays: fast, reconnectDelayMs: 200 });
      await sim.start();
      sims.push({ sim, id: t.id, transport: serial ? 'serial' : 'websocket' });
    }

    let n = 0;
    /** One full cycle on one terminal; returns POST→charge latency (ms) measured from the POST's return. */
    const cycle = async (s: (typeof sims)[number]) => {
      const commandId = { value: '' };
      let chargeAt = 0;
      const charged = s.sim.waitFor('charge').then(() => (chargeAt = performance.now()));
      const t0 = performance.now();
      const created = await call('POST', '/terminal_session_commands', { terminal_id: s.id, external_id: `bench-${++n}`, amount_in_cents: 1500 });
      const returnedAt = performance.now();
      commandId.value = created.id;
      const acked = s.sim.waitFor('result_ack', (a) => a.command_id === created.id);
      await charged;
      await acked;
      // posd commits and sends the charge before it answers; the terminal may have it first.
      return { afterReturn: Math.max(0, chargeAt - returnedAt), fromRequest: chargeAt - t0 };
    };

    // Latency: one charge at a time, round robin, so each measures dispatch and not queueing.
    const lat: Record<'websocket' | 'serial', { afterReturn: number[]; fromRequest: number[] }> = {
      websocket: { afterReturn: [], fromRequest: [] },
      serial: { afterReturn: [], fromRequest: [] },
    };
    for (let i = 0; i < 20; i++) await cycle(sims[i % sims.length]); // warm up
    const latencyUntil = performance.now() + durationMs;
    for (let i = 0; performance.now() < latencyUntil; i++) {
      const s = sims[i % sims.length];
      const r = await cycle(s);
      lat[s.transport].afterReturn.push(r.afterReturn);
      lat[s.transport].fromRequest.push(r.fromRequest);
    }

    // Throughput: every terminal charging back to back.
    let cycles = 0;
    const until = performance.now() + durationMs;
    await Promise.all(
      sims.map(async (s) => {
        while (performance.now() < until) {
          await cycle(s);
          cycles++;
        }
      }),
    );
    const cyclesPerSecond = cycles / (durationMs / 1000);

    const ws = summary(lat.websocket.afterReturn);
    const wsReq = summary(lat.websocket.fromRequest);
    const se = summary(lat.serial.afterReturn);
    const seReq = summary(lat.serial.fromRequest);
    return [
      {
        scenario: `POST /api/terminal_session_commands returning -> charge received, ${WS_TERMINALS} WebSocket terminals`,
        metrics: { 'p50 ms': ws.p50, 'p99 ms': ws.p99, 'from request p50 ms': wsReq.p50, 'from request p99 ms': wsReq.p99 },
        baseline: { 'ws round trip p50 ms': rawWs.p50, 'ws round trip p99 ms': rawWs.p99 },
        // Issue 38: from the request to the frame, p99 < 3 ms; the ratio is 3 ms over that p99.
        ratio: 3 / Math.max(wsReq.p99, 1e-3),
        target: '>= 1 (from request p99 < 3 ms, issue 38)',
      },
      {
        scenario: `POST /api/terminal_session_commands returning -> charge received, ${SERIAL_TERMINALS} serial terminals (pty)`,
        metrics: { 'p50 ms': se.p50, 'p99 ms': se.p99, 'from request p50 ms': seReq.p50, 'from request p99 ms': seReq.p99 },
        baseline: { 'pty round trip p50 ms': rawPty.p50, 'pty round trip p99 ms': rawPty.p99 },
        ratio: 3 / Math.max(seReq.p99, 1e-3),
        target: '>= 1 (from request p99 < 3 ms, issue 38)',
      },
      {
        scenario: `full charge cycles, ${WS_TERMINALS} WebSocket + ${SERIAL_TERMINALS} serial terminals at once`,
        metrics: { 'cycles/s': cyclesPerSecond },
        baseline: { 'ws round trips/s': rawWs.perSecond },
        ratio: cyclesPerSecond / rawWs.perSecond,
        target: 'report',
      },
    ];
  } finally {
    for (const s of sims) await s.sim.stop().catch(() => {});
    await api.close();
    await daemon.stop();
    for (const p of ptys) p.kill();
  }
}
