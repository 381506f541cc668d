import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { tx } from '../../src/db/database.js';
import { accountsModule } from '../../src/modules/accounts/index.js';
import { createWebhooksModule } from '../../src/modules/webhooks/index.js';

// The delivery rows of an event are written in the transaction that writes the event (the outbox's
// emit hook, docs/webhooks.md "Event to first attempt"): they commit and roll back with it; a
// fan-out that fails there, or an event behind others past the cursor, is left to the worker's pass.

let s: TestServer;
let server: Server;
let url: string;
const received: IncomingMessage[] = [];
let onArrive: (() => void) | undefined;

function emitIn(fn?: () => void): { id: string; seq: number } {
  return tx(s.daemon.ctx.db, () => {
    const ev = s.daemon.ctx.outbox.emit({ type: 'intent.succeeded', accountId: s.installation.sandbox_id, liveMode: false, payload: { id: 'in_1' } });
    fn?.();
    return { id: ev.id, seq: ev.seq };
  });
}

const rowsOf = (eventId: string) =>
  s.daemon.ctx.db.prepare('SELECT seq, status FROM webhook_deliveries WHERE event_id = ? ORDER BY seq').all(eventId) as Array<{ seq: number; status: string }>;
const cursor = () => s.daemon.ctx.db.prepare('SELECT seq FROM webhook_cursor').pluck().get() as number;

function arrivalOf(eventId: string): Promise<void> {
  return new Promise((resolve) => {
    const check = () => {
      if (received.some((r) => r.headers['webhook-id'] === eventId)) {
        onArrive = undefined;
        resolve();
      }
    };
    onArrive = check;
    check();
  });
}

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received.push(req);
      res.end('ok');
      onArrive?.();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  s = await startTestServer({ config: { webhooks: { allow_cidrs: ['127.0.0.1/32'] } }, modules: [accountsModule, createWebhooksModule()] });
  const res = await s.api('POST', '/webhook_endpoints', { key: s.installation.keys.test, body: { url } });
  expect(res.status).toBe(201);
});

afterAll(async () => {
  await s.stop();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('fan-out in the emitting transaction', () => {
  it("writes the event's delivery row and moves the cursor inside the emitting transaction, then sends it", async () => {
    let inside: Array<{ seq: number; status: string }> = [];
    const ev = emitIn(() => (inside = rowsOf(lastEventId())));
    expect(inside).toHaveLength(1);
    expect(inside[0].status).toBe('pending');
    expect(cursor()).toBe(ev.seq);
    await arrivalOf(ev.id);
    expect(received.filter((r) => r.headers['webhook-id'] === ev.id)).toHaveLength(1);
  });

  it('rolls the rows and the cursor back with an emitting transaction that fails', async () => {
    const before = cursor();
    let id = '';
    expect(() =>
      emitIn(() => {
        id = lastEventId();
        expect(rowsOf(id)).toHaveLength(1);
        throw new Error('the change fails');
      }),
    ).toThrow('the change fails');
    expect(s.daemon.ctx.outbox.get(id)).toBeUndefined();
    expect(rowsOf(id)).toHaveLength(0);
    expect(cursor()).toBe(before);
    // The next event is fanned out and sent as usual.
    const ev = emitIn();
    expect(rowsOf(ev.id)).toHaveLength(1);
    await arrivalOf(ev.id);
  });

  it('moves the cursor alone (no endpoint takes the event) with the emitting transaction, and back with it', () => {
    const live = () => s.daemon.ctx.outbox.emit({ type: 'intent.succeeded', accountId: s.installation.account_id, liveMode: true, payload: { id: 'in_live' } });
    let inside = 0;
    const ev = tx(s.daemon.ctx.db, () => {
      const e = live();
      inside = cursor();
      return e;
    });
    expect(inside).toBe(ev.seq);
    expect(rowsOf(ev.id)).toHaveLength(0);
    expect(cursor()).toBe(ev.seq);
    expect(() =>
      tx(s.daemon.ctx.db, () => {
        live();
        expect(cursor()).toBeGreaterThan(ev.seq);
        throw new Error('the change fails');
      }),
    ).toThrow('the change fails');
    expect(cursor()).toBe(ev.seq);
  });

  it('commits the event when its fan-out fails there, and the pass fans it out once', async () => {
    const db = s.daemon.ctx.db;
    db.exec(`CREATE TEMP TRIGGER refuse_deliveries BEFORE INSERT ON main.webhook_deliveries BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`);
    let ev: { id: string; seq: number };
    try {
      ev = emitIn();
    } finally {
      db.exec('DROP TRIGGER temp.refuse_deliveries');
    }
    expect(s.daemon.ctx.outbox.get(ev.id)).toBeDefined();
    expect(cursor()).toBeLessThan(ev.seq);
    await arrivalOf(ev.id);
    expect(rowsOf(ev.id)).toHaveLength(1);
    expect(received.filter((r) => r.headers['webhook-id'] === ev.id)).toHaveLength(1);
  });

  it('leaves an event behind others past the cursor (another process wrote them) to the pass, in event order', async () => {
    const db = s.daemon.ctx.db;
    // As `posd` commands write events: straight into the table, with no hook of this process.
    db.prepare(
      `INSERT INTO events (id, account_id, live_mode, type, object_id, payload, created_at) VALUES ('msg_elsewhere00000001', ?, 0, 'intent.succeeded', NULL, '{"id":"in_2"}', ?)`,
    ).run(s.installation.sandbox_id, new Date().toISOString());
    const ev = emitIn(() => expect(rowsOf(lastEventId())).toHaveLength(0));
    await arrivalOf(ev.id);
    await arrivalOf('msg_elsewhere00000001');
    const [first] = rowsOf('msg_elsewhere00000001');
    const [second] = rowsOf(ev.id);
    expect(first.seq).toBeLessThan(second.seq);
    expect(cursor()).toBe(ev.seq);
  });
});

describe('a bulk write', () => {
  it('fans out the first 16 events of a turn with their transaction and leaves the rest to the pass, each delivered once', async () => {
    const db = s.daemon.ctx.db;
    let inside = 0;
    const events = tx(db, () => {
      const evs = Array.from({ length: 40 }, (_, i) =>
        s.daemon.ctx.outbox.emit({ type: 'intent.succeeded', accountId: s.installation.sandbox_id, liveMode: false, payload: { id: `in_bulk_${i}` } }),
      );
      inside = db.prepare(`SELECT COUNT(*) FROM webhook_deliveries WHERE event_seq >= ?`).pluck().get(evs[0].seq) as number;
      return evs;
    });
    expect(inside).toBe(16);
    for (const ev of events) await arrivalOf(ev.id);
    for (const ev of events) {
      expect(rowsOf(ev.id)).toHaveLength(1);
      expect(received.filter((r) => r.headers['webhook-id'] === ev.id)).toHaveLength(1);
    }
  });
});

function lastEventId(): string {
  return s.daemon.ctx.db.prepare('SELECT id FROM events ORDER BY seq DESC LIMIT 1').pluck().get() as string;
}
