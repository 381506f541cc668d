import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Receiver, type Reply } from '../helpers/receiver.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { until } from '../helpers/until.js';
import { startMailbox, mailText, type Mailbox } from '../contracts/helpers.js';
import { tx } from '../../src/db/database.js';
import { accountsModule } from '../../src/modules/accounts/index.js';
import { createWebhooksModule, deliveryWorkerOf, noticeSenderOf, type DeliveryWorker } from '../../src/modules/webhooks/index.js';
import type { NoticeSender } from '../../src/modules/webhooks/notices.js';
import { verify } from '../../src/system/standard-webhooks.js';

// Operational notices (issue 35): an account's notice URL and e-mail address are told, once per
// transition, when an endpoint starts failing, is disabled, or a message exhausts its attempts.
// Real parts: HTTP receivers on port 0 and an SMTP server (smtp-server) in this process.
const clock = new ManualClock();
const HOUR = 3_600_000;
let s: TestServer;
let worker: DeliveryWorker;
let sender: NoticeSender;
let mailbox: Mailbox;
const receivers: Receiver[] = [];

async function receiver(replies: Reply[] = [{ status: 200 }]): Promise<Receiver> {
  const r = new Receiver(replies);
  await r.start();
  receivers.push(r);
  return r;
}

async function endpoint(url: string): Promise<string> {
  const res = await s.api('POST', '/webhook_endpoints', { body: { url } });
  expect(res.status).toBe(201);
  return res.body.id;
}

function emit(type = 'intent.succeeded') {
  return tx(s.daemon.ctx.db, () => s.daemon.ctx.outbox.emit({ type, accountId: s.installation.sandbox_id, liveMode: false, payload: { id: 'in_x' } }));
}

/** Points the account's notices at a new receiver (and the mailbox); returns it and its secret. */
async function noticesTo(replies: Reply[] = [{ status: 204 }]): Promise<{ r: Receiver; secret: string }> {
  const r = await receiver(replies);
  await s.api('PATCH', '/webhook_notice_settings', { body: { url: null, email: null } });
  const res = await s.api('PATCH', '/webhook_notice_settings', { body: { url: r.url, email: 'ops@integrator.example' } });
  expect(res.status).toBe(200);
  return { r, secret: res.body.signingSecret };
}

const bodies = (r: Receiver, endpointId: string) =>
  r.received.map((g) => JSON.parse(g.body) as { type: string; data: Record<string, unknown> }).filter((b) => b.data.endpoint_id === endpointId);

async function settle(): Promise<void> {
  await worker.runDue();
  await sender.runDue();
}

beforeAll(async () => {
  mailbox = await startMailbox();
  s = await startTestServer({
    clock,
    config: {
      webhooks: {
        allow_cidrs: ['127.0.0.1/32'],
        breaker_failures: 0,
        retry_delays_ms: [0, 60_000],
        notices: { smtp: { host: '127.0.0.1', port: mailbox.port, from: 'posd <box@store.example>' }, retry_delays_ms: [60_000, 300_000] },
      },
    },
    modules: [accountsModule, createWebhooksModule()],
  });
  worker = deliveryWorkerOf(s.daemon.ctx)!;
  sender = noticeSenderOf(s.daemon.ctx)!;
});
// An hour before now: the failing notice comes an hour into a streak, when the clock is back near
// the real time that the standardwebhooks package checks webhook-timestamp against.
beforeEach(() => clock.set(Date.now() - HOUR - 60_000));
afterAll(async () => {
  await s.stop();
  for (const r of receivers) await r.stop();
  await mailbox.close();
});

describe('notice settings', () => {
  it('keeps a URL (through the outbound checks) and an e-mail address, and shows the signing secret once', async () => {
    await s.api('PATCH', '/webhook_notice_settings', { body: { url: null, email: null } });
    expect((await s.api('GET', '/webhook_notice_settings')).body).toMatchObject({ url: null, email: null });
    const refused = await s.api('PATCH', '/webhook_notice_settings', { body: { url: 'http://169.254.169.254/latest' } });
    expect(refused.status).toBe(400);
    expect(refused.body.code).toBe('webhook_url_refused');
    const bad = await s.api('PATCH', '/webhook_notice_settings', { body: { email: 'not an address' } });
    expect(bad.status).toBe(400);
    expect(bad.body.errors.email).toBeDefined();

    const set = await s.api('PATCH', '/webhook_notice_settings', { body: { url: 'http://127.0.0.1:9/ops', email: 'ops@integrator.example' } });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ url: 'http://127.0.0.1:9/ops', email: 'ops@integrator.example', live_mode: false });
    expect(set.body.signingSecret).toMatch(/^whsec_/);
    const again = await s.api('PATCH', '/webhook_notice_settings', { body: { email: 'other@integrator.example' } });
    expect(again.body).toMatchObject({ url: 'http://127.0.0.1:9/ops', email: 'other@integrator.example' });
    expect(again.body.signingSecret).toBeUndefined();
    expect((await s.api('GET', '/webhook_notice_settings')).body.signingSecret).toBeUndefined();
    // The live account has settings of its own.
    expect((await s.api('GET', '/webhook_notice_settings', { key: s.installation.keys.live })).body).toMatchObject({ url: null, live_mode: true });
  });
});

describe('notices', () => {
  it('tells the URL (signed) and the e-mail address once when an endpoint starts failing', async () => {
    const { r: ops, secret } = await noticesTo();
    const down = await receiver([{ status: 500 }]);
    const ep = await endpoint(down.url);
    const t0 = clock.now();
    emit();
    await settle();
    expect(bodies(ops, ep)).toEqual([]);

    clock.advance(HOUR);
    const mails = mailbox.messages.length;
    await settle();
    // Its message was given up meanwhile (retry_delays_ms here: [0, 60000]): that is told too.
    const failing = () => bodies(ops, ep).filter((b) => b.type === 'endpoint.failing');
    const told = failing();
    expect(told).toHaveLength(1);
    expect(told[0]).toMatchObject({ type: 'endpoint.failing', data: { endpoint_id: ep, url: down.url, failing_since: new Date(t0).toISOString() } });
    const got = ops.received.find((g) => JSON.parse(g.body).data.endpoint_id === ep && JSON.parse(g.body).type === 'endpoint.failing')!;
    // Verified by the Standard Webhooks reference package, with the secret the settings gave.
    expect(() => new Webhook(secret).verify(got.body, got.headers as Record<string, string>)).not.toThrow();
    expect(got.headers['webhook-id']).toMatch(/^msg_/);
    const mail = await until('the failing notice e-mail', () => mailbox.messages.slice(mails).find((m) => m.raw.includes('is failing')));
    expect(mail.to).toEqual(['ops@integrator.example']);
    expect(mail.raw).toMatch(/Subject: A webhook endpoint is failing/);
    expect(mailText(mail.raw)).toContain(`endpoint_id: ${ep}`);

    // Still failing an hour later: not told again.
    clock.advance(HOUR);
    emit();
    await settle();
    expect(failing()).toHaveLength(1);
    const listed = (await s.api('GET', '/webhook_notices')).body.filter(
      (n: { endpoint_id: string; type: string }) => n.endpoint_id === ep && n.type === 'endpoint.failing',
    );
    expect(listed).toMatchObject([{ url_status: 'sent', email_status: 'sent', attempts: 1, next_attempt_at: null }]);
    await s.api('DELETE', `/webhook_endpoints/${ep}`);
  });

  it('tells each message that exhausts its attempts by URL, and by e-mail once per failing streak', async () => {
    const { r: ops } = await noticesTo();
    const down = await receiver([{ status: 503 }]);
    const ep = await endpoint(down.url);
    const first = emit();
    const second = emit();
    await settle();
    clock.advance(60_000);
    const mails = mailbox.messages.length;
    await settle();
    // Three attempts each (retry_delays_ms [0, 60000]), then given up.
    expect(down.received).toHaveLength(6);
    // The second outcome may commit in the recorder's next group: its notice is sent on its kick.
    const told = await until('both exhausted notices', () => (bodies(ops, ep).length >= 2 ? bodies(ops, ep) : undefined));
    expect(told.map((b) => [b.type, b.data.event_id]).sort()).toEqual(
      [
        ['message.attempt.exhausted', first.id],
        ['message.attempt.exhausted', second.id],
      ].sort(),
    );
    expect(told[0].data).toMatchObject({ attempts: 3, last_response_code: 503, last_error: 'http_503', event_type: 'intent.succeeded' });
    await until('the exhausted notice e-mail', () => mailbox.messages.length > mails);
    await settle();
    expect(mailbox.messages.slice(mails).filter((m) => m.raw.includes('given up'))).toHaveLength(1);
    const listed = (await s.api('GET', '/webhook_notices')).body.filter((n: { endpoint_id: string }) => n.endpoint_id === ep);
    expect(listed.map((n: { email_status: string }) => n.email_status).sort()).toEqual(['sent', 'skipped']);
    await s.api('DELETE', `/webhook_endpoints/${ep}`);
  });

  it('tells when posd disables an endpoint (410 Gone)', async () => {
    const { r: ops, secret } = await noticesTo();
    const gone = await receiver([{ status: 410 }]);
    const ep = await endpoint(gone.url);
    emit();
    await settle();
    const told = bodies(ops, ep);
    expect(told).toMatchObject([{ type: 'endpoint.disabled', data: { trigger: 'gone', disabled_reason: 'The receiver answered 410 Gone.' } }]);
    const got = ops.received.find((g) => JSON.parse(g.body).data.endpoint_id === ep)!;
    expect(verify(secret, got.headers as never, got.body)).toBe(true);
    await s.api('DELETE', `/webhook_endpoints/${ep}`);
  });

  it('retries a notice the URL did not take, with the same webhook-id, and gives up after its schedule', async () => {
    const { r: ops } = await noticesTo([{ status: 500 }, { status: 200 }]);
    const gone = await receiver([{ status: 410 }]);
    const ep = await endpoint(gone.url);
    emit();
    await settle();
    expect(bodies(ops, ep)).toHaveLength(1);
    let [n] = (await s.api('GET', '/webhook_notices')).body.filter((x: { endpoint_id: string }) => x.endpoint_id === ep);
    expect(n).toMatchObject({ url_status: 'pending', email_status: 'sent', attempts: 1, last_error: 'url: http_500' });
    expect(Date.parse(n.next_attempt_at)).toBe(clock.now() + 60_000);

    clock.advance(60_000);
    await settle();
    expect(bodies(ops, ep)).toHaveLength(2);
    const ids = ops.received.filter((g) => JSON.parse(g.body).data.endpoint_id === ep).map((g) => g.headers['webhook-id']);
    expect(ids[0]).toBe(ids[1]);
    [n] = (await s.api('GET', '/webhook_notices')).body.filter((x: { endpoint_id: string }) => x.endpoint_id === ep);
    expect(n).toMatchObject({ url_status: 'sent', attempts: 2, next_attempt_at: null, last_error: null });
    await s.api('DELETE', `/webhook_endpoints/${ep}`);

    // A URL that never takes it: three tries (the first and two retries), then failed.
    const { r: deaf } = await noticesTo([{ status: 500 }]);
    const gone2 = await receiver([{ status: 410 }]);
    const ep2 = await endpoint(gone2.url);
    emit();
    await settle();
    clock.advance(60_000);
    await settle();
    clock.advance(300_000);
    await settle();
    expect(bodies(deaf, ep2)).toHaveLength(3);
    [n] = (await s.api('GET', '/webhook_notices')).body.filter((x: { endpoint_id: string }) => x.endpoint_id === ep2);
    expect(n).toMatchObject({ url_status: 'failed', attempts: 3, next_attempt_at: null });
    await s.api('DELETE', `/webhook_endpoints/${ep2}`);
  });

  it('records nothing for an account that names nowhere to tell', async () => {
    await s.api('PATCH', '/webhook_notice_settings', { body: { url: null, email: null } });
    const gone = await receiver([{ status: 410 }]);
    const ep = await endpoint(gone.url);
    emit();
    await settle();
    expect((await s.api('GET', `/webhook_endpoints/${ep}`)).body.disabled).toBe(true);
    expect((await s.api('GET', '/webhook_notices')).body.filter((x: { endpoint_id: string }) => x.endpoint_id === ep)).toEqual([]);
  });
});
