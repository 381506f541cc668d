import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Receiver } from '../helpers/receiver.js';
import { deliveryWorkerOf } from '../../src/modules/webhooks/index.js';
import { LEGACY_API_VERSION, UNIFIED_API_VERSION } from '../../src/events/formats.js';

// Events emitted by another area (cash sales) reach endpoints in the format spec 6.3 gives the
// account: this installation's live account predates the change-over (configured in the future), so
// it gets both formats; its sandbox, like every sandbox, only the unified one.
let s: TestServer;
const liveR = new Receiver();
const sandboxR = new Receiver();

beforeAll(async () => {
  await liveR.start();
  await sandboxR.start();
  s = await startTestServer({ config: { events: { unified_since: '2999-01-01' }, webhooks: { allow_cidrs: ['127.0.0.1/32'] } } });
});
afterAll(async () => {
  await s.stop();
  await liveR.stop();
  await sandboxR.stop();
});

describe('events of other areas, delivered', () => {
  it('sends both formats to an older live account and only the unified one to a sandbox', async () => {
    const live = (await s.api('POST', '/webhook_endpoints', { key: s.installation.keys.live, body: { url: liveR.url } })).body;
    const sbx = (await s.api('POST', '/webhook_endpoints', { body: { url: sandboxR.url } })).body;
    const liveSale = await s.api('POST', '/cash_sales', { key: s.installation.keys.live, body: { amount_in_cents: 2500, currency: 'GTQ' } });
    expect(liveSale.status).toBe(201);
    const sbxSale = await s.api('POST', '/cash_sales', { body: { amount_in_cents: 2500, currency: 'GTQ' } });
    expect(sbxSale.status).toBe(201);
    await deliveryWorkerOf(s.daemon.ctx)!.runDue();

    const verify = (secret: string, r: Receiver) =>
      r.received.map((x) => new Webhook(secret).verify(x.body, x.headers as Record<string, string>) as Record<string, unknown>);
    const atLive = verify(live.signingSecret, liveR);
    expect(atLive.map((b) => b.event_type).sort()).toEqual(['cash_intent.succeeded', 'intent.succeeded']);
    const unified = atLive.find((b) => b.event_type === 'intent.succeeded')!;
    const legacy = atLive.find((b) => b.event_type === 'cash_intent.succeeded')!;
    expect(unified).toMatchObject({ id: liveSale.body.id, type: 'cash', status: 'succeeded', api_version: UNIFIED_API_VERSION });
    expect(legacy).toMatchObject({ id: liveSale.body.cash_intent_id, api_version: LEGACY_API_VERSION });

    const atSandbox = verify(sbx.signingSecret, sandboxR);
    expect(atSandbox.map((b) => b.event_type)).toEqual(['intent.succeeded']);
    expect(atSandbox[0].id).toBe(sbxSale.body.id);
  });
});
