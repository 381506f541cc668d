/**
 * A nexo terminal (devices/simulator/nexo-simulator.ts, approve mode) driven by posd in its own
 * process over HTTPS with NexoCrypto. Measured: from sending POST /api/terminal_session_commands to
 * the terminal opening the PaymentRequest (p50, p99), one charge at a time, each settled before the
 * next. Baseline in the same run: a bare HTTPS round trip of a sealed DiagnosisRequest from this
 * process to the same simulator (undici, the same CA), which is the floor of what posd adds to.
 * Then refunds of those charges (docs/terminals-nexo.md "Refunds"): from sending POST /api/refunds
 * to the terminal opening the ReversalRequest, one at a time, each answered before the next.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { request } from 'undici';
import { initBenchData, MAIN, startBenchDaemon, type BenchResult } from './lib.js';
import { NexoClient } from '../devices/nexo/client.js';
import { diagnosisRequest } from '../devices/nexo/messages.js';
import { startNexoSimulator } from '../devices/simulator/nexo-simulator.js';

const POIID = 'V400m-324688179';
const KEY = { keyIdentifier: 'bench', passphrase: 'bench passphrase', keyVersion: 1 };
const seconds = () => Number(process.env.POSD_BENCH_SECONDS ?? 5);

function summary(xs: number[]) {
  const s = [...xs].sort((a, b) => a - b);
  const at = (p: number) => s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
  return { p50: at(50), p99: at(99), n: s.length };
}

function certificates(dir: string) {
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  ssl('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '1', '-subj', '/CN=bench terminal CA');
  ssl('req', ...ec, '-keyout', 't.key', '-out', 't.csr', '-subj', `/CN=${POIID.toLowerCase()}.test.terminal.adyen.com`);
  ssl('x509', '-req', '-in', 't.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 't.pem', '-days', '1');
  return { caFile: join(dir, 'ca.pem'), key: readFileSync(join(dir, 't.key')), cert: readFileSync(join(dir, 't.pem')) };
}

export async function run(): Promise<BenchResult[]> {
  const certDir = mkdtempSync(join(tmpdir(), 'posd-bench-nexo-'));
  const certs = certificates(certDir);
  const sim = await startNexoSimulator({ key: KEY, tls: certs, poiid: POIID });
  const durationMs = seconds() * 1000;

  // Baseline: sealed round trips straight to the simulator.
  const client = new NexoClient({ address: '127.0.0.1', port: sim.port, poiid: POIID, saleId: 'bench', key: KEY, ca: readFileSync(certs.caFile, 'utf8') });
  const raw: number[] = [];
  for (const until = performance.now() + Math.min(durationMs, 3000); performance.now() < until; ) {
    const t0 = performance.now();
    await client.post(diagnosisRequest(client.parties), 5000);
    raw.push(performance.now() - t0);
  }
  await client.close();

  const data = await initBenchData();
  const add = spawn(
    process.execPath,
    [MAIN, 'terminals', 'add', '--data', data.dataDir, '--account', data.ids.sandbox_id, '--name', 'bench', '--kind', 'nexo', '--address', '127.0.0.1'].concat([
      '--port',
      String(sim.port),
      '--poiid',
      POIID,
      '--key-identifier',
      KEY.keyIdentifier,
      '--key-version',
      '1',
      '--json',
    ]),
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  let out = '';
  add.stdout!.on('data', (d) => (out += d));
  add.stdin!.end(`${KEY.passphrase}\n`);
  await new Promise((r) => add.once('exit', r));
  const terminalId = JSON.parse(out).id as string;
  const daemon = await startBenchDaemon({ POSD_TERMINALS_NEXO_CA_FILE: certs.caFile, POSD_TERMINALS_PING_INTERVAL_MS: '0' }, { data: data });
  const key = daemon.keys.test;
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await request(`${daemon.url}/api${path}`, {
      method: method as 'GET',
      headers: { 'x-secret-key': key, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return (await res.body.json()) as Record<string, unknown>;
  };
  const fromRequest: number[] = [];
  const refundFromRequest: number[] = [];
  const paid: string[] = [];
  try {
    while ((await api('GET', `/terminals/${terminalId}`)).availability !== 'available') await new Promise((r) => setTimeout(r, 50));
    let n = 0;
    for (const until = performance.now() + durationMs; performance.now() < until; ) {
      const t0 = performance.now();
      const cmd = await api('POST', '/terminal_session_commands', { terminal_id: terminalId, external_id: `bench-${++n}`, amount_in_cents: 1000 });
      const p = await sim.reached(cmd.id as string, 'waiting_card');
      fromRequest.push(p.receivedAt - t0);
      await sim.reached(cmd.id as string, 'done');
      let c: Record<string, unknown>;
      while ((c = await api('GET', `/terminal_session_commands/${cmd.id}`)).final !== true) await new Promise((r) => setTimeout(r, 5));
      paid.push(c.checkout_id as string);
    }
    for (const until = performance.now() + durationMs; performance.now() < until && paid.length > 0; ) {
      const checkout = await api('GET', `/checkouts/${paid.shift()}`);
      const t0 = performance.now();
      const refund = await api('POST', '/refunds', { intent_id: (checkout.latest_intent as { id: string }).id });
      const r = await sim.reachedReversal(refund.id as string, 'processing');
      refundFromRequest.push(r.receivedAt - t0);
      while ((await api('GET', `/refunds/${refund.id}`)).status === 'pending') await new Promise((r) => setTimeout(r, 5));
    }
  } finally {
    await daemon.stop();
    await sim.close();
    rmSync(certDir, { recursive: true, force: true });
  }
  const posd = summary(fromRequest);
  const refunds = summary(refundFromRequest);
  const base = summary(raw);
  return [
    {
      scenario: 'POST /api/terminal_session_commands -> PaymentRequest opened by a nexo terminal (HTTPS, NexoCrypto)',
      metrics: { 'from request p50 ms': posd.p50, 'from request p99 ms': posd.p99, charges: posd.n },
      baseline: { 'sealed HTTPS round trip p50 ms': base.p50, 'sealed HTTPS round trip p99 ms': base.p99 },
      // posd's hand-off (an API commit, then a sealed POST) over one bare sealed round trip.
      ratio: base.p99 / Math.max(posd.p99, 1e-3),
      target: 'printed only: the first measure of this transport (decision 0280)',
    },
    {
      scenario: 'POST /api/refunds -> ReversalRequest opened by the nexo terminal that took the payment',
      metrics: { 'from request p50 ms': refunds.p50, 'from request p99 ms': refunds.p99, refunds: refunds.n },
      baseline: { 'sealed HTTPS round trip p50 ms': base.p50, 'sealed HTTPS round trip p99 ms': base.p99 },
      ratio: base.p99 / Math.max(refunds.p99, 1e-3),
      target: 'printed only: the first measure of terminal refunds (decision 0281)',
    },
  ];
}
