import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { ERRORS } from '../../src/errors.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { MODULES_WITH_FIXTURE } from '../helpers/fixture-module.js';

function documentedCodes(): Map<string, number> {
  const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
  const rows = new Map<string, number>();
  for (const line of doc.split('\n')) {
    const m = /^\|\s*([a-z_]+)\s*\|\s*(\d{3})\s*\|/.exec(line);
    if (m) rows.set(m[1], Number(m[2]));
  }
  return rows;
}

describe('the error catalogue', () => {
  it('docs/errors.md lists exactly the codes of src/errors.ts, with the same statuses', () => {
    const documented = documentedCodes();
    const catalogue = new Map(Object.entries(ERRORS).map(([code, e]) => [code, e.status as number]));
    expect([...documented.keys()].sort()).toEqual([...catalogue.keys()].sort());
    for (const [code, status] of catalogue) expect(documented.get(code), code).toBe(status);
  });
});

describe('error bodies on the wire', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ modules: MODULES_WITH_FIXTURE, config: { http: { port: 0, host: '127.0.0.1', body_limit_bytes: 4096 } } });
  });
  afterAll(() => s.stop());

  const count = async () => (await s.api('GET', '/fixture_notes/count')).body.count as number;

  it('an unknown route answers 404 with a message', async () => {
    const r = await s.api('GET', '/no/such/thing');
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({ code: 'route_not_found' });
    expect(r.body.message).toContain('/api/no/such/thing');
  });

  it('a body that is not JSON answers 400 invalid_json and writes nothing', async () => {
    for (const rawBody of ['{"text": "x",', 'not json', '[1,2]', '"a string"', '42', 'null']) {
      const r = await s.api('POST', '/fixture_notes', { rawBody, headers: { 'content-type': 'application/json' } });
      expect(r.status, rawBody).toBe(400);
      expect(r.body.code).toBe('invalid_json');
      expect(typeof r.body.message).toBe('string');
    }
    expect(await count()).toBe(0);
  });

  it('validation errors name every bad field and write nothing', async () => {
    const r = await s.api('POST', '/fixture_notes', { body: { amount_in_cents: '10.5' } });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('validation_error');
    expect(Object.keys(r.body.errors).sort()).toEqual(['amount_in_cents', 'text']);
    expect(r.body.errors.text).toEqual(['is required']);
    for (const amount of [-5, 1.5, 'ten', '1.5', '1e3', ' 7', null, 1e300]) {
      const bad = await s.api('POST', '/fixture_notes', { body: { text: 'x', amount_in_cents: amount } });
      expect(bad.status, String(amount)).toBe(400);
      expect(bad.body.errors.amount_in_cents.length).toBeGreaterThan(0);
    }
    expect(await count()).toBe(0);
  });

  it('an oversized body answers 413 in the error body', async () => {
    const r = await s.api('POST', '/fixture_notes', { body: { text: 'x'.repeat(10_000), amount_in_cents: 1 } });
    expect(r.status).toBe(413);
    expect(r.body.code).toBe('payload_too_large');
    expect(await count()).toBe(0);
  });

  it('an unknown field in a body is refused by name, never silently dropped (issue 14)', async () => {
    const r = await s.api('POST', '/fixture_notes', { body: { text: 'ok', amount_in_cents: 5, surprise: true } });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('unknown_parameter');
    expect(r.body.message).toContain('surprise');
    expect(r.body.errors).toEqual({ surprise: ['is not a known parameter'] });
    expect(await count()).toBe(0);
  });

  it('a body wrapped in the resource name is the same as the flat one', async () => {
    const r = await s.api('POST', '/fixture_notes', { body: { fixture_note: { text: 'wrapped', amount_in_cents: 3 } } });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ text: 'wrapped', amount_in_cents: 3 });
    const bad = await s.api('POST', '/fixture_notes', { body: { fixture_note: { text: 'wrapped', amount_in_cents: 3, extra: 1 } } });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual({ extra: ['is not a known parameter'] });
  });

  it('an integer field takes an integer-valued string, as the hosted service does', async () => {
    const r = await s.api('POST', '/fixture_notes', { body: { text: 'ok', amount_in_cents: '7' } });
    expect(r.status).toBe(201);
    expect(r.body.amount_in_cents).toBe(7);
  });

  it('a malformed request line or header never gets a 500', async () => {
    const res = await request(`${s.url}/api/account?page=%E0%A4%A`, { headers: { 'x-secret-key': s.installation.keys.test } });
    expect(res.statusCode).toBeLessThan(500);
    await res.body.text();
    const weird = await s.api('GET', '/connected_accounts?page=0&items=101');
    expect(weird.status).toBe(400);
    expect(Object.keys(weird.body.errors).sort()).toEqual(['items', 'page']);
  });
});
