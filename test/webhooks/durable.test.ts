import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Receiver } from '../helpers/receiver.js';
import { until } from '../helpers/until.js';
import { groupCommit } from '../../src/db/group-commit.js';
import { type SyncFile, walFlusherOf } from '../../src/db/wal-flush.js';
import { accountsModule } from '../../src/modules/accounts/index.js';
import { createWebhooksModule, deliveryWorkerOf } from '../../src/modules/webhooks/index.js';

// A group commit's rows are readable from its commit on, a flush before its writers are answered
// (src/db/wal-flush.ts). A webhook attempt is something leaving the box: it waits for the flush of
// what it read, so a receiver never sees an event a power cut could still take back (decision 0272).
let s: TestServer;
let r: Receiver;
beforeAll(async () => {
  s = await startTestServer({ config: { webhooks: { allow_cidrs: ['127.0.0.1/32'] } }, modules: [accountsModule, createWebhooksModule()] });
  r = new Receiver();
  await r.start();
});
afterAll(async () => {
  await s.stop();
  await r.stop();
});

it('sends an event written in a group commit only once the flush after its commit has ended', async () => {
  const db = s.daemon.ctx.db;
  const ep = await s.api('POST', '/webhook_endpoints', { body: { url: r.url } });
  expect(ep.status).toBe(201);
  // The daemon's real flusher, with a disk whose flushes end when the test says.
  const flusher = walFlusherOf(db)!;
  const held: Array<(error: Error | null) => void> = [];
  const real = (flusher as unknown as { sync: SyncFile }).sync;
  (flusher as unknown as { sync: SyncFile }).sync = (_file, done) => held.push(done);
  try {
    let answered = false;
    const written = groupCommit(db, () =>
      s.daemon.ctx.outbox.emit({ type: 'intent.succeeded', accountId: s.installation.sandbox_id, liveMode: false, payload: { id: 'in_1' } }),
    ).then((ev) => {
      answered = true;
      return ev;
    });
    await until('the batch committed and its flush started', () => held.length === 1);
    const id = (db.prepare(`SELECT id FROM events WHERE type = 'intent.succeeded'`).pluck().get() as string | undefined) ?? null;
    // Committed (and fanned out in the same commit), its delivery due now...
    expect(id).not.toBeNull();
    expect(db.prepare('SELECT COUNT(*) FROM webhook_deliveries WHERE endpoint_id = ?').pluck().get(ep.body.id)).toBe(1);
    // ...and its attempt taken up by the worker (the pass after the commit)...
    const worker = deliveryWorkerOf(s.daemon.ctx) as unknown as { sender: { inflight: Map<number, unknown> } };
    await until('the attempt launched', () => worker.sender.inflight.size === 1);
    // ...but neither answered nor sent while the disk has not said it holds it: a send would reach
    // the receiver on loopback within these turns of the loop.
    for (let i = 0; i < 50; i++) await new Promise((res) => setImmediate(res));
    expect(answered).toBe(false);
    expect(r.received).toHaveLength(0);
    while (held.length) held.shift()!(null);
    expect((await written).id).toBe(id);
    await r.waitFor(1);
    expect(r.received[0].headers['webhook-id']).toBe(id);
  } finally {
    (flusher as unknown as { sync: SyncFile }).sync = real;
    while (held.length) held.shift()!(null);
  }
});
