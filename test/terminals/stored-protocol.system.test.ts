/**
 * Terminal protocol 2 (stored payments) over a real WebSocket and a real serial line (a socat pty
 * pair): negotiation, offline_policy at welcome and on change, a `stored` result, forward results
 * acknowledged after commit; a version-1 terminal beside it sees none of it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from './helpers/harness.js';
import { serialConnector, TerminalSimulator, webSocketConnector } from '../../devices/simulator/index.js';
import { openPtyPair, type PtyPair } from '../devices/helpers/pty-pair.js';

let h: Harness | undefined;
const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await h?.stop();
  h = undefined;
});

const row = (h: Harness, sql: string, ...args: unknown[]) => h.server.daemon.ctx.db.prepare(sql).get(...args) as Record<string, any>;
const count = (h: Harness, sql: string, ...args: unknown[]) => (row(h, sql, ...args) as { n: number }).n;

describe.each(['websocket', 'serial'] as const)('protocol 2 over %s', (transport) => {
  it('negotiates 2, sends the policy at welcome and on change, stores, then settles each forward result once', async () => {
    h = await startHarness(transport, { protocol: 2 });
    const t = h.terminal;
    const first = await t.next('offline_policy');
    expect(t.received[0]).toMatchObject({ type: 'welcome', protocol: 2 });
    // The policy comes right after welcome, before any charge.
    expect(t.received[1]).toBe(first);
    expect(first).toEqual({
      type: 'offline_policy',
      allowed: true,
      currency: 'GTQ',
      max_payment_in_cents: 50_000,
      remaining_amount_in_cents: 500_000,
      remaining_count: 100,
      max_age_seconds: 48 * 3600,
      forward_by: null,
    });

    // Charge 1: stored, then forwarded, then approved (and approved again: acknowledged, not applied).
    const c1 = (await h.charge({ amount_in_cents: 2500 })).body;
    await t.next('charge', (m) => m.command_id === c1.id);
    await t.ack(c1.id);
    await t.result(c1.id, 'stored', { offline_reference: 'ref-1', card: { network: 'visa', last4: '1111' } });
    expect((await t.next('result_ack')).command_id).toBe(c1.id);
    const afterStore = await t.next('offline_policy');
    expect(afterStore).toMatchObject({ allowed: true, remaining_amount_in_cents: 497_500, remaining_count: 99 });
    const sp1 = row(h, `SELECT * FROM stored_payments WHERE command_id = ?`, c1.id);
    expect(sp1).toMatchObject({ status: 'stored', offline_reference: 'ref-1', amount_in_cents: 2500, card_last4: '1111', over_cap: null });
    expect(afterStore.forward_by).toBe(sp1.forward_by);
    expect(Date.parse(sp1.forward_by) - Date.parse(sp1.stored_at)).toBe(48 * 3600_000);
    // The till reads `stored`, not final: the card may still be declined when forwarded.
    expect(await h.get(c1.id)).toMatchObject({ status: 'stored', final: false, checkout_status: 'payment_in_progress' });

    await t.forward(c1.id, 'ref-1', 'forwarded');
    expect(await t.next('forward_ack')).toEqual({ type: 'forward_ack', offline_reference: 'ref-1', outcome: 'forwarded' });
    expect(row(h, `SELECT status FROM stored_payments WHERE id = ?`, sp1.id).status).toBe('forwarded');
    await t.forward(c1.id, 'ref-1', 'approved');
    expect(await t.next('forward_ack')).toMatchObject({ offline_reference: 'ref-1', outcome: 'approved' });
    await t.forward(c1.id, 'ref-1', 'approved');
    expect(await t.next('forward_ack')).toMatchObject({ offline_reference: 'ref-1', outcome: 'approved' });
    expect(row(h, `SELECT status, authorization_code FROM stored_payments WHERE id = ?`, sp1.id)).toEqual({ status: 'approved', authorization_code: 'OFF123' });
    expect(await h.get(c1.id)).toMatchObject({ status: 'consumed', final: true, checkout_status: 'paid' });
    expect(count(h, `SELECT COUNT(*) AS n FROM payment_intents WHERE checkout_id = ?`, sp1.checkout_id)).toBe(1);
    expect((await t.next('offline_policy')).remaining_amount_in_cents).toBe(500_000);

    // Charge 2: stored, then declined later: the sale is owed again.
    const c2 = (await h.charge({ amount_in_cents: 1800 })).body;
    await t.next('charge', (m) => m.command_id === c2.id);
    await t.result(c2.id, 'stored', { offline_reference: 'ref-2' });
    await t.next('result_ack', (m) => m.command_id === c2.id);
    await t.forward(c2.id, 'ref-2', 'declined');
    await t.next('forward_ack', (m) => m.offline_reference === 'ref-2');
    expect(row(h, `SELECT status, reason FROM stored_payments WHERE command_id = ?`, c2.id)).toEqual({ status: 'declined', reason: 'insufficient_funds' });
    expect(await h.get(c2.id)).toMatchObject({ status: 'failed', final: true, checkout_status: 'unpaid' });

    // A reference posd never heard of is not acknowledged (the terminal must send its stored result first).
    const handled = h.handled((m) => m.type === 'forward_result');
    await t.forward(c2.id, 'ref-unknown', 'approved');
    await handled;
    expect(t.count('forward_ack')).toBe(4);
  });

  it('refuses a stored result without the terminal reference as invalid, and keeps version 1 terminals unchanged', async () => {
    h = await startHarness(transport);
    const t = h.terminal;
    expect(t.received[0]).toEqual({ type: 'welcome', server_time: expect.any(String) });
    const c = (await h.charge()).body;
    await t.next('charge');
    await t.ack(c.id);
    await t.result(c.id, 'approved');
    await t.next('result_ack');
    expect(t.count('offline_policy')).toBe(0);
    // The link reports the bad message as invalid and delivers nothing; the message after it is handled.
    await t.send({ type: 'result', command_id: c.id, outcome: 'stored', authorization_code: null, card: null, processor_reference: null, reason: null });
    const after = h.handled((m) => m.type === 'progress');
    await t.progress(c.id, 'reading');
    await after;
    expect(t.count('result_ack')).toBe(1);
    expect(row(h, `SELECT COUNT(*) AS n FROM stored_payments`).n).toBe(0);
  });
});

describe.each(['websocket', 'serial'] as const)('the simulator speaks protocol 2 over %s', (transport) => {
  it('stores while offline within its policy, declines what the policy refuses, then forwards as scripted', async () => {
    h = await startHarness('websocket', { terminals: { offline: { max_payment_in_cents: 3_000 } } });
    const body: Record<string, unknown> = { name: `sim ${transport}` };
    let pty: PtyPair | undefined;
    if (transport === 'serial') {
      pty = await openPtyPair();
      cleanups.push(() => pty!.kill());
      Object.assign(body, { transport: 'serial', serial_path: pty.a });
    }
    const trm = (await h.server.api('POST', '/terminals', { body })).body;
    const connect =
      transport === 'serial' ? serialConnector(pty!.b, { ackTimeoutMs: 1_000 }) : webSocketConnector(`${h.server.url.replace('http', 'ws')}/terminals/link`);
    const sim = new TerminalSimulator({
      terminalId: trm.id,
      token: trm.pairing_token,
      connect,
      protocol: 2,
      offline: true,
      delays: { waiting_card: 5, reading: 5, authorizing: 5 },
      reconnectDelayMs: 100,
    });
    cleanups.push(() => sim.stop());
    const policy = sim.waitFor('offline_policy');
    expect(await sim.start()).toMatchObject({ protocol: 2 });
    expect(await policy).toMatchObject({ allowed: true, max_payment_in_cents: 3_000 });

    const charge = async (amount: number) =>
      (
        await h!.server.api('POST', '/terminal_session_commands', {
          body: { terminal_id: trm.id, external_id: `sim-${transport}-${amount}`, amount_in_cents: amount },
        })
      ).body;
    // One at a time: a new command supersedes one the terminal was not handed yet.
    const ids: string[] = [];
    for (const amount of [1000, 2000, 9000]) {
      const id = (await charge(amount)).id as string;
      ids.push(id);
      // Stored (the terminal is done, the outcome is to come) or failed (declined by the policy).
      await expect.poll(async () => ['stored', 'failed'].includes((await h!.get(id)).status), { timeout: 10_000 }).toBe(true);
    }
    expect(await Promise.all(ids.map(async (id) => (await h!.get(id)).checkout_status))).toEqual(['payment_in_progress', 'payment_in_progress', 'failed']);
    expect(sim.storedPayments.size).toBe(2);

    sim.setOffline(false);
    let turn = 0;
    await sim.forward(() => (turn++ === 0 ? 'approved' : 'declined'), { announce: true });
    expect(await Promise.all(ids.slice(0, 2).map(async (id) => (await h!.get(id)).checkout_status))).toEqual(['paid', 'unpaid']);
    expect(await Promise.all(ids.map(async (id) => (await h!.get(id)).status))).toEqual(['consumed', 'failed', 'failed']);
    expect(h.server.daemon.ctx.db.prepare(`SELECT status FROM stored_payments WHERE terminal_id = ? ORDER BY seq`).all(trm.id)).toEqual([
      { status: 'approved' },
      { status: 'declined' },
    ]);
  });
});
