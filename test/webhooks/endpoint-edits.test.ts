import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Receiver } from '../helpers/receiver.js';
import { tx } from '../../src/db/database.js';
import { deliveryWorkerOf } from '../../src/modules/webhooks/index.js';
import { CATALOGUE } from '../../src/events/catalogue.js';

// Issue 35: an endpoint moved by PATCH keeps its id, secret, filters and history; the event
// catalogue through the API; filters and replays checked against it.
let s: TestServer;
const before = new Receiver();
const after = new Receiver();

beforeAll(async () => {
  await before.start();
  await after.start();
  s = await startTestServer({ config: { webhooks: { allow_cidrs: ['127.0.0.1/32'] } } });
});
afterAll(async () => {
  await s.stop();
  await before.stop();
  await after.stop();
});

function emit(): void {
  tx(s.daemon.ctx.db, () =>
    s.daemon.ctx.outbox.emit({ type: 'intent.succeeded', accountId: s.installation.sandbox_id, liveMode: false, payload: { id: 'in_1', amount_in_cents: 1 } }),
  );
}

describe('PATCH {url}', () => {
  it('moves the endpoint: same id, secret, filters and deliveries; the move is in its history', async () => {
    const created = await s.api('POST', '/webhook_endpoints', { body: { url: before.url, filter_types: ['intent.succeeded'] } });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const worker = deliveryWorkerOf(s.daemon.ctx)!;
    emit();
    await worker.runDue();
    expect(before.received).toHaveLength(1);

    const moved = await s.api('PATCH', `/webhook_endpoints/${id}`, { body: { url: after.url } });
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({ id, url: after.url, filter_types: ['intent.succeeded'] });
    emit();
    await worker.runDue();
    expect(before.received).toHaveLength(1);
    expect(after.received).toHaveLength(1);
    // Signed with the secret given at creation.
    const r = after.received[0];
    expect(() => new Webhook(created.body.signingSecret).verify(r.body, r.headers as Record<string, string>)).not.toThrow();
    const deliveries = await s.api('GET', `/webhook_endpoints/${id}/deliveries`);
    expect(deliveries.body).toHaveLength(2);

    const history = await s.api('GET', `/webhook_endpoints/${id}/history`);
    expect(history.status).toBe(200);
    expect(history.body).toEqual([
      { field: 'url', old_value: before.url, new_value: after.url, actor: expect.stringMatching(/.+/), changed_at: moved.body.updated_at },
    ]);
  });

  it('refuses a private URL through the same guard as creation and changes nothing', async () => {
    const created = await s.api('POST', '/webhook_endpoints', { body: { url: before.url } });
    const res = await s.api('PATCH', `/webhook_endpoints/${created.body.id}`, { body: { url: 'http://169.254.169.254/latest/meta-data' } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('webhook_url_refused');
    expect(res.body.errors.url).toHaveLength(1);
    expect((await s.api('GET', `/webhook_endpoints/${created.body.id}`)).body.url).toBe(before.url);
    expect((await s.api('GET', `/webhook_endpoints/${created.body.id}/history`)).body).toEqual([]);
  });
});

describe('the event catalogue', () => {
  it('GET /event_types lists every catalogue type with an example body per format', async () => {
    const res = await s.api('GET', '/event_types');
    expect(res.status).toBe(200);
    const byName = new Map((res.body as Array<{ name: string }>).map((e) => [e.name, e as Record<string, any>]));
    expect([...byName.keys()].sort()).toEqual([...CATALOGUE.keys()].sort());
    const unified = byName.get('intent.succeeded')!;
    expect(unified.description).toBe(CATALOGUE.get('intent.succeeded')!.description);
    expect(unified.examples.unified).toMatchObject({ event_type: 'intent.succeeded' });
    const legacy = [...CATALOGUE.values()].find((e) => e.family === 'legacy' && e.replacedBy === 'intent.succeeded');
    if (legacy) expect(unified.examples.legacy).toMatchObject({ event_type: legacy.type });
    for (const e of byName.values()) expect(e.examples.unified ?? e.examples.legacy).not.toBeNull();
  });

  it('a replay or filter naming an unknown type is a 400 naming it, never 201 with total 0', async () => {
    const created = await s.api('POST', '/webhook_endpoints', { body: { url: before.url } });
    const replay = await s.api('POST', `/webhook_endpoints/${created.body.id}/replays`, { body: { event_types: ['intent.succeeded', 'intent.succeded'] } });
    expect(replay.status).toBe(400);
    expect(String(replay.body.errors.event_types)).toContain('intent.succeded');
    const filter = await s.api('PATCH', `/webhook_endpoints/${created.body.id}`, { body: { filter_types: ['nope.never'] } });
    expect(filter.status).toBe(400);
    expect(String(filter.body.errors.filter_types)).toContain('nope.never');
  });
});
