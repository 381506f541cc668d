import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNexoSimulator, type NexoMode, type NexoSimulator, type SimulatedPayment } from '../../../devices/simulator/nexo-simulator.js';
import { accountsOf } from '../../../src/accounts/service.js';
import { createNexoTerminal } from '../../../src/modules/terminals/service.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { until } from '../../helpers/until.js';
import { FAST_TERMINALS } from './harness.js';
import { makeNexoCertificates } from './nexo-certs.js';

export const NEXO_POIID = 'V400m-324688179';
const KEY = { keyIdentifier: 'posdtable', passphrase: 'the table, on nexo', keyVersion: 1 };

export interface NexoHarness {
  sim: NexoSimulator;
  server: TestServer;
  terminalId: string;
  charge(): Promise<{ status: number; body: any }>;
  get(id: string): Promise<any>;
  /** The payments the terminal received for command `id`. */
  paymentsOf(id: string): SimulatedPayment[];
  stop(): Promise<void>;
}

let sale = 0;

/**
 * posd in this process and the nexo simulator over HTTPS with a test CA, the terminal registered as
 * `posd terminals add --kind nexo` registers it, and available.
 */
export async function startNexoHarness(opts: { mode: NexoMode; terminals?: Record<string, unknown> }): Promise<NexoHarness> {
  const dir = mkdtempSync(join(tmpdir(), 'posd-nexo-table-'));
  const certs = makeNexoCertificates(dir, NEXO_POIID);
  const sim = await startNexoSimulator({ key: KEY, tls: { key: certs.key, cert: certs.cert }, poiid: NEXO_POIID, mode: opts.mode });
  const server = await startTestServer({ config: { terminals: { ...FAST_TERMINALS, nexo_ca_file: certs.ca, ...opts.terminals } } });
  const ctx = server.daemon.ctx;
  const account = accountsOf(ctx).account(server.installation.sandbox_id)!;
  const terminal = createNexoTerminal(ctx, account, { name: 'Caja nexo', address: '127.0.0.1', port: sim.port, poiid: NEXO_POIID, ...KEY });
  const terminalId = terminal.id;
  // The daemon reads the registry for nexo terminals every 5 s.
  await until('the nexo terminal available', async () => (await server.api('GET', `/terminals/${terminalId}`)).body.availability === 'available', 20_000);
  return {
    sim,
    server,
    terminalId,
    async charge() {
      const res = await server.api('POST', '/terminal_session_commands', {
        body: { terminal_id: terminalId, external_id: `nexo-table-${++sale}`, amount_in_cents: 1500, currency: 'GTQ' },
      });
      return { status: res.status, body: res.body };
    },
    async get(id) {
      const res = await server.api('GET', `/terminal_session_commands/${id}`);
      if (res.status !== 200) throw new Error(`GET ${id}: ${res.status}`);
      return res.body;
    },
    paymentsOf: (id) => [...sim.payments.values()].filter((p) => p.saleTransactionId === id),
    async stop() {
      await server.stop();
      await sim.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
