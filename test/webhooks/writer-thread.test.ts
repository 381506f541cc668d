import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Receiver } from '../helpers/receiver.js';
import { tx } from '../../src/db/database.js';
import { accountsModule } from '../../src/modules/accounts/index.js';
import { createWebhooksModule, deliveryWorkerOf, type DeliveryWorker } from '../../src/modules/webhooks/index.js';
import { ThreadWriter } from '../../src/modules/webhooks/writer.js';

// webhooks.writer_thread: fan-outs and successes are committed by a worker thread with its own
// connection. A thread that dies loses only writes it had not committed: their events are fanned
// out again and their deliveries sent again (same webhook-id), and the next write starts a new thread.
let s: TestServer;
let worker: DeliveryWorker;
const receiver = new Receiver([{ status: 200 }]);

function emit(n: number): string[] {
  return tx(s.daemon.ctx.db, () =>
    Array.from(
      { length: n },
      (_, i) => s.daemon.ctx.outbox.emit({ type: 'intent.succeeded', accountId: s.installation.sandbox_id, liveMode: false, payload: { id: `in_${i}` } }).id,
    ),
  );
}

beforeAll(async () => {
  await receiver.start();
  s = await startTestServer({
    config: { webhooks: { allow_cidrs: ['127.0.0.1/32'], writer_thread: true, concurrency: 4 } },
    modules: [accountsModule, createWebhooksModule()],
  });
  worker = deliveryWorkerOf(s.daemon.ctx)!;
});

afterAll(async () => {
  await s.stop();
  await receiver.stop();
});

describe('webhook writer thread', () => {
  it('is the writer when configured', () => {
    expect(worker.writer).toBeInstanceOf(ThreadWriter);
  });

  it('loses nothing when it dies with writes unanswered, and is started again', async () => {
    const res = await s.api('POST', '/webhook_endpoints', { key: s.installation.keys.test, body: { url: receiver.url } });
    expect(res.status).toBe(201);
    const ids = emit(40);
    await receiver.waitFor(10);
    // Another connection holds the write lock: the thread's commits of the next successes wait on it
    // while the requests go on, so when the thread dies it has writes it has not answered.
    const blocker = new Database(s.daemon.ctx.db.name);
    blocker.prepare('BEGIN IMMEDIATE').run();
    await receiver.waitFor(20);
    const dead = (worker.writer as ThreadWriter).crash();
    blocker.prepare('ROLLBACK').run();
    blocker.close();
    await dead;
    await worker.runDue();

    const rows = s.daemon.ctx.db
      .prepare(
        'SELECT d.event_id, d.status, d.attempts, (SELECT COUNT(*) FROM webhook_attempts a WHERE a.delivery_seq = d.seq) AS recorded FROM webhook_deliveries d',
      )
      .all() as Array<{ event_id: string; status: string; attempts: number; recorded: number }>;
    expect(rows.map((r) => r.event_id).sort()).toEqual([...ids].sort());
    for (const r of rows) {
      expect(r.status).toBe('succeeded');
      // Every attempt counted is an attempt row.
      expect(r.recorded).toBe(r.attempts);
    }
    // Every event arrived, verified, with its own id (some perhaps twice: at least once).
    const wh = new Webhook(res.body.signingSecret);
    const arrived = new Set(receiver.received.map((r) => (wh.verify(r.body, r.headers as Record<string, string>), r.headers['webhook-id'])));
    expect([...arrived].sort()).toEqual([...ids].sort());

    // Deliveries whose success the dead thread had not committed were sent again.
    expect(receiver.received.length).toBeGreaterThan(ids.length);
    // The restarted thread carries on.
    const more = emit(3);
    await worker.runDue();
    const after = s.daemon.ctx.db.prepare(`SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status = 'succeeded'`).get() as { n: number };
    expect(after.n).toBe(ids.length + more.length);
  });
});
