import { afterEach, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { MODULES_WITH_FIXTURE } from '../helpers/fixture-module.js';
import { metrics } from '../../src/system/metrics.js';

const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.stop();
});

async function scrape(s: TestServer, headers: Record<string, string> = {}) {
  const res = await request(`${s.url}/metrics`, { headers });
  return { status: res.statusCode, type: String(res.headers['content-type']), text: await res.body.text() };
}

describe('/metrics', () => {
  it('counts requests by route pattern and status, never by raw URL', async () => {
    const s = await startTestServer({ modules: MODULES_WITH_FIXTURE });
    servers.push(s);
    await s.api('GET', '/test');
    await s.api('GET', '/test');
    await s.api('GET', '/test', { key: 'sk_test_wrong' });
    await s.api('GET', '/connected_accounts/ac_doesnotexist0000');
    await s.api('GET', '/connected_accounts/ac_doesnotexist0001');
    await s.api('GET', '/no/such/thing/12345');
    await s.api('POST', '/fixture_notes', { body: { text: 'x', amount_in_cents: 100 } });
    const m = await scrape(s);
    expect(m.status).toBe(200);
    expect(m.type).toContain('text/plain');
    expect(m.text).toContain('posd_http_requests_total{method="GET",route="/api/test",status="200"} 2');
    expect(m.text).toContain('posd_http_requests_total{method="GET",route="/api/test",status="401"} 1');
    expect(m.text).toContain('posd_http_requests_total{method="POST",route="/api/fixture_notes",status="201"} 1');
    expect(m.text).toMatch(/posd_http_requests_total\{method="GET",route="\/api\/connected_accounts\/:id",status="\d+"\} 2/);
    expect(m.text).toContain('posd_http_requests_total{method="GET",route="unmatched",status="404"} 1');
    expect(m.text).not.toContain('ac_doesnotexist');
    expect(m.text).not.toContain('12345');
    expect(m.text).toMatch(/posd_http_request_duration_seconds_count\{method="GET",route="\/api\/test"\} 3/);
    const main = Number(/posd_database_bytes\{file="main"\} (\d+)/.exec(m.text)?.[1]);
    expect(main).toBeGreaterThan(0);
  });

  it('each daemon has its own registry; other areas add their series through metrics(ctx)', async () => {
    const a = await startTestServer();
    const b = await startTestServer();
    servers.push(a, b);
    const waiting = metrics(a.daemon.ctx).gauge({ name: 'posd_sync_records_waiting', help: 'Facts not yet acknowledged by the central' });
    waiting.set(7);
    // Asking again (a module set up twice on the same daemon) returns the same series.
    expect(metrics(a.daemon.ctx).gauge({ name: 'posd_sync_records_waiting', help: 'x' })).toBe(waiting);
    const failures = metrics(a.daemon.ctx).counter({ name: 'posd_webhook_delivery_failures_total', help: 'Failed attempts', labelNames: ['reason'] });
    failures.inc({ reason: 'timeout' }, 2);
    await a.api('GET', '/test');
    const ma = await scrape(a);
    const mb = await scrape(b);
    expect(ma.text).toContain('posd_sync_records_waiting 7');
    expect(ma.text).toContain('posd_webhook_delivery_failures_total{reason="timeout"} 2');
    expect(mb.text).not.toContain('posd_sync_records_waiting');
    expect(mb.text).not.toContain('route="/api/test"');
  });

  it('asks for the bearer token when ops.metrics_token is set', async () => {
    const s = await startTestServer({ config: { ops: { metrics_token: 'scrape-secret-123' } } });
    servers.push(s);
    expect((await scrape(s)).status).toBe(401);
    expect((await scrape(s, { authorization: 'Bearer nope' })).status).toBe(401);
    const ok = await scrape(s, { authorization: 'Bearer scrape-secret-123' });
    expect(ok.status).toBe(200);
    expect(ok.text).toContain('route="/metrics",status="401"} 2');
  });
});
