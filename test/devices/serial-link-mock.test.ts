/**
 * The serial link's byte-level contract again, on @serialport/binding-mock (the pty suite is the
 * real thing; this one needs no socat and pins exact bytes written).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ACK, encodeFrame, ManualClock, mockSerialBinding, NAK, openMockSerialPort, serverLinkFromPort, type LinkDown } from '../../devices/index.js';
import { next } from './helpers/events.js';

afterEach(() => mockSerialBinding.reset());

async function mockLink(clock = new ManualClock()) {
  mockSerialBinding.createPort('/dev/ttyMOCK', { record: true });
  const port = await openMockSerialPort({ path: '/dev/ttyMOCK' });
  const binding = (port as unknown as { port: { emitData(d: Buffer): void; recording: Buffer; lastWrite: Buffer | null } }).port;
  const link = serverLinkFromPort(port, { clock, pingIntervalMs: 0 });
  const written = async (n: number) => {
    await expect.poll(() => binding.recording.length).toBeGreaterThanOrEqual(n);
    return binding.recording;
  };
  return { link, binding, clock, written };
}

describe('serial link on the mock binding', () => {
  it('writes ACK after a good frame and NAK after a bad one', async () => {
    const { link, binding, written } = await mockLink();
    const msg = next(link, 'message');
    binding.emitData(encodeFrame({ type: 'ack', command_id: 'x' }));
    expect(await msg).toEqual({ type: 'ack', command_id: 'x' });
    const bad = encodeFrame({ type: 'ack', command_id: 'y' });
    bad[bad.length - 1] ^= 1;
    binding.emitData(bad);
    expect([...(await written(2))]).toEqual([ACK, NAK]);
  });

  it('writes the exact frame, resends it on NAK, resolves on ACK', async () => {
    const { link, binding, written } = await mockLink();
    const frame = encodeFrame({ type: 'cancel', command_id: 'c' });
    const sent = link.send({ type: 'cancel', command_id: 'c' });
    await written(frame.length);
    binding.emitData(Buffer.from([NAK]));
    expect(Buffer.compare(await written(frame.length * 2), Buffer.concat([frame, frame]))).toBe(0);
    binding.emitData(Buffer.from([ACK]));
    await sent;
  });

  it('goes down after 3 silent resends (8 s on the injected clock)', async () => {
    const { link, clock, written } = await mockLink();
    const frame = encodeFrame({ type: 'ping' });
    const down = next<LinkDown>(link, 'down');
    const sent = link.send({ type: 'ping' }).catch((e) => e);
    for (let n = 1; n <= 4; n++) {
      await written(frame.length * n);
      clock.advance(2_000);
    }
    expect(await down).toMatchObject({ noAck: true });
    expect(await sent).toMatchObject({ linkDown: true, noAck: true });
  });
});
