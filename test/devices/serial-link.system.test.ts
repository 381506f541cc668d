/**
 * The serial transport over a real pseudo-terminal pair (socat). posd's link sits on one end; the
 * other end is either a second link or a raw port the test drives byte by byte.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ACK_BYTE,
  encodeFrame,
  FrameParser,
  LinkError,
  ManualClock,
  NAK,
  NAK_BYTE,
  openSerialPort,
  serverLinkFromPort,
  terminalLinkFromPort,
  type FrameToken,
  type LinkDown,
  type LinkInvalid,
  type PortStream,
  type ServerLink,
  type TerminalMessage,
} from '../../devices/index.js';
import { collect, next } from './helpers/events.js';
import { openPtyPair, type PtyPair } from './helpers/pty-pair.js';

let pty: PtyPair;
const opened: { close?: (cb?: () => void) => void; isOpen?: boolean }[] = [];

async function open(path: string): Promise<PortStream> {
  const port = await openSerialPort({ path });
  opened.push(port);
  return port;
}

/** The far end driven by hand: every token it receives, and a way to write raw bytes. */
async function rawPeer(path: string) {
  const port = await open(path);
  const parser = new FrameParser();
  port.on('data', (d: Buffer) => parser.write(d));
  const tokens = collect<FrameToken>(parser, 'data');
  const frames = () => tokens.filter((t) => t.kind === 'frame').map((t) => JSON.parse((t as { payload: Buffer }).payload.toString()));
  const write = (b: Buffer) => new Promise<void>((r) => port.write(b, () => r()));
  return { port, parser, tokens, frames, write };
}

beforeEach(async () => {
  pty = await openPtyPair();
});

afterEach(async () => {
  for (const p of opened.splice(0)) if (p.isOpen) await new Promise<void>((r) => p.close!(() => r()));
  await pty.kill();
});

const ack: TerminalMessage = { type: 'ack', command_id: 'c-1' };

describe('serial link over a pty pair', () => {
  it('delivers frames both ways; send resolves on the ACK', async () => {
    const server = serverLinkFromPort(await open(pty.a), { pingIntervalMs: 0 });
    const terminal = terminalLinkFromPort(await open(pty.b), { pingIntervalMs: 0 });
    const got = next(server, 'message');
    await terminal.send(ack);
    expect(await got).toEqual(ack);
    const back = next(terminal, 'message');
    await server.send({ type: 'status_request', command_id: 'c-1' });
    expect(await back).toEqual({ type: 'status_request', command_id: 'c-1' });
    // Several sends queue behind one another (stop-and-wait) and all arrive in order.
    const seen = collect<TerminalMessage>(server, 'message');
    await Promise.all(['a', 'b', 'c'].map((id) => terminal.send({ type: 'ack', command_id: id })));
    await expect.poll(() => seen.map((m) => (m as { command_id: string }).command_id)).toEqual(['a', 'b', 'c']);
  });

  it('answers ACK to a good frame and NAK to a corrupted one, and reports it', async () => {
    const server = serverLinkFromPort(await open(pty.a), { pingIntervalMs: 0 });
    const peer = await rawPeer(pty.b);
    const invalid = next<LinkInvalid>(server, 'invalid');
    const bad = encodeFrame(ack);
    bad[4] ^= 0x20; // flip a bit inside the JSON
    await peer.write(bad);
    await expect.poll(() => peer.tokens).toEqual([{ kind: 'nak' }]);
    expect((await invalid).framing).toMatchObject({ badLrc: true });
    const msg = next(server, 'message');
    await peer.write(encodeFrame(ack)); // the sender's resend
    expect(await msg).toEqual(ack);
    await expect.poll(() => peer.tokens).toEqual([{ kind: 'nak' }, { kind: 'ack' }]);
  });

  it('resends after a NAK and resolves when the resend is acknowledged', async () => {
    const server = serverLinkFromPort(await open(pty.a), { pingIntervalMs: 0 });
    const peer = await rawPeer(pty.b);
    let answered = 0;
    peer.parser.on('data', (t: FrameToken) => {
      if (t.kind === 'frame') void peer.write(answered++ === 0 ? NAK_BYTE : ACK_BYTE);
    });
    await server.send({ type: 'cancel', command_id: 'c-9' });
    expect(peer.frames()).toEqual([
      { type: 'cancel', command_id: 'c-9' },
      { type: 'cancel', command_id: 'c-9' },
    ]);
    expect(server.isDown).toBe(false);
  });

  it('resends 3 times without an answer, then goes down and rejects pending sends', async () => {
    const clock = new ManualClock();
    const server = serverLinkFromPort(await open(pty.a), { clock, pingIntervalMs: 0 });
    const peer = await rawPeer(pty.b); // silent: never answers
    const down = next<LinkDown>(server, 'down');
    const first = server.send({ type: 'cancel', command_id: 'c-1' }).catch((e) => e);
    const queued = server.send({ type: 'cancel', command_id: 'c-2' }).catch((e) => e);
    await expect.poll(() => peer.frames().length).toBe(1);
    for (let resend = 1; resend <= 3; resend++) {
      clock.advance(1_999);
      expect(peer.frames().length).toBe(resend); // nothing before the 2 s are up
      clock.advance(1);
      await expect.poll(() => peer.frames().length).toBe(resend + 1);
    }
    expect(server.isDown).toBe(false);
    clock.advance(2_000);
    expect(await down).toMatchObject({ noAck: true });
    const err = await first;
    expect(err).toBeInstanceOf(LinkError);
    expect(err).toMatchObject({ linkDown: true, noAck: true });
    expect(await queued).toMatchObject({ linkDown: true });
    // The queued frame never left: stop-and-wait holds it behind the unacknowledged one.
    expect(peer.frames().every((f) => f.command_id === 'c-1')).toBe(true);
  });

  it('counts a NAK as a failed attempt too', async () => {
    const server = serverLinkFromPort(await open(pty.a), { pingIntervalMs: 0 });
    const peer = await rawPeer(pty.b);
    peer.parser.on('data', (t: FrameToken) => {
      if (t.kind === 'frame') void peer.write(Buffer.from([NAK]));
    });
    const err = await server.send(ack as never).catch((e) => e);
    expect(err).toMatchObject({ linkDown: true, noAck: true });
    expect(peer.frames()).toHaveLength(4); // the first transmission and 3 resends
  });

  it('acknowledges valid frames carrying malformed JSON but reports them as invalid', async () => {
    const server: ServerLink = serverLinkFromPort(await open(pty.a), { pingIntervalMs: 0 });
    const peer = await rawPeer(pty.b);
    const invalid = collect<LinkInvalid>(server, 'invalid');
    const { framePayload } = await import('../../devices/index.js');
    await peer.write(framePayload(Buffer.from('{"type":')));
    await peer.write(Buffer.from('line noise'));
    await peer.write(encodeFrame({ type: 'weather', sunny: true }));
    await peer.write(encodeFrame(ack));
    await next(server, 'message');
    expect(invalid.map((i) => i.reason ?? Object.keys(i.framing ?? {})[0])).toEqual(['malformed_json', 'garbage', 'unknown_type']);
    await expect.poll(() => peer.tokens.map((t) => t.kind)).toEqual(['ack', 'ack', 'ack']);
  });
});
