/** Issue 32: a paired terminal that floods its link is slowed, then closed (code 4008) with one log line; the box keeps answering. */
import { Writable } from 'node:stream';
import pino from 'pino';
import WebSocket from 'ws';
import { afterEach, expect, it } from 'vitest';
import { LINK_CLOSE_FLOOD } from '../../devices/index.js';
import { startTestServer } from '../helpers/server.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

it('a flooding terminal is closed with 4008 and one log line while GET /api/account keeps answering', async () => {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l));
      done();
    },
  });
  const s = await startTestServer({
    log: pino({ level: 'info' }, sink),
    config: { terminals: { ping_interval_ms: 0, link_frames_per_second: 50, link_bytes_per_second: 64 * 1024, link_close_after_s: 2 } },
  });
  cleanups.push(() => s.stop());
  const trm = (await s.api('POST', '/terminals', { body: { name: 'Flooder' } })).body;
  const ws = new WebSocket(`${s.url.replace('http', 'ws')}/terminals/link`);
  cleanups.push(() => ws.terminate());
  const welcomed = new Promise<void>((resolve) => ws.on('message', (d) => JSON.parse(String(d)).type === 'welcome' && resolve()));
  await new Promise((r) => ws.once('open', r));
  ws.send(
    JSON.stringify({
      type: 'hello',
      terminal_id: trm.id,
      token: trm.pairing_token,
      model: 'raw',
      firmware: '0.1',
      protocol: 1,
      current_command_id: null,
      unacknowledged_results: [],
    }),
  );
  await welcomed;
  await expect.poll(async () => (await s.api('GET', `/terminals/${trm.id}`)).body.availability, { timeout: 10_000 }).toBe('available');

  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
  let open = true;
  void closed.then(() => (open = false));
  // Valid pings and garbage, as fast as the socket takes them, until posd closes the link.
  const flood = (async () => {
    let n = 0;
    while (open) {
      for (let i = 0; i < 200 && ws.readyState === WebSocket.OPEN; i++) ws.send(n++ % 2 ? '{"type":"ping"}' : 'not json at all');
      await new Promise((r) => setImmediate(r));
    }
    return n;
  })();
  let answered = 0;
  while (open) {
    const r = await s.api('GET', '/account');
    expect(r.status).toBe(200);
    answered++;
  }
  expect(await closed).toBe(LINK_CLOSE_FLOOD);
  expect(await flood).toBeGreaterThan(100);
  expect(answered).toBeGreaterThan(0);
  expect((await s.api('GET', '/account')).status).toBe(200);
  await expect.poll(async () => (await s.api('GET', `/terminals/${trm.id}`)).body.availability, { timeout: 10_000 }).toBe('unavailable');
  expect(lines.filter((l) => l.event === 'terminal.link_flooded')).toHaveLength(1);
  // Garbage within the budget is logged once per 10 s per link, not once per frame.
  expect(lines.filter((l) => l.msg === 'malformed terminal message ignored').length).toBeLessThanOrEqual(2);
}, 60_000);
