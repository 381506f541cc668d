import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import type { AddressInfo } from 'node:net';
import {
  connectWebSocketLink,
  LinkError,
  ManualClock,
  serverLinkFromWebSocket,
  type LinkDown,
  type LinkInvalid,
  type ServerLink,
  type TerminalMessage,
} from '../../devices/index.js';
import { next } from './helpers/events.js';

let wss: WebSocketServer;
let url: string;
let clock: ManualClock;
let accepted: Promise<ServerLink>;

beforeEach(async () => {
  clock = new ManualClock(Date.parse('2026-01-01T00:00:00Z'));
  wss = new WebSocketServer({ port: 0, path: '/terminals/link' });
  await new Promise((r) => wss.once('listening', r));
  url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/terminals/link`;
  accepted = new Promise((resolve) => wss.once('connection', (ws) => resolve(serverLinkFromWebSocket(ws, { clock }))));
});

afterEach(async () => {
  for (const c of wss.clients) c.terminate();
  await new Promise((r) => wss.close(r));
});

const hello: TerminalMessage = {
  type: 'hello',
  terminal_id: 't1',
  token: 'secret',
  model: 'sim',
  firmware: '1.0',
  protocol: 1,
  current_command_id: null,
  unacknowledged_results: [],
};

describe('WebSocket link', () => {
  it('carries validated messages both ways', async () => {
    const client = await connectWebSocketLink(url, { pingIntervalMs: 0 });
    const server = await accepted;
    const got = next<TerminalMessage>(server, 'message');
    await client.send(hello);
    expect(await got).toEqual(hello);
    const back = next(client, 'message');
    await server.send({ type: 'cancel', command_id: 'c1' });
    expect(await back).toEqual({ type: 'cancel', command_id: 'c1' });
    await client.close();
  });

  it('reports malformed input as invalid and keeps the link up', async () => {
    const client = await connectWebSocketLink(url, { pingIntervalMs: 0 });
    const server = await accepted;
    const invalid: LinkInvalid[] = [];
    server.on('invalid', (i) => invalid.push(i));
    const good = next<TerminalMessage>(server, 'message');
    await client.writeRaw('{not json');
    await client.writeRaw('{"type":"frobnicate"}');
    await client.writeRaw('{"type":"progress","command_id":"c1","stage":"dancing"}');
    await client.writeRaw('[1,2]');
    await client.send({ type: 'ack', command_id: 'c1' });
    expect(await good).toEqual({ type: 'ack', command_id: 'c1' });
    expect(invalid.map((i) => i.reason)).toEqual(['malformed_json', 'unknown_type', 'invalid_fields', 'not_an_object']);
    expect(invalid[2].detail).toMatch(/\/stage/);
    expect(server.isDown).toBe(false);
  });

  it('a link answers pings, and answered pings keep the link up', async () => {
    const client = await connectWebSocketLink(url, { pingIntervalMs: 0 });
    const server = await accepted;
    for (let i = 1; i <= 5; i++) {
      await clock.advanceAsync(10_000);
      // Each pong counts as a received message on the server side.
      await expect.poll(() => server.messagesReceived).toBe(i);
    }
    expect(server.isDown).toBe(false);
    await client.close();
  });

  it('declares the link down after three unanswered pings', async () => {
    const raw = new WebSocket(url);
    const pings: string[] = [];
    raw.on('message', (d) => pings.push(d.toString()));
    const server = await accepted;
    const down = next<LinkDown>(server, 'down');
    const closed = new Promise((r) => raw.once('close', r));
    for (let i = 1; i <= 3; i++) {
      await clock.advanceAsync(10_000);
      await expect.poll(() => pings.length).toBe(i);
    }
    expect(server.isDown).toBe(false);
    await clock.advanceAsync(10_000);
    expect(await down).toMatchObject({ missedPings: true });
    expect(pings).toEqual(Array(3).fill('{"type":"ping"}'));
    await closed;
  });

  it('goes down with disconnected when the peer closes, and send then rejects', async () => {
    const client = await connectWebSocketLink(url, { pingIntervalMs: 0 });
    const server = await accepted;
    const down = next<LinkDown>(server, 'down');
    await client.close();
    expect(await down).toMatchObject({ disconnected: true });
    const err = await server.send({ type: 'ping' }).catch((e) => e);
    expect(err).toBeInstanceOf(LinkError);
    expect(err.linkDown).toBe(true);
  });

  it('holds messages that arrive before anyone listens', async () => {
    const client = await connectWebSocketLink(url, { pingIntervalMs: 0 });
    const server = await accepted;
    await client.send({ type: 'ack', command_id: 'early' });
    await expect.poll(() => server.messagesReceived).toBe(1);
    expect(await next(server, 'message')).toEqual({ type: 'ack', command_id: 'early' });
  });
});
