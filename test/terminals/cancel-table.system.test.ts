/**
 * Every row of spec 3.3's table (test/terminals/helpers/cancel-table.ts), over a real WebSocket and
 * over a real serial line between two pseudo-terminals. The same table runs over nexo in
 * cancel-table-nexo.system.test.ts.
 */
import { describe, expect } from 'vitest';
import { cancelTable, type Outcome, type TableTerminal } from './helpers/cancel-table.js';
import { startHarness, type Harness, type Transport } from './helpers/harness.js';

/** The table's terminal as posd's own protocol speaks it, scripted message by message. */
async function scripted(transport: Transport): Promise<TableTerminal> {
  const h: Harness = await startHarness(transport);
  const settle = async (id: string, outcome: Outcome) => {
    await h.terminal.result(id, outcome);
    await h.terminal.next('result_ack', (a) => a.command_id === id);
    return h.get(id);
  };
  return {
    api: (method, path) => h.server.api(method, path),
    charge: () => h.charge(),
    get: (id) => h.get(id),
    async dispatched() {
      const created = await h.charge();
      expect(created.status).toBe(201);
      const id = created.body.id as string;
      await h.terminal.next('charge', (c) => c.command_id === id);
      const acked = h.handled((m) => m.type === 'ack' && m.command_id === id);
      await h.terminal.ack(id);
      await acked;
      expect((await h.get(id)).status).toBe('dispatched');
      return id;
    },
    async authorizing(id) {
      const progressed = h.handled((m) => m.type === 'progress');
      await h.terminal.progress(id, 'authorizing');
      await progressed;
    },
    async cancelSeen(id) {
      await h.terminal.next('cancel', (c) => c.command_id === id);
    },
    settle,
    async received(id) {
      await h.terminal.next('charge', (c) => c.command_id === id);
    },
    receivedCount: (id) => h.terminal.count('charge', id),
    async claimCanceled(id) {
      await h.terminal.result(id, 'canceled');
      await h.terminal.next('status_request', (r) => r.command_id === id);
      return { acked: h.terminal.count('result_ack', id) };
    },
    release: () => h.stop(),
  };
}

describe.each(['websocket', 'serial'] as const)('spec 3.3 over %s', (transport) => {
  cancelTable(() => scripted(transport));
});
