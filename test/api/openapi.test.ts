import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

describe('daemon plumbing outside /api', () => {
  it('/healthz answers without a key', async () => {
    const r = await request(`${s.url}/healthz`);
    expect(r.statusCode).toBe(200);
    expect(await r.body.json()).toEqual({ status: 'ok' });
  });

  it('/openapi.json describes every /api route from the same TypeBox schemas', async () => {
    const r = await request(`${s.url}/openapi.json`);
    expect(r.statusCode).toBe(200);
    const doc = (await r.body.json()) as any;
    expect(doc.openapi).toMatch(/^3\./);
    expect(doc.servers).toEqual([{ url: '/api' }]);
    for (const path of ['/test', '/account', '/balances', '/connected_accounts', '/connected_accounts/{id}']) {
      expect(doc.paths[path]?.get, path).toBeDefined();
    }
    expect(doc.paths['/healthz']).toBeUndefined();
    // One account, or (an organization key naming none) every account of the organization.
    const answer = doc.paths['/account'].get.responses['200'].content['application/json'].schema;
    const account = answer.anyOf.find((s: { type?: string }) => s.type === 'object');
    expect(answer.anyOf.find((s: { type?: string }) => s.type === 'array').items.required).toEqual(account.required);
    expect(account.required).toEqual(expect.arrayContaining(['id', 'environment', 'live_mode', 'organization_id']));
    expect(doc.components.securitySchemes.secretKey).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-SECRET-KEY' });
  });
});
