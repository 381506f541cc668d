import { afterEach, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from './helpers/harness.js';
import { approvedDetails } from './helpers/scripted-terminal.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

async function taken(h: Harness): Promise<string> {
  const created = await h.charge();
  const id = created.body.id as string;
  await h.terminal.next('charge', (c) => c.command_id === id);
  const acked = h.handled((m) => m.type === 'ack');
  await h.terminal.ack(id);
  await acked;
  return id;
}

/** The `terminal_payment` sync records of a command's checkout. */
function syncRecords(h: Harness, checkoutId: string) {
  return (h.server.daemon.ctx.db.prepare(`SELECT payload FROM sync_outbox WHERE kind = 'terminal_payment'`).all() as Array<{ payload: string }>)
    .map((r) => JSON.parse(r.payload))
    .filter((p) => p.checkout.id === checkoutId);
}

describe.each(['websocket', 'serial'] as const)('races over %s', (transport) => {
  it('cancel and result crossing: the result wins, the command is never canceled', async () => {
    h = await startHarness(transport);
    const id = await taken(h);
    await h.terminal.progress(id, 'authorizing');
    const [del] = await Promise.all([h.server.api('DELETE', `/terminal_session_commands/${id}`), h.terminal.result(id, 'approved')]);
    // Either the DELETE saw the command still open (202) or already final (409); both are true.
    expect([202, 409]).toContain(del.status);
    await h.terminal.next('result_ack', (a) => a.command_id === id);
    const done = await h.get(id);
    expect(done).toMatchObject({ status: 'consumed', final: true, canceled_at: null });
    expect(syncRecords(h, done.checkout_id)).toHaveLength(1);
  });

  it('the terminal drops the link while authorizing and comes back with the result', async () => {
    // A serial line has no hang-up: posd notices a silent terminal by its missed pings.
    h = await startHarness(transport, transport === 'serial' ? { terminals: { ping_interval_ms: 100, max_missed_pings: 2 } } : {});
    const id = await taken(h);
    const progressed = h.handled((m) => m.type === 'progress');
    await h.terminal.progress(id, 'authorizing');
    await progressed;
    await h.terminal.close();
    await expect.poll(async () => (await h!.server.api('GET', `/terminals/${h!.terminalId}`)).body.availability, { timeout: 10_000 }).toBe('unavailable');
    expect(await h.get(id)).toMatchObject({ status: 'dispatched', terminal_availability: 'unavailable' });
    // A cancel while it is away can only be a request: the card may be charged right now.
    const del = await h.server.api('DELETE', `/terminal_session_commands/${id}`);
    expect(del.status).toBe(202);

    const back = await h.reconnect();
    const result = { command_id: id, outcome: 'approved' as const, ...approvedDetails('approved') };
    const welcome = await back.hello({ current_command_id: null, unacknowledged_results: [result] });
    expect(welcome.type).toBe('welcome');
    await back.next('result_ack', (a) => a.command_id === id);
    expect(await h.get(id)).toMatchObject({ status: 'consumed', final: true, terminal_availability: 'available' });
  });

  it('a terminal that reconnects still holding the command keeps it, and reports later', async () => {
    h = await startHarness(transport);
    const id = await taken(h);
    await h.terminal.close();
    const back = await h.reconnect();
    await back.hello({ current_command_id: id });
    // It is not offered a second time.
    const next = await h.charge();
    expect(next.body.status).toBe('pending');
    await back.result(id, 'declined');
    await back.next('result_ack', (a) => a.command_id === id);
    expect(await h.get(id)).toMatchObject({ status: 'failed', final: true });
    expect(back.count('charge', id)).toBe(0);
    await back.next('charge', (c) => c.command_id === next.body.id);
  });

  it('a charge lost before the terminal took it is offered again after a reconnect', async () => {
    h = await startHarness(transport);
    const created = await h.charge();
    const id = created.body.id;
    await h.terminal.next('charge', (c) => c.command_id === id);
    await h.terminal.close(); // never acknowledged
    const back = await h.reconnect();
    await back.hello({ current_command_id: null });
    await back.next('charge', (c) => c.command_id === id);
    expect((await h.get(id)).status).toBe('pending');
    // Offered, not held, offered again: the column dispatch filters on follows the machine's context.
    const row = h.server.daemon.ctx.db.prepare('SELECT offered, snapshot FROM terminal_commands WHERE id = ?').get(id) as { offered: number; snapshot: string };
    expect(row.offered).toBe(1);
    expect(JSON.parse(row.snapshot).context.offered).toBe(true);
  });

  it('a duplicate result changes nothing and is acknowledged again', async () => {
    h = await startHarness(transport);
    const id = await taken(h);
    await h.terminal.result(id, 'approved');
    await h.terminal.next('result_ack', (a) => a.command_id === id);
    const first = await h.get(id);
    await h.terminal.result(id, 'declined', { reason: 'late duplicate' });
    await h.terminal.next('result_ack', (a) => a.command_id === id);
    expect(await h.get(id)).toEqual(first);
    expect(syncRecords(h, first.checkout_id)).toHaveLength(1);
    expect(syncRecords(h, first.checkout_id)[0].payment_intent).toMatchObject({
      status: 'succeeded',
      card_last4: '4242',
      authorization_code: 'A1B2C3',
    });
  });
});
