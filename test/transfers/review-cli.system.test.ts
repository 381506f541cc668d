import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { runPosd } from '../helpers/process.js';
import { AccountsService } from '../../src/accounts/service.js';
import { fund } from './money-helpers.js';

// Issue 15: the box's operator reviews a held transfer from the shell, beside the running daemon,
// through the same reviewTransfer the sandbox helper calls.

let s: TestServer;
let recipientId: string;

beforeAll(async () => {
  s = await startTestServer({ config: { money: { transfer_review_above_in_cents: 1000 } } });
  const accounts = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
  recipientId = accounts.createAccount({ name: 'Proveedor', organizationId: s.installation.organization_id }).sandbox.id;
  fund(s.daemon.ctx, s.installation.sandbox_id, 100_000);
});
afterAll(() => s.stop());

describe('posd transfers held / review', () => {
  it('lists the held transfers and releases or cancels one; the daemon then shows the outcome', { timeout: 120_000 }, async () => {
    const sbx = s.installation.sandbox_id;
    const a = (await s.api('POST', '/transfers', { body: { amount_in_cents: 5000, currency: 'GTQ', recipient_id: recipientId } })).body;
    const b = (await s.api('POST', '/transfers', { body: { amount_in_cents: 6000, currency: 'GTQ', recipient_id: recipientId } })).body;
    const held = await runPosd(['transfers', 'held', '--data', s.dataDir, '--account', sbx, '--json']);
    expect(held.code, held.stderr).toBe(0);
    expect(
      JSON.parse(held.stdout)
        .map((t: { id: string }) => t.id)
        .sort(),
    ).toEqual([a.id, b.id].sort());

    const released = await runPosd(['transfers', 'review', a.id, '--data', s.dataDir, '--account', sbx, '--outcome', 'succeeded']);
    expect(released.code, released.stderr).toBe(0);
    expect(JSON.parse(released.stdout).status).toBe('completed');
    const cancelled = await runPosd(['transfers', 'review', b.id, '--data', s.dataDir, '--account', sbx, '--outcome', 'cancelled', '--reason', 'duplicate']);
    expect(JSON.parse(cancelled.stdout)).toMatchObject({ status: 'cancelled', failure_reason: 'duplicate' });
    const again = await runPosd(['transfers', 'review', b.id, '--data', s.dataDir, '--account', sbx, '--outcome', 'succeeded']);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/not in review/);

    expect((await s.api('GET', `/transfers/${a.id}`)).body.status).toBe('completed');
    expect((await s.api('GET', `/transfers/${b.id}`)).body.status).toBe('cancelled');
    const types = s.daemon.ctx.db
      .prepare('SELECT type FROM events WHERE object_id = ? ORDER BY seq')
      .all(b.id)
      .map((e) => (e as { type: string }).type);
    expect(types).toEqual(['transfer.pending', 'transfer.in_review', 'transfer.cancelled']);
  });
});
