/**
 * Spec 3.3's cancel table (test/terminals/helpers/cancel-table.ts) on the nexo transport: posd (in
 * this process) drives the nexo simulator over real HTTPS with a test CA, every message under
 * NexoCrypto, the simulator in `manual` mode so each row moves the payment as the table says. The
 * terminal is registered once; each row leaves it idle for the next.
 */
import { afterAll, describe, expect } from 'vitest';
import { until } from '../helpers/until.js';
import { cancelTable, type TableTerminal } from './helpers/cancel-table.js';
import { startNexoHarness, type NexoHarness } from './helpers/nexo-harness.js';

let shared: Promise<NexoHarness> | undefined;

afterAll(async () => {
  await (await shared)?.stop();
});

async function nexoTerminal(): Promise<TableTerminal> {
  shared ??= startNexoHarness({ mode: 'manual' });
  const h = await shared;
  const { sim } = h;
  const created: string[] = [];
  const charge = async () => {
    const res = await h.charge();
    if (res.status === 201) created.push(res.body.id);
    return res;
  };
  return {
    api: (method, path) => h.server.api(method, path),
    charge,
    get: (id) => h.get(id),
    async dispatched() {
      const c = await charge();
      expect(c.status).toBe(201);
      const id = c.body.id as string;
      await sim.reached(id, 'waiting_card');
      // The TransactionStatusRequest posd sends 1 s after the PaymentRequest answers InProgress: TAKEN.
      await until(`${id} dispatched`, async () => (await h.get(id)).status === 'dispatched', 10_000);
      return id;
    },
    async authorizing(id) {
      sim.authorize(id);
    },
    async cancelSeen(id) {
      await until(`an AbortRequest for ${id}`, () => h.paymentsOf(id).some((p) => p.aborts > 0), 10_000);
    },
    async settle(id, outcome) {
      sim.complete(id, outcome);
      return until(
        `${id} settled`,
        async () => {
          const c = await h.get(id);
          return c.final ? c : undefined;
        },
        10_000,
      );
    },
    async received(id) {
      await sim.reached(id, 'waiting_card');
    },
    receivedCount: (id) => h.paymentsOf(id).length,
    // No claimCanceled: nexo has no message saying a payment is authorizing (docs/terminals-nexo.md).
    async release() {
      // Idle for the next row: every payment still open ends canceled, every command final.
      await until(
        'every command of the row final',
        async () => {
          for (const p of sim.payments.values()) if (p.stage !== 'done') sim.complete(p.saleTransactionId, 'canceled');
          for (const id of created) if (!(await h.get(id)).final) return false;
          return true;
        },
        20_000,
      );
      for (const id of created) expect(sim.approvedCount(id)).toBeLessThanOrEqual(1);
    },
  };
}

describe('spec 3.3 over nexo', () => {
  cancelTable(nexoTerminal, { reportsAuthorizing: false });
});
