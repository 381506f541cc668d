/**
 * The simulator end to end over both real transports, against a minimal posd stand-in.
 * WebSocket: a ws server on port 0. Serial: a socat pty pair, posd's end held by a SerialKeeper.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import type { AddressInfo } from 'node:net';
import { keepServerSerialLink, serverLinkFromWebSocket } from '../../devices/index.js';
import { serialConnector, TerminalSimulator, webSocketConnector, type SimulatorOptions } from '../../devices/simulator/index.js';
import { charge, MiniPosd } from './helpers/mini-posd.js';
import { openPtyPair } from './helpers/pty-pair.js';

type Setup = { posd: MiniPosd; sim: TerminalSimulator };
const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Both sides agree the session is open: the terminal got welcome and posd finished its hello. */
async function started(posd: MiniPosd, sim: TerminalSimulator): Promise<void> {
  const hello = posd.waitFor('hello');
  await sim.start();
  await hello;
}

const FAST = { waiting_card: 30, reading: 30, authorizing: 30 };

async function viaWebSocket(simOpts: Partial<SimulatorOptions>, token = 'good'): Promise<Setup> {
  const posd = new MiniPosd();
  const wss = new WebSocketServer({ port: 0 });
  await new Promise((r) => wss.once('listening', r));
  wss.on('connection', (ws) => posd.attach(serverLinkFromWebSocket(ws, { pingIntervalMs: 0 })));
  const url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/terminals/link`;
  const sim = new TerminalSimulator({
    terminalId: 'T-1',
    token,
    delays: FAST,
    reconnectDelayMs: 100,
    connect: webSocketConnector(url, { pingIntervalMs: 0 }),
    ...simOpts,
  });
  cleanups.push(async () => {
    for (const c of wss.clients) c.terminate();
    await new Promise((r) => wss.close(r));
  });
  cleanups.push(() => sim.stop());
  return { posd, sim };
}

async function viaSerial(simOpts: Partial<SimulatorOptions>, token = 'good'): Promise<Setup> {
  const posd = new MiniPosd();
  const pty = await openPtyPair();
  cleanups.push(() => pty.kill());
  const keeper = keepServerSerialLink({ path: pty.a, pingIntervalMs: 0, backoff: { initialMs: 50 } });
  keeper.on('link', (l) => posd.attach(l));
  keeper.start();
  cleanups.push(() => keeper.stop());
  const sim = new TerminalSimulator({
    terminalId: 'T-1',
    token,
    delays: FAST,
    reconnectDelayMs: 100,
    connect: serialConnector(pty.b, { pingIntervalMs: 0 }),
    ...simOpts,
  });
  cleanups.push(() => sim.stop());
  // posd's end must be open before the terminal speaks, or its hello falls into the void.
  await new Promise((r) => keeper.once('link', r));
  return { posd, sim };
}

describe.each([
  ['websocket', viaWebSocket],
  ['serial', viaSerial],
] as const)('simulator over %s', (_name, setup) => {
  it('approves: ack, three progress stages, result, then forgets it after result_ack', async () => {
    const { posd, sim } = await setup({ behaviour: 'approve' });
    await started(posd, sim);
    const result = posd.waitFor('result');
    const acked = sim.waitFor('result_ack');
    await posd.send(charge('c-1'));
    expect(await result).toMatchObject({ command_id: 'c-1', outcome: 'approved', card: { network: 'visa', last4: '4242' } });
    await acked;
    expect(sim.unacknowledgedResults).toEqual([]);
    const flow = posd.log.filter((m) => m.type !== 'hello').map((m) => (m.type === 'progress' ? m.stage : m.type));
    expect(flow).toEqual(['ack', 'waiting_card', 'reading', 'authorizing', 'result']);
  });

  it('declines', async () => {
    const { posd, sim } = await setup({ behaviour: 'decline' });
    await started(posd, sim);
    const result = posd.waitFor('result');
    await posd.send(charge('c-2'));
    expect(await result).toMatchObject({ outcome: 'declined', reason: 'insufficient_funds', authorization_code: null });
  });

  it('refuses a bad token: start rejects and the simulator does not retry', async () => {
    const { posd, sim } = await setup({}, 'wrong');
    const refused = new Promise((r) => posd.once('refused', r));
    await expect(sim.start()).rejects.toMatchObject({ refused: 'unauthorized' });
    await refused;
    expect(posd.hellos).toHaveLength(0);
  });

  it('confirms a cancel before authorizing with outcome canceled', async () => {
    const { posd, sim } = await setup({ behaviour: 'slow', delays: { waiting_card: 60_000 } });
    await started(posd, sim);
    const waiting = posd.waitFor('progress', (p) => p.stage === 'waiting_card');
    await posd.send(charge('c-3'));
    await waiting;
    const result = posd.waitFor('result');
    await posd.send({ type: 'cancel', command_id: 'c-3' });
    expect(await result).toMatchObject({ command_id: 'c-3', outcome: 'canceled' });
  });

  it('does not confirm a cancel once authorizing: the real outcome follows', async () => {
    const { posd, sim } = await setup({ delays: { waiting_card: 10, reading: 10, authorizing: 400 } });
    await started(posd, sim);
    const authorizing = sim.waitFor('stage', (s) => s.stage === 'authorizing');
    const result = posd.waitFor('result');
    await posd.send(charge('c-4'));
    await authorizing;
    await posd.send({ type: 'cancel', command_id: 'c-4' });
    expect(await result).toMatchObject({ command_id: 'c-4', outcome: 'approved' });
    expect(posd.results.filter((r) => r.command_id === 'c-4')).toHaveLength(1);
  });

  it('ignore_cancel: a cancel while waiting for the card changes nothing', async () => {
    const { posd, sim } = await setup({ behaviour: 'ignore_cancel', delays: { ...FAST, waiting_card: 200 } });
    await started(posd, sim);
    const waiting = posd.waitFor('progress', (p) => p.stage === 'waiting_card');
    const result = posd.waitFor('result');
    const cancelSeen = sim.waitFor('cancel');
    await posd.send(charge('c-5'));
    await waiting;
    await posd.send({ type: 'cancel', command_id: 'c-5' });
    await cancelSeen;
    expect(await result).toMatchObject({ outcome: 'approved' });
  });

  it('answers status_request with progress, the stored result, or unknown_command', async () => {
    const { posd, sim } = await setup({ delays: { waiting_card: 60_000 } });
    await started(posd, sim);
    const waiting = posd.waitFor('progress', (p) => p.stage === 'waiting_card');
    await posd.send(charge('c-6'));
    await waiting;
    const progress = posd.waitFor('progress');
    await posd.send({ type: 'status_request', command_id: 'c-6' });
    expect(await progress).toEqual({ type: 'progress', command_id: 'c-6', stage: 'waiting_card' });
    const canceled = posd.waitFor('result');
    await posd.send({ type: 'cancel', command_id: 'c-6' });
    await canceled;
    const again = posd.waitFor('result');
    await posd.send({ type: 'status_request', command_id: 'c-6' });
    expect(await again).toMatchObject({ command_id: 'c-6', outcome: 'canceled' });
    const unknown = posd.waitFor('result');
    await posd.send({ type: 'status_request', command_id: 'nope' });
    expect(await unknown).toMatchObject({ command_id: 'nope', outcome: 'error', reason: 'unknown_command' });
  });

  it('never_answer: the charge is not acknowledged', async () => {
    const { posd, sim } = await setup({ behaviour: 'never_answer' });
    await started(posd, sim);
    const got = sim.waitFor('charge');
    await posd.send(charge('c-7'));
    await got;
    // Messages on one link are ordered, so once this answer is in, no ack can still be on its way.
    const answer = posd.waitFor('result');
    await posd.send({ type: 'status_request', command_id: 'c-7' });
    expect(await answer).toMatchObject({ outcome: 'error', reason: 'unknown_command' });
    expect(posd.log.some((m) => m.type === 'ack')).toBe(false);
  });

  it('garbage: posd reports every bad input and the charge still completes', async () => {
    const { posd, sim } = await setup({ behaviour: 'garbage' });
    await started(posd, sim);
    const result = posd.waitFor('result');
    await posd.send(charge('c-8'));
    expect(await result).toMatchObject({ outcome: 'approved' });
    const reasons = posd.invalid.map((i) => i.reason ?? Object.keys(i.framing ?? {})[0]);
    expect(reasons).toEqual(expect.arrayContaining(['malformed_json', 'unknown_type', 'invalid_fields']));
    if (_name === 'serial') expect(reasons).toEqual(expect.arrayContaining(['garbage', 'badLrc']));
  });

  it('disconnects while authorizing, then replays the unacknowledged result after reconnecting', async () => {
    const { posd, sim } = await setup({ behaviour: 'disconnect_while_authorizing', reconnectDelayMs: 150 });
    await started(posd, sim);
    const dropped = sim.waitFor('disconnected');
    const rehello = posd.waitFor('hello', (h) => h.unacknowledged_results.length > 0);
    const replayed = posd.waitFor('result');
    const acked = sim.waitFor('result_ack');
    await posd.send(charge('c-9'));
    expect(await dropped).toMatchObject({ closedLocally: true });
    const hello = await rehello;
    expect(hello.unacknowledged_results).toEqual([expect.objectContaining({ command_id: 'c-9', outcome: 'approved' })]);
    expect(await replayed).toMatchObject({ command_id: 'c-9', outcome: 'approved' });
    await acked;
    expect(sim.unacknowledgedResults).toEqual([]);
    expect(posd.log.filter((m) => m.type === 'progress').map((m) => (m as { stage: string }).stage)).toEqual(['waiting_card', 'reading', 'authorizing']);
  });
});
