import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import type { AddressInfo } from 'node:net';
import {
  awaitHello,
  connectWebSocketLink,
  HandshakeError,
  ManualClock,
  serverLinkFromWebSocket,
  type Hello,
  type ServerLink,
  type ServerMessage,
} from '../../devices/index.js';
import { next } from './helpers/events.js';

let wss: WebSocketServer;
let url: string;
let clock: ManualClock;
let accepted: Promise<ServerLink>;

beforeEach(async () => {
  clock = new ManualClock(Date.parse('2026-03-04T05:06:07.089Z'));
  wss = new WebSocketServer({ port: 0 });
  await new Promise((r) => wss.once('listening', r));
  url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/terminals/link`;
  accepted = new Promise((resolve) => wss.once('connection', (ws) => resolve(serverLinkFromWebSocket(ws, { clock, pingIntervalMs: 0 }))));
});

afterEach(async () => {
  for (const c of wss.clients) c.terminate();
  await new Promise((r) => wss.close(r));
});

const hello = (token: string, protocol = 1): Hello => ({
  type: 'hello',
  terminal_id: 'T-1',
  token,
  model: 'sim',
  firmware: '1.0',
  protocol,
  current_command_id: null,
  unacknowledged_results: [],
});

const verify = async (h: Hello) => h.terminal_id === 'T-1' && h.token === 'good';

describe('awaitHello', () => {
  it('welcomes a terminal with a good token, stamping server_time from the clock', async () => {
    const client = await connectWebSocketLink(url, { pingIntervalMs: 0 });
    const server = await accepted;
    const result = awaitHello(server, { verify, clock, timeoutMs: 5_000 });
    const answer = next<ServerMessage>(client, 'message');
    await client.send(hello('good'));
    expect((await result).terminal_id).toBe('T-1');
    expect(await answer).toEqual({ type: 'welcome', server_time: '2026-03-04T05:06:07.089Z' });
    expect(server.isDown).toBe(false);
  });

  it('answers error unauthorized to a bad token, then closes', async () => {
    const client = await connectWebSocketLink(url, { pingIntervalMs: 0 });
    const server = await accepted;
    const result = awaitHello(server, { verify, clock }).catch((e) => e);
    const answer = next<ServerMessage>(client, 'message');
    const clientDown = next(client, 'down');
    await client.send(hello('bad'));
    expect(await answer).toMatchObject({ type: 'error', code: 'unauthorized' });
    const err = await result;
    expect(err).toBeInstanceOf(HandshakeError);
    expect(err).toMatchObject({ unauthorized: true, terminalId: 'T-1' });
    expect(await clientDown).toMatchObject({ disconnected: true });
    expect(server.isDown).toBe(true);
  });

  it('treats a throwing verify as a refusal', async () => {
    const client = await connectWebSocketLink(url, { pingIntervalMs: 0 });
    const server = await accepted;
    const result = awaitHello(server, { verify: () => Promise.reject(new Error('db locked')), clock }).catch((e) => e);
    await client.send(hello('good'));
    expect(await result).toMatchObject({ unauthorized: true });
  });

  it('refuses another protocol version', async () => {
    const client = await connectWebSocketLink(url, { pingIntervalMs: 0 });
    const server = await accepted;
    const result = awaitHello(server, { verify, clock }).catch((e) => e);
    const answer = next<ServerMessage>(client, 'message');
    await client.send(hello('good', 0));
    expect(await answer).toMatchObject({ type: 'error', code: 'unsupported_protocol' });
    expect(await result).toMatchObject({ unsupportedProtocol: true });
  });

  it('refuses a first message that is not hello', async () => {
    const client = await connectWebSocketLink(url, { pingIntervalMs: 0 });
    const server = await accepted;
    const result = awaitHello(server, { verify, clock }).catch((e) => e);
    const answer = next<ServerMessage>(client, 'message');
    await client.send({ type: 'ack', command_id: 'x' });
    expect(await answer).toMatchObject({ type: 'error', code: 'hello_required' });
    expect(await result).toMatchObject({ notHello: true });
  });

  it('gives up on a silent terminal after the timeout', async () => {
    const raw = new WebSocket(url);
    const got: string[] = [];
    raw.on('message', (d) => got.push(d.toString()));
    const server = await accepted;
    const result = awaitHello(server, { verify, clock, timeoutMs: 3_000 }).catch((e) => e);
    clock.advance(2_999);
    expect(server.isDown).toBe(false);
    clock.advance(1);
    expect(await result).toMatchObject({ timeout: true });
    await expect.poll(() => got).toEqual([expect.stringContaining('"hello_timeout"')]);
    await expect.poll(() => raw.readyState).toBe(WebSocket.CLOSED);
  });
});
