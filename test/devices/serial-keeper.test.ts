/** Reopening with back-off, on @serialport/binding-mock so a port can vanish and come back. */
import { afterEach, describe, expect, it } from 'vitest';
import { keepServerSerialLink, ManualClock, mockSerialBinding as MockBinding, openMockSerialPort, type ServerLink } from '../../devices/index.js';
import { collect, next } from './helpers/events.js';

afterEach(() => MockBinding.reset());

const settle = () => new Promise((r) => setImmediate(r));

describe('SerialKeeper', () => {
  it('retries a missing port with doubling, bounded delays, then hands out a link', async () => {
    const clock = new ManualClock();
    const keeper = keepServerSerialLink({
      path: '/dev/ttyTERM0',
      open: openMockSerialPort,
      clock,
      pingIntervalMs: 0,
      backoff: { initialMs: 100, maxMs: 400 },
    });
    const failures = collect<{ retryInMs: number }>(keeper, 'openFailed');
    keeper.start();
    await expect.poll(() => failures.length).toBe(1);
    for (const [i, ms] of [100, 200, 400].entries()) {
      clock.advance(ms - 1);
      await settle();
      expect(failures).toHaveLength(i + 1); // not retried early
      clock.advance(1);
      await expect.poll(() => failures.length).toBe(i + 2);
    }
    await expect.poll(() => failures.map((f) => f.retryInMs)).toEqual([100, 200, 400, 400]);
    MockBinding.createPort('/dev/ttyTERM0');
    const link = next<ServerLink>(keeper, 'link');
    clock.advance(400);
    expect((await link).transport).toBe('serial');
    expect(keeper.link).toBe(await link);
    await keeper.stop();
    expect((await link).isDown).toBe(true);
  });

  it('reopens after the port closes under the link, and stops for good on stop()', async () => {
    MockBinding.createPort('/dev/ttyTERM1');
    const clock = new ManualClock();
    const keeper = keepServerSerialLink({
      path: '/dev/ttyTERM1',
      open: openMockSerialPort,
      clock,
      pingIntervalMs: 0,
      backoff: { initialMs: 50, maxMs: 1_000 },
    });
    const links = collect<ServerLink>(keeper, 'link');
    keeper.start();
    await expect.poll(() => links.length).toBe(1);
    // Close the port beneath the link, as an unplugged adapter would.
    const port = (links[0] as unknown as { port: { close: (cb: () => void) => void } }).port;
    await new Promise<void>((r) => port.close(() => r()));
    expect(await links[0].whenDown).toMatchObject({ disconnected: true });
    await settle();
    clock.advance(49);
    await settle();
    expect(links).toHaveLength(1);
    clock.advance(1);
    await expect.poll(() => links.length).toBe(2);
    expect(links[1].isDown).toBe(false);
    await keeper.stop();
    clock.advance(10_000);
    await settle();
    expect(links).toHaveLength(2);
  });
});
