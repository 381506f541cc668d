import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Receiver, type Reply } from '../helpers/receiver.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { tx } from '../../src/db/database.js';
import { accountsModule } from '../../src/modules/accounts/index.js';
import { createWebhooksModule, deliveryWorkerOf, type DeliveryWorker } from '../../src/modules/webhooks/index.js';
import { statusSources } from '../../src/system/status-sources.js';
import { runPosd } from '../helpers/process.js';
import { replayDeliveries } from '../../src/modules/webhooks/replay.js';
import { webhooksStore } from '../../src/modules/webhooks/store.js';
import { isoTime } from '../../src/clock.js';

// Operating webhooks (issue 21): filters, secret rotation, bulk replay, the failing-endpoint
// lifecycle, retention. Real HTTP to real receivers; time moves on a ManualClock. The
// standardwebhooks package checks webhook-timestamp against the real time (5 minutes either way),
// so signatures are verified only while the clock is near it.
const clock = new ManualClock();
let s: TestServer;
let worker: DeliveryWorker;
const receivers: Receiver[] = [];
const DAY = 86_400_000;

async function receiver(replies: Reply[] = [{ status: 200 }]): Promise<Receiver> {
  const r = new Receiver(replies);
  await r.start();
  receivers.push(r);
  return r;
}

async function endpoint(url: string, extra: Record<string, unknown> = {}): Promise<{ id: string; signingSecret: string; filter_types: string[] | null }> {
  const res = await s.api('POST', '/webhook_endpoints', { key: s.installation.keys.test, body: { url, ...extra } });
  expect(res.status).toBe(201);
  return res.body;
}

function emit(type: string) {
  return tx(s.daemon.ctx.db, () =>
    s.daemon.ctx.outbox.emit({ type, accountId: s.installation.sandbox_id, liveMode: false, payload: { id: 'in_example', amount_in_cents: 1234 } }),
  );
}

async function deliveries(endpointId: string) {
  const res = await s.api('GET', `/webhook_endpoints/${endpointId}/deliveries?items=100`, { key: s.installation.keys.test });
  expect(res.status).toBe(200);
  return res.body as Array<Record<string, any>>;
}

const ids = (r: Receiver) => r.received.map((g) => g.headers['webhook-id']);

beforeAll(async () => {
  s = await startTestServer({
    clock,
    // The breaker (on by default) would hold a down receiver's retries: these tests count them.
    config: { webhooks: { allow_cidrs: ['127.0.0.1/32'], breaker_failures: 0 } },
    modules: [accountsModule, createWebhooksModule()],
  });
  worker = deliveryWorkerOf(s.daemon.ctx)!;
});
beforeEach(async () => {
  clock.set(Date.now());
  await worker.runDue();
});
afterAll(async () => {
  await s.stop();
  for (const r of receivers) await r.stop();
});

describe('filter_types', () => {
  it('sends an endpoint only the types it lists; none means all; a PATCH changes the list', async () => {
    const only = await receiver();
    const all = await receiver();
    const a = await endpoint(only.url, { filter_types: ['intent.succeeded', 'intent.failed'] });
    expect(a.filter_types).toEqual(['intent.succeeded', 'intent.failed']);
    const b = await endpoint(all.url);
    expect(b.filter_types).toBeNull();
    const e1 = emit('intent.succeeded');
    emit('intent.pending');
    const e3 = emit('intent.failed');
    await worker.runDue();
    expect(ids(only)).toEqual([e1.id, e3.id]);
    expect(all.received).toHaveLength(3);

    const patched = await s.api('PATCH', `/webhook_endpoints/${a.id}`, { key: s.installation.keys.test, body: { filter_types: ['intent.pending'] } });
    expect(patched.status).toBe(200);
    expect(patched.body.filter_types).toEqual(['intent.pending']);
    const e4 = emit('intent.pending');
    emit('intent.succeeded');
    await worker.runDue();
    expect(ids(only)).toEqual([e1.id, e3.id, e4.id]);

    const cleared = await s.api('PATCH', `/webhook_endpoints/${a.id}`, { key: s.installation.keys.test, body: { filter_types: null } });
    expect(cleared.body.filter_types).toBeNull();
    emit('intent.succeeded');
    await worker.runDue();
    expect(only.received).toHaveLength(4);
  });

  it('refuses a type outside the catalogue', async () => {
    const r = await receiver();
    const res = await s.api('POST', '/webhook_endpoints', { key: s.installation.keys.test, body: { url: r.url, filter_types: ['intent.nope'] } });
    expect(res.status).toBe(400);
    expect(res.body.errors.filter_types[0]).toMatch(/intent\.nope/);
  });
});

describe('secret rotation', () => {
  it('signs with both secrets during the overlap, with the new one alone after it', async () => {
    const r = await receiver();
    const ep = await endpoint(r.url);
    const rotated = await s.api('POST', `/webhook_endpoints/${ep.id}/rotate_secret`, { key: s.installation.keys.test, body: { overlap_seconds: 3600 } });
    expect(rotated.status).toBe(200);
    const fresh: string = rotated.body.signingSecret;
    expect(fresh).toMatch(/^whsec_/);
    expect(fresh).not.toBe(ep.signingSecret);
    expect(Date.parse(rotated.body.previous_secret_expires_at)).toBe(clock.now() + 3_600_000);
    // The secret is not shown again.
    const read = await s.api('GET', `/webhook_endpoints/${ep.id}`, { key: s.installation.keys.test });
    expect(read.body.signingSecret).toBeUndefined();

    for (let i = 0; i < 3; i++) emit('intent.succeeded');
    await worker.runDue();
    expect(r.received).toHaveLength(3);
    for (const got of r.received) {
      expect(String(got.headers['webhook-signature']).split(' ')).toHaveLength(2);
      for (const secret of [ep.signingSecret, fresh]) {
        expect(() => new Webhook(secret).verify(got.body, got.headers as Record<string, string>)).not.toThrow();
      }
    }

    // Past the overlap.
    clock.advance(3_600_000);
    emit('intent.failed');
    await worker.runDue();
    const got = r.received[3];
    expect(String(got.headers['webhook-signature']).split(' ')).toHaveLength(1);
    // The library compares with the real time: check at the delivery's own time.
    const at = Number(got.headers['webhook-timestamp']) * 1000;
    const RealDate = Date.now;
    Date.now = () => at;
    try {
      expect(() => new Webhook(fresh).verify(got.body, got.headers as Record<string, string>)).not.toThrow();
      expect(() => new Webhook(ep.signingSecret).verify(got.body, got.headers as Record<string, string>)).toThrow();
    } finally {
      Date.now = RealDate;
    }
  });
});

describe('bulk replay', () => {
  it('after a receiver was down for a day, replays its failures: each event arrives, verified, once per webhook-id', async () => {
    const r = await receiver([{ status: 503 }]);
    const other = await receiver();
    const ep = await endpoint(r.url);
    const bystander = await endpoint(other.url);
    const start = clock.now();
    const events = [emit('intent.succeeded'), emit('intent.failed'), emit('intent.succeeded'), emit('intent.pending')];
    await worker.runDue();
    // A day of retries: the schedule ends after 6 h 36 min; everything has failed.
    for (let t = 0; t < 24 * 60; t += 30) {
      clock.advance(30 * 60_000);
      await worker.runDue();
    }
    expect((await deliveries(ep.id)).map((d) => d.status)).toEqual(['failed', 'failed', 'failed', 'failed']);
    const attemptsDown = r.received.length;
    expect(attemptsDown).toBe(4 * 7);

    const listed = () => statusSources(s.daemon.ctx).failingWebhooks!().find((e) => e.endpoint_id === ep.id)?.failed;
    expect(listed()).toBe(4);

    // The receiver is back. Replay: failed deliveries of intent.succeeded and intent.pending only.
    r.replies = [{ status: 200 }];
    clock.set(Date.now());
    const replayed = await s.api('POST', `/webhook_endpoints/${ep.id}/replays`, {
      key: s.installation.keys.test,
      body: { since: new Date(start - 1000).toISOString(), statuses: ['failed'], event_types: ['intent.succeeded', 'intent.pending'] },
    });
    expect(replayed.status).toBe(201);
    expect(replayed.body).toMatchObject({ endpoint_id: ep.id, total: 3, pending: 3 });
    await worker.runDue();
    const delivered = r.received.slice(attemptsDown);
    expect(delivered.map((g) => g.headers['webhook-id'])).toEqual([events[0].id, events[2].id, events[3].id]);
    const wh = new Webhook(ep.signingSecret);
    for (const got of delivered) expect(() => wh.verify(got.body, got.headers as Record<string, string>)).not.toThrow();
    const progress = await s.api('GET', `/webhook_endpoints/${ep.id}/replays/${replayed.body.id}`, { key: s.installation.keys.test });
    expect(progress.body).toMatchObject({ total: 3, pending: 0, succeeded: 3, failed: 0 });
    // The failures the replay delivered leave the status page's count; the one not replayed stays.
    expect(listed()).toBe(1);

    // Replaying the rest of the failures sends only intent.failed; the bystander got nothing again.
    const rest = await s.api('POST', `/webhook_endpoints/${ep.id}/replays`, { key: s.installation.keys.test, body: { statuses: ['failed'] } });
    // The three replayed events still have a failed delivery among their rows: they are sent again
    // (a receiver deduplicates by webhook-id), and intent.failed for the first time.
    expect(rest.body.total).toBe(4);
    await worker.runDue();
    expect(new Set(r.received.slice(attemptsDown).map((g) => g.headers['webhook-id']))).toEqual(new Set(events.map((e) => e.id)));
    expect(other.received).toHaveLength(4);
    expect((await deliveries(bystander.id)).every((d) => d.attempt_count === 1)).toBe(true);
  });

  it('makes a large replay in slices, each committed, and counts only its own deliveries though others land between the slices', async () => {
    const r = await receiver([{ status: 503 }]);
    const ep = await endpoint(r.url);
    const events = Array.from({ length: 7 }, () => emit('intent.succeeded'));
    await worker.runDue();
    for (let t = 0; t < 12 * 60; t += 30) {
      clock.advance(30 * 60_000);
      await worker.runDue();
    }
    expect((await deliveries(ep.id)).every((d) => d.status === 'failed')).toBe(true);
    const store = webhooksStore(s.daemon.ctx.db);
    const row = store.endpoint(ep.id)!;
    let slices = 0;
    let live: { id: string } | undefined;
    // The receiver is back before the replay: the worker sends a slice's deliveries as soon as it
    // is committed, while the next slices are made (each waits for its flush), so what it answers
    // then is what they get (decision 0272).
    r.replies = [{ status: 200 }];
    const view = await replayDeliveries(
      s.daemon.ctx.db,
      store,
      clock,
      row,
      { since: isoTime(0), until: isoTime(clock.now() + 1), event_types: null, statuses: ['failed'] },
      {
        slice: 3,
        onSlice: async () => {
          slices++;
          // A live event for the same endpoint is fanned out between two slices: in its own
          // transaction (the emit hook), so the worker's pass finds nothing left to fan out.
          if (slices === 1) {
            live = emit('intent.failed');
            expect(s.daemon.ctx.db.prepare('SELECT COUNT(*) FROM webhook_deliveries WHERE event_id = ? AND endpoint_id = ?').pluck().get(live.id, ep.id)).toBe(
              1,
            );
            expect(await worker.fanOut()).toBe(0);
          }
        },
      },
    );
    expect(slices).toBe(3);
    // Only its own deliveries, some perhaps already sent: the live event's is not counted.
    expect(view).toMatchObject({ total: 7, failed: 0 });
    expect(view.pending + view.succeeded).toBe(7);
    await worker.runDue();
    const replayed = await s.api('GET', `/webhook_endpoints/${ep.id}/replays/${view.id}`, { key: s.installation.keys.test });
    expect(replayed.body).toMatchObject({ total: 7, pending: 0, succeeded: 7, failed: 0 });
    expect(new Set(ids(r).slice(-8))).toEqual(new Set([...events.map((e) => e.id), live!.id]));
  });

  it('`posd webhooks replay` makes the same replay from the shell, beside the running daemon', { timeout: 60_000 }, async () => {
    const r = await receiver([{ status: 500 }]);
    const ep = await endpoint(r.url);
    const ev = emit('intent.succeeded');
    await worker.runDue();
    await s.api('PATCH', `/webhook_endpoints/${ep.id}`, { key: s.installation.keys.test, body: { disabled: true } });
    await s.api('PATCH', `/webhook_endpoints/${ep.id}`, { key: s.installation.keys.test, body: { disabled: false } });
    r.replies = [{ status: 200 }];
    const before = r.received.length;
    const run = await runPosd([
      'webhooks',
      'replay',
      '--data',
      s.daemon.ctx.config.data_dir,
      '--endpoint',
      ep.id,
      '--status',
      'canceled',
      '--no-wait',
      '--json',
    ]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ endpoint_id: ep.id, total: 1, pending: 1 });
    // The command ran on the real clock: its delivery is due at its real time.
    clock.set(Date.now() + 1000);
    await worker.runDue();
    expect(r.received.slice(before).map((g) => g.headers['webhook-id'])).toEqual([ev.id]);
    const bad = await runPosd(['webhooks', 'replay', '--data', s.daemon.ctx.config.data_dir, '--endpoint', 'ep_nope', '--no-wait']);
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim()).toBe('posd: no webhook endpoint ep_nope');
  });

  it('refuses a replay on a disabled endpoint', async () => {
    const r = await receiver();
    const ep = await endpoint(r.url);
    await s.api('PATCH', `/webhook_endpoints/${ep.id}`, { key: s.installation.keys.test, body: { disabled: true } });
    const res = await s.api('POST', `/webhook_endpoints/${ep.id}/replays`, { key: s.installation.keys.test, body: {} });
    expect(res.status).toBe(422);
  });
});

describe('failing-endpoint lifecycle', () => {
  it('reports an endpoint failing for an hour, disables it after 5 days with the reason kept, and replays what it missed when enabled again', async () => {
    const r = await receiver([{ status: 500 }]);
    const ep = await endpoint(r.url);
    const t0 = clock.now();
    const first = emit('intent.succeeded');
    await worker.runDue();
    let view = (await s.api('GET', `/webhook_endpoints/${ep.id}`, { key: s.installation.keys.test })).body;
    expect(Date.parse(view.failing_since)).toBe(t0);
    expect(statusSources(s.daemon.ctx).failingWebhooks!().find((e) => e.endpoint_id === ep.id)?.failing_since).toBeUndefined();

    clock.advance(3_600_000);
    await worker.runDue();
    const line = statusSources(s.daemon.ctx).failingWebhooks!().find((e) => e.endpoint_id === ep.id);
    expect(line).toMatchObject({ failing_since: new Date(t0).toISOString(), disabled_reason: null });

    // Just before the fifth day: a new event, still being retried when the endpoint is disabled.
    clock.set(t0 + 5 * DAY - 60_000);
    await worker.runDue();
    const pendingThen = emit('intent.failed');
    await worker.runDue();
    clock.set(t0 + 5 * DAY + 1);
    await worker.runDue();
    view = (await s.api('GET', `/webhook_endpoints/${ep.id}`, { key: s.installation.keys.test })).body;
    expect(view.disabled).toBe(true);
    expect(view.disabled_reason).toMatch(/^Disabled automatically: every delivery failed since .* \(5 days\)\.$/);
    // Both deliveries were still being retried (one attempt per look after the jumps): canceled.
    expect((await deliveries(ep.id)).map((d) => [d.event_id, d.status])).toEqual([
      [pendingThen.id, 'canceled'],
      [first.id, 'canceled'],
    ]);
    expect(statusSources(s.daemon.ctx).failingWebhooks!().find((e) => e.endpoint_id === ep.id)?.disabled_reason).toBe(view.disabled_reason);

    // Missed while disabled.
    const missed = emit('intent.pending');
    await worker.runDue();
    const before = r.received.length;

    r.replies = [{ status: 200 }];
    const enabled = await s.api('PATCH', `/webhook_endpoints/${ep.id}`, { key: s.installation.keys.test, body: { disabled: false, replay_missed: true } });
    expect(enabled.status).toBe(200);
    expect(enabled.body).toMatchObject({ disabled: false, disabled_reason: null, failing_since: null, replay: { total: 3 } });
    await worker.runDue();
    expect(r.received.slice(before).map((g) => g.headers['webhook-id'])).toEqual([first.id, pendingThen.id, missed.id]);
    expect(statusSources(s.daemon.ctx).failingWebhooks!().find((e) => e.endpoint_id === ep.id)).toBeUndefined();
  });

  it('a success ends the failing streak', async () => {
    const r = await receiver([{ status: 500 }, { status: 500 }, { status: 200 }]);
    const ep = await endpoint(r.url);
    emit('intent.succeeded');
    await worker.runDue();
    expect((await s.api('GET', `/webhook_endpoints/${ep.id}`, { key: s.installation.keys.test })).body.failing_since).not.toBeNull();
    clock.advance(60_000);
    await worker.runDue();
    expect(r.received).toHaveLength(3);
    expect((await s.api('GET', `/webhook_endpoints/${ep.id}`, { key: s.installation.keys.test })).body.failing_since).toBeNull();
  });
});

describe('retention', () => {
  it('deletes finished deliveries and their attempts after webhooks.retention_days, keeps pending ones', async () => {
    const ok = await receiver();
    const down = await receiver([{ status: 200 }, { status: 500 }]);
    const a = await endpoint(ok.url);
    const b = await endpoint(down.url);
    emit('intent.succeeded');
    await worker.runDue();
    expect(await deliveries(a.id)).toHaveLength(1);
    // 31 days later, with one more delivery on each so neither is the newest row.
    clock.advance(31 * DAY);
    emit('intent.succeeded');
    await worker.runDue();
    // The prune runs at most once a minute (it ran before this fan-out, when the old rows were the newest).
    clock.advance(60_000);
    await worker.runDue();
    const db = s.daemon.ctx.db;
    const attempts = (endpointId: string) =>
      (
        db
          .prepare('SELECT COUNT(*) AS n FROM webhook_attempts t JOIN webhook_deliveries d ON d.seq = t.delivery_seq WHERE d.endpoint_id = ?')
          .get(endpointId) as { n: number }
      ).n;
    expect(await deliveries(a.id)).toHaveLength(1);
    expect(attempts(a.id)).toBe(1);
    // The old one is gone; the new one, being retried, is kept.
    expect((await deliveries(b.id)).map((d) => d.status)).toEqual(['pending']);
  });
});
