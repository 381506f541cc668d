import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock, framePayload, type PortStream } from '../../devices/index.js';
import { startHarness, type Harness } from './helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

/** How many `terminal_payment` sync records a command's checkout has. */
async function terminalPayments(h: Harness, commandId: string): Promise<number> {
  const checkoutId = (await h.get(commandId)).checkout_id;
  return (h.server.daemon.ctx.db.prepare(`SELECT payload FROM sync_outbox WHERE kind = 'terminal_payment'`).all() as Array<{ payload: string }>).filter(
    (r) => JSON.parse(r.payload).checkout.id === checkoutId,
  ).length;
}

describe('malformed messages never crash nor change a command', () => {
  it.each(['websocket', 'serial'] as const)('over %s', async (transport) => {
    h = await startHarness(transport);
    // A second terminal's command: the first terminal must not be able to touch it.
    const other = await h.server.api('POST', '/terminals', { body: { name: 'Other' } });
    const foreign = await h.server.api('POST', '/terminal_session_commands', {
      body: { terminal_id: other.body.id, external_id: 'foreign-1', amount_in_cents: 900 },
    });
    const created = await h.charge();
    const id = created.body.id;
    await h.terminal.next('charge');
    const before = await h.get(id);

    const junk = [
      'not json at all',
      '[1,2,3]',
      '{"no_type":true}',
      '{"type":"teleport","command_id":"x"}',
      `{"type":"result","command_id":"${id}","outcome":"maybe"}`,
      `{"type":"result","command_id":42,"outcome":"approved"}`,
      `{"type":"ack"}`,
      '{"type":"hello","terminal_id":5}',
    ];
    for (const text of junk) {
      await h.terminal.link.writeRaw(transport === 'serial' ? framePayload(Buffer.from(text)) : text);
    }
    if (transport === 'serial') {
      await h.terminal.link.writeRaw(Buffer.from([0xff, 0x00, 0x41, 0x03, 0x15]));
      const bad = framePayload(Buffer.from(`{"type":"result","command_id":"${id}","outcome":"approved"}`));
      bad[bad.length - 1] ^= 0xff; // wrong LRC: NAKed, never applied
      await h.terminal.link.writeRaw(bad);
    }
    // Well-formed messages about commands this terminal does not have.
    await h.terminal.result('tsc_doesnotexist00', 'approved');
    await h.terminal.result(foreign.body.id, 'approved');
    const lastJunk = h.handled((m) => m.type === 'ack');
    await h.terminal.ack(foreign.body.id);
    await lastJunk;
    expect(await h.get(id)).toEqual(before);

    // The link is still up and in order: a valid message after the junk is handled normally.
    const progressed = h.handled((m) => m.type === 'progress');
    await h.terminal.progress(id, 'reading');
    await progressed;
    expect((await h.get(id)).status).toBe('dispatched');
    expect(await h.get(foreign.body.id)).toMatchObject({ status: 'pending', final: false });
    expect(h.terminal.count('result_ack')).toBe(0);
    expect((await terminalPayments(h, id)) + (await terminalPayments(h, foreign.body.id))).toBe(0);
    expect((await h.server.api('GET', '/test')).status).toBe(200);
  });
});

describe('serial framing', () => {
  it('a corrupted frame is NAKed, resent, and applied exactly once', async () => {
    // The terminal side's ack timer never fires on this clock: a resend can only come from a NAK.
    const terminalClock = new ManualClock();
    let resultWrites = 0;
    let corrupted = false;
    const wrap = (port: PortStream) => {
      const write = port.write.bind(port) as (chunk: unknown, ...rest: unknown[]) => boolean;
      (port as { write: unknown }).write = (chunk: unknown, ...rest: unknown[]) => {
        if (Buffer.isBuffer(chunk) && chunk.includes('"type":"result"')) {
          resultWrites++;
          if (!corrupted) {
            corrupted = true;
            const bad = Buffer.from(chunk);
            bad[10] ^= 0x20; // one flipped bit inside the JSON
            return write(bad, ...rest);
          }
        }
        return write(chunk, ...rest);
      };
      return port;
    };
    h = await startHarness('serial', { terminalLink: { clock: terminalClock, wrap } });
    const created = await h.charge();
    const id = created.body.id;
    await h.terminal.next('charge');
    await h.terminal.ack(id);
    await h.terminal.result(id, 'approved');
    await h.terminal.next('result_ack');
    expect(resultWrites).toBe(2);
    expect(await h.get(id)).toMatchObject({ status: 'consumed', final: true });
    expect(await terminalPayments(h, id)).toBe(1);
  });
});

describe('a terminal that never answers', () => {
  it('stays undecided and is asked for its status after each dispatch timeout', async () => {
    const clock = new ManualClock(Date.parse('2026-03-01T12:00:00.000Z'));
    h = await startHarness('websocket', { clock, terminals: { dispatch_timeout_ms: 60_000 } });
    const created = await h.charge();
    const id = created.body.id;
    await h.terminal.next('charge');
    clock.advance(59_999);
    await h.server.api('GET', '/test'); // let the event loop turn: nothing is due yet
    expect(h.terminal.count('status_request')).toBe(0);
    clock.advance(1);
    expect((await h.terminal.next('status_request')).command_id).toBe(id);
    clock.advance(60_000);
    await h.terminal.next('status_request');
    expect(await h.get(id)).toMatchObject({ status: 'pending', final: false });

    const acked = h.handled((m) => m.type === 'ack');
    await h.terminal.ack(id);
    await acked;
    clock.advance(10 * 60_000);
    await h.terminal.next('status_request');
    const cancel = await h.server.api('DELETE', `/terminal_session_commands/${id}`);
    expect(cancel.status).toBe(202);
    clock.advance(60 * 60_000);
    await h.terminal.next('status_request');
    // An hour of silence later it is still not decided: the card may have been charged.
    expect(await h.get(id)).toMatchObject({ status: 'cancel_requested', final: false, canceled_at: null });
  });

  it('answers a status request: progress keeps it open, unknown_command on a taken command fails it', async () => {
    const clock = new ManualClock(Date.parse('2026-03-01T12:00:00.000Z'));
    h = await startHarness('websocket', { clock, terminals: { dispatch_timeout_ms: 1_000 } });
    const id = (await h.charge()).body.id;
    await h.terminal.next('charge');
    await h.terminal.ack(id);
    clock.advance(1_000);
    await h.terminal.next('status_request');
    const progressed = h.handled((m) => m.type === 'progress');
    await h.terminal.progress(id, 'reading');
    await progressed;
    expect((await h.get(id)).status).toBe('dispatched');
    clock.advance(1_000);
    await h.terminal.next('status_request');
    await h.terminal.result(id, 'error', { reason: 'unknown_command' });
    await h.terminal.next('result_ack');
    expect(await h.get(id)).toMatchObject({ status: 'failed', final: true });
  });

  it('unknown_command for a charge it never took: offered again, not failed', async () => {
    const clock = new ManualClock(Date.parse('2026-03-01T12:00:00.000Z'));
    h = await startHarness('websocket', { clock, terminals: { dispatch_timeout_ms: 1_000 } });
    const id = (await h.charge()).body.id;
    await h.terminal.next('charge');
    clock.advance(1_000);
    await h.terminal.next('status_request');
    await h.terminal.result(id, 'error', { reason: 'unknown_command' });
    await h.terminal.next('charge', (c) => c.command_id === id);
    expect(await h.get(id)).toMatchObject({ status: 'pending', final: false });
  });
});
