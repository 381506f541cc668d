import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { startTestServer, type TestServer } from '../helpers/server.js';

// Issue 17, holes 4, 6 and 7: input at fault is a 400 in the error body with a catalogue code, never
// a 500; error bodies and echoed headers are bounded whatever the input.
let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);

describe('hostile input', () => {
  it('JSON nested 10,000 deep is a 400, in metadata and under an Idempotency-Key', async () => {
    const raw = `{"amount_in_cents":1000,"metadata":{"x":${deep(10_000)}}}`;
    for (const headers of [{ 'content-type': 'application/json' }, { 'content-type': 'application/json', 'idempotency-key': 'deep-1' }] as Record<
      string,
      string
    >[]) {
      const r = await s.api('POST', '/cash_sales', { rawBody: raw, headers });
      expect(r.status).toBe(400);
      expect(r.body.code).toBe('invalid_json');
    }
  });

  it('prototype keys in a body are a 400, not a 500', async () => {
    const svc = await s.api('POST', '/services', { body: { kind: 'appointment', name: 'Cut', duration_minutes: 30, price_in_cents: 1000 } });
    expect(svc.status).toBe(201);
    for (const raw of ['{"__proto__":{"name":"x"}}', '{"constructor":{"prototype":{"name":"x"}}}']) {
      const r = await s.api('PATCH', `/services/${svc.body.id}`, { rawBody: raw, headers: { 'content-type': 'application/json' } });
      expect(r.status, raw).toBe(400);
      expect(r.body.code).toBeTypeOf('string');
    }
  });

  it('a page number past any real list is a 400, not a 500; items=abc too', async () => {
    // A 20-digit page is refused by the schema; an `items` a list does not take is ignored.
    expect((await s.api('GET', '/terminals?page=99999999999999999999')).status).toBe(400);
    for (const path of [
      '/terminals?page=99999999999999999999',
      '/customers?page=99999999999999999999',
      '/bookings?page=99999999999999999999',
      '/bookings?items=abc',
      '/terminals?items=abc',
    ]) {
      const r = await s.api('GET', path);
      expect(r.status, path).toBeLessThan(500);
      if (r.status >= 400) expect(r.body.code, path).toBeTypeOf('string');
    }
  });

  it('validation of a huge body stops at its first fault; a small body still names every bad field', async () => {
    const guests = (n: number) => JSON.stringify({ guests: Array.from({ length: n }, () => ({ name: 7, document: [], nationality: {} })) });
    const small = await s.api('POST', '/bookings/bk_nope/guests', { rawBody: guests(2), headers: { 'content-type': 'application/json' } });
    expect(small.status).toBe(400);
    expect(Object.keys(small.body.errors).length).toBeGreaterThanOrEqual(6);
    // One error object made, not 60,000: the heap a 960 KB body can cost stays flat.
    const huge = await s.api('POST', '/bookings/bk_nope/guests', { rawBody: guests(20_000), headers: { 'content-type': 'application/json' } });
    expect(huge.status).toBe(400);
    expect(Object.keys(huge.body.errors)).toHaveLength(1);
  });

  it('a body of thousands of bad elements gets a bounded error body', async () => {
    const raw = JSON.stringify({ guests: Array.from({ length: 20_000 }, () => ({ name: 7, document: [], nationality: {} })) });
    expect(raw.length).toBeGreaterThan(500_000);
    const r = await s.api('POST', '/bookings/bk_nope/guests', { rawBody: raw, headers: { 'content-type': 'application/json' } });
    expect(r.status).toBe(400);
    expect(r.text.length).toBeLessThan(16_384);
  });

  it('a huge unknown query parameter is refused by name without echoing it, and no Link header repeats it', async () => {
    const res = await request(`${s.url}/api/terminals?junk=${'a'.repeat(8000)}`, { headers: { 'x-secret-key': s.installation.keys.test } });
    const text = await res.body.text();
    expect(res.statusCode).toBe(400);
    expect(JSON.parse(text).code).toBe('unknown_parameter');
    expect(text.length).toBeLessThan(2048);
    expect(String(res.headers.link ?? '').length).toBeLessThan(2048);
  });
});
