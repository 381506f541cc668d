import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Receiver } from '../helpers/receiver.js';

let s: TestServer;
const receiver = new Receiver();

beforeAll(async () => {
  await receiver.start();
  s = await startTestServer({ config: { webhooks: { allow_cidrs: ['127.0.0.1/32'] } } });
});
afterAll(async () => {
  await s.stop();
  await receiver.stop();
});

const count = () => (s.daemon.ctx.db.prepare('SELECT COUNT(*) AS n FROM webhook_endpoints').get() as { n: number }).n;

describe('webhook endpoints', () => {
  it('creates an endpoint and shows its signing secret only once', async () => {
    const res = await s.api('POST', '/webhook_endpoints', { body: { url: receiver.url, description: 'till 1' } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ url: receiver.url, description: 'till 1', disabled: false, live_mode: false, account_id: s.installation.sandbox_id });
    expect(res.body.id).toMatch(/^ep_[0-9a-z]{16}$/);
    expect(res.body.signingSecret).toMatch(/^whsec_/);
    expect(Buffer.from(res.body.signingSecret.slice(6), 'base64')).toHaveLength(32);

    const got = await s.api('GET', `/webhook_endpoints/${res.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body.signingSecret).toBeUndefined();
    expect(got.text).not.toContain(res.body.signingSecret.slice(6));
    const list = await s.api('GET', '/webhook_endpoints');
    expect(list.body.map((e: { id: string }) => e.id)).toContain(res.body.id);
    expect(list.headers['total-count']).toBe('1');

    // Encrypted at rest: neither the database file nor its WAL holds the secret.
    const stored = s.daemon.ctx.db.prepare('SELECT secret FROM webhook_endpoints WHERE id = ?').get(res.body.id) as { secret: string };
    expect(stored.secret).not.toContain(res.body.signingSecret.slice(6));
    for (const f of ['posd.db', 'posd.db-wal']) {
      try {
        expect(readFileSync(join(s.dataDir, f)).includes(res.body.signingSecret.slice(6))).toBe(false);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }
  });

  it('replays a creation under the same Idempotency-Key without keeping the secret in clear text', async () => {
    const headers = { 'idempotency-key': 'create-endpoint-1' };
    const first = await s.api('POST', '/webhook_endpoints', { body: { url: receiver.url }, headers });
    const again = await s.api('POST', '/webhook_endpoints', { body: { url: receiver.url }, headers });
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
    const rows = s.daemon.ctx.db.prepare('SELECT response FROM idempotency_keys').all() as Array<{ response: string | null }>;
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) expect(r.response ?? '').not.toContain(first.body.signingSecret.slice(6));
  });

  it.each([
    'http://127.0.0.2/x',
    'http://10.0.0.1/x',
    'http://169.254.169.254/latest/meta-data',
    'http://[::1]/x',
    // (names resolving inward: url-guard.test.ts and delivery.test.ts; 127.0.0.1 is allow-listed here)
    'ftp://example.com/x',
    'example.com/x',
  ])('refuses %s with 400 and creates nothing', async (url) => {
    const before = count();
    const res = await s.api('POST', '/webhook_endpoints', { body: { url } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('webhook_url_refused');
    expect(res.body.errors.url).toHaveLength(1);
    expect(count()).toBe(before);
  });

  it('validates bodies strictly', async () => {
    const before = count();
    for (const body of [{}, { url: 42 }, { url: receiver.url, description: 7 }]) {
      const res = await s.api('POST', '/webhook_endpoints', { body });
      expect(res.status).toBe(400);
      expect(res.body.errors).toBeDefined();
    }
    expect(count()).toBe(before);
  });

  it('updates description and disabled, then deletes', async () => {
    const { body: ep } = await s.api('POST', '/webhook_endpoints', { body: { url: receiver.url } });
    const patched = await s.api('PATCH', `/webhook_endpoints/${ep.id}`, { body: { description: 'new', disabled: true } });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ description: 'new', disabled: true, disabled_reason: 'Disabled through the API.' });
    const bad = await s.api('PATCH', `/webhook_endpoints/${ep.id}`, { body: { disabled: 'yes' } });
    expect(bad.status).toBe(400);
    const enabled = await s.api('PATCH', `/webhook_endpoints/${ep.id}`, { body: { disabled: false } });
    expect(enabled.body).toMatchObject({ description: 'new', disabled: false, disabled_reason: null });
    const del = await s.api('DELETE', `/webhook_endpoints/${ep.id}`);
    expect(del.status).toBe(200);
    expect(del.body).toMatchObject({ id: ep.id, deleted: true });
    expect((await s.api('GET', `/webhook_endpoints/${ep.id}`)).status).toBe(404);
    expect((await s.api('DELETE', `/webhook_endpoints/${ep.id}`)).status).toBe(404);
  });

  it('keeps environments apart: a sandbox endpoint is invisible to the live key', async () => {
    const { body: ep } = await s.api('POST', '/webhook_endpoints', { body: { url: receiver.url } });
    const live = s.installation.keys.live;
    expect((await s.api('GET', `/webhook_endpoints/${ep.id}`, { key: live })).status).toBe(404);
    expect((await s.api('PATCH', `/webhook_endpoints/${ep.id}`, { key: live, body: { disabled: true } })).status).toBe(404);
    const liveList = await s.api('GET', '/webhook_endpoints', { key: live });
    expect(liveList.body.map((e: { id: string }) => e.id)).not.toContain(ep.id);
    const created = await s.api('POST', '/webhook_endpoints', { key: live, body: { url: receiver.url } });
    expect(created.body).toMatchObject({ live_mode: true, account_id: s.installation.account_id });
  });

  it('sends a test event of any catalogue type, and refuses unknown types', async () => {
    const { body: ep } = await s.api('POST', '/webhook_endpoints', { body: { url: receiver.url } });
    const before = receiver.received.length;
    const res = await s.api('POST', `/webhook_endpoints/${ep.id}/test`, { body: { event_type: 'payment_intent.succeeded' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'succeeded', test: true, event_type: 'payment_intent.succeeded', response_code: 200, attempt_count: 1 });
    expect(receiver.received.length).toBe(before + 1);
    const sent = JSON.parse(receiver.received.at(-1)!.body);
    expect(sent.event_type).toBe('payment_intent.succeeded');
    expect(receiver.received.at(-1)!.headers['webhook-id']).toBe(res.body.event_id);
    const unknown = await s.api('POST', `/webhook_endpoints/${ep.id}/test`, { body: { event_type: 'nope.never' } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors.event_type).toBeDefined();
    const listed = await s.api('GET', `/webhook_endpoints/${ep.id}/deliveries`);
    expect(listed.body).toHaveLength(1);
    expect(listed.body[0].attempts).toHaveLength(1);
  });
});
