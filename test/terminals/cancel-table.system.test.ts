/**
 * Every row of spec 3.3's table, over a real WebSocket and over a real serial line between two
 * pseudo-terminals.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from './helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

/** Charges a command and lets the terminal take it: the command is `dispatched`. */
async function dispatched(h: Harness, extra: Record<string, unknown> = {}): Promise<string> {
  const created = await h.charge(extra);
  expect(created.status).toBe(201);
  const id = created.body.id as string;
  await h.terminal.next('charge', (c) => c.command_id === id);
  const acked = h.handled((m) => m.type === 'ack' && m.command_id === id);
  await h.terminal.ack(id);
  await acked;
  expect((await h.get(id)).status).toBe('dispatched');
  return id;
}

async function settle(h: Harness, id: string, outcome: 'approved' | 'declined' | 'canceled' | 'error') {
  await h.terminal.result(id, outcome);
  await h.terminal.next('result_ack', (a) => a.command_id === id);
  return h.get(id);
}

describe.each(['websocket', 'serial'] as const)('spec 3.3 over %s', (transport) => {
  it('pending + DELETE: canceled at once with 200, and the terminal never receives it', async () => {
    h = await startHarness(transport);
    const busy = await dispatched(h); // the terminal holds one command: the next one waits, pending
    const waiting = await h.charge();
    expect(waiting.body.status).toBe('pending');
    const del = await h.server.api('DELETE', `/terminal_session_commands/${waiting.body.id}`);
    expect(del.status).toBe(200);
    expect(del.body).toMatchObject({ id: waiting.body.id, status: 'canceled', final: true });
    expect(del.body.canceled_at).toEqual(expect.any(String));
    expect(del.body.cancellation_requested_at).toBeNull();

    await settle(h, busy, 'approved');
    const next = await h.charge();
    await h.terminal.next('charge', (c) => c.command_id === next.body.id);
    // Messages arrive in order: had the canceled command been sent, it would have come first.
    expect(h.terminal.count('charge', waiting.body.id)).toBe(0);
  });

  it('dispatched + DELETE: 202 cancel_requested, the terminal is told, and canceled only when it confirms', async () => {
    h = await startHarness(transport);
    const id = await dispatched(h);
    const del = await h.server.api('DELETE', `/terminal_session_commands/${id}`);
    expect(del.status).toBe(202);
    expect(del.body).toMatchObject({ status: 'cancel_requested', final: false, canceled_at: null });
    expect(del.body.cancellation_requested_at).toEqual(expect.any(String));
    await h.terminal.next('cancel', (c) => c.command_id === id);
    // Still not canceled: only the terminal can say so.
    expect((await h.get(id)).status).toBe('cancel_requested');
    const again = await h.server.api('DELETE', `/terminal_session_commands/${id}`);
    expect(again.status).toBe(202);

    const done = await settle(h, id, 'canceled');
    expect(done).toMatchObject({ status: 'canceled', final: true, checkout_status: 'unpaid' });
    expect(done.canceled_at).toEqual(expect.any(String));
  });

  it.each([
    ['approved', 'consumed', 'paid'],
    ['declined', 'failed', 'failed'],
  ] as const)('cancel_requested during authorization, terminal outcome %s: %s, never canceled', async (outcome, status, checkout) => {
    h = await startHarness(transport);
    const id = await dispatched(h);
    const progressed = h.handled((m) => m.type === 'progress');
    await h.terminal.progress(id, 'authorizing');
    await progressed;
    const del = await h.server.api('DELETE', `/terminal_session_commands/${id}`);
    expect(del.status).toBe(202);
    await h.terminal.next('cancel', (c) => c.command_id === id);
    // The terminal cannot stop an authorization: it reports the real outcome.
    const done = await settle(h, id, outcome);
    expect(done).toMatchObject({ status, final: true, checkout_status: checkout });
    expect(done.canceled_at).toBeNull();
  });

  it('a canceled result after authorizing is not believed at once: the command stays open, posd asks its status, and the answer settles it (issue 15)', async () => {
    h = await startHarness(transport);
    const id = await dispatched(h);
    const progressed = h.handled((m) => m.type === 'progress');
    await h.terminal.progress(id, 'authorizing');
    await progressed;
    await h.server.api('DELETE', `/terminal_session_commands/${id}`);
    await h.terminal.next('cancel', (c) => c.command_id === id);
    // Firmware that claims a cancel it cannot have made: recorded, not acknowledged, checked.
    await h.terminal.result(id, 'canceled');
    await h.terminal.next('status_request', (r) => r.command_id === id);
    expect(await h.get(id)).toMatchObject({ status: 'cancel_requested', final: false, canceled_at: null, checkout_status: 'payment_in_progress' });
    expect(h.terminal.count('result_ack', id)).toBe(0);
    // What really happened: the charge went through.
    const done = await settle(h, id, 'approved');
    expect(done).toMatchObject({ status: 'consumed', final: true, canceled_at: null, checkout_status: 'paid' });

    // And when the answer to the status request repeats the cancel, it is believed.
    const second = await dispatched(h);
    const progressed2 = h.handled((m) => m.type === 'progress');
    await h.terminal.progress(second, 'authorizing');
    await progressed2;
    await h.terminal.result(second, 'canceled');
    await h.terminal.next('status_request', (r) => r.command_id === second);
    expect((await h.get(second)).status).toBe('dispatched');
    const confirmed = await settle(h, second, 'canceled');
    expect(confirmed).toMatchObject({ status: 'canceled', final: true, checkout_status: 'unpaid' });
  });

  it('canceled + DELETE again: 200, unchanged', async () => {
    h = await startHarness(transport);
    const id = await dispatched(h);
    await h.server.api('DELETE', `/terminal_session_commands/${id}`);
    const canceled = await settle(h, id, 'canceled');
    const again = await h.server.api('DELETE', `/terminal_session_commands/${id}`);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(canceled);
  });

  it.each(['approved', 'declined'] as const)('final (%s) + DELETE: 409 with the command body and the error fields', async (outcome) => {
    h = await startHarness(transport);
    const id = await dispatched(h);
    const done = await settle(h, id, outcome);
    const del = await h.server.api('DELETE', `/terminal_session_commands/${id}`);
    expect(del.status).toBe(409);
    expect(del.body).toMatchObject({ ...done, code: 'terminal_command_final' });
    expect(del.body.message).toEqual(expect.any(String));
    expect(await h.get(id)).toEqual(done);
  });
});
