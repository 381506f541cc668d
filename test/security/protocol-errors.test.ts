import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { ERRORS } from '../../src/errors.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { rawRequest, type RawAnswer } from '../helpers/raw-http.js';

// Issue 17, hole 8: every error answer, down to the HTTP parser's, is the spec's error body with a
// catalogue code; no FST_ERR_* code leaks and no answer echoes the whole path.
let s: TestServer;
let key: string;
beforeAll(async () => {
  s = await startTestServer({ config: { http: { port: 0, host: '127.0.0.1', body_limit_bytes: 4096 } } });
  key = s.installation.keys.test;
});
afterAll(() => s.stop());

function expectCatalogued(a: RawAnswer, status: number, code: string): void {
  expect(a.status, a.raw.slice(0, 300)).toBe(status);
  expect(a.raw).not.toMatch(/FST_ERR/);
  const body = JSON.parse(a.body);
  expect(body.code).toBe(code);
  expect(ERRORS[code as keyof typeof ERRORS]?.status).toBe(status);
  expect(typeof body.message).toBe('string');
  expect(Object.keys(body).every((k) => ['message', 'code', 'errors'].includes(k))).toBe(true);
}

const get = (path: string, extra = '') => `GET ${path} HTTP/1.1\r\nHost: x\r\nX-Secret-Key: ${key}\r\n${extra}Connection: close\r\n\r\n`;
const post = (path: string, body: string, type = 'application/json') =>
  `POST ${path} HTTP/1.1\r\nHost: x\r\nX-Secret-Key: ${key}\r\nContent-Type: ${type}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;

describe('parser-level errors carry a catalogue code', () => {
  it('bad JSON and a body that is not JSON whatever its content type are 400 invalid_json', async () => {
    expectCatalogued(await rawRequest(s.url, post('/api/cash_sales', '{"amount_in_cents":')), 400, 'invalid_json');
    expectCatalogued(await rawRequest(s.url, post('/api/cash_sales', 'a=1&b=2', 'application/x-www-form-urlencoded')), 400, 'invalid_json');
  });

  it('a body over the limit is 413 payload_too_large', async () => {
    expectCatalogued(await rawRequest(s.url, post('/api/cash_sales', `{"x":"${'a'.repeat(8000)}"}`)), 413, 'payload_too_large');
  });

  it('a path parameter past its length is 414 uri_too_long, without echoing the path', async () => {
    const a = await rawRequest(s.url, get(`/api/terminals/${'z'.repeat(5000)}`));
    expectCatalogued(a, 414, 'uri_too_long');
    expect(a.body).not.toContain('zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz');
  });

  it('a path that is not valid percent-encoding is 400 bad_request', async () => {
    expectCatalogued(await rawRequest(s.url, get('/api/terminals/%E0%A4%A')), 400, 'bad_request');
  });

  it('headers past the limit are 431 headers_too_large', async () => {
    expectCatalogued(await rawRequest(s.url, get('/api/terminals', `X-Junk: ${'j'.repeat(20_000)}\r\n`)), 431, 'headers_too_large');
  });

  it('a request line that is not HTTP is 400 bad_request', async () => {
    expectCatalogued(await rawRequest(s.url, 'HELLO THERE\r\n\r\n'), 400, 'bad_request');
    expectCatalogued(await rawRequest(s.url, 'GET /api/terminals HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n'), 400, 'bad_request');
  });

  it('an unknown route is 404 route_not_found and echoes at most a bounded path', async () => {
    const a = await rawRequest(s.url, get(`/api/nothing-here/${'q'.repeat(3000)}`));
    expectCatalogued(a, 404, 'route_not_found');
    expect(a.body.length).toBeLessThan(400);
  });

  it('a method a route does not take is 405 method_not_allowed', async () => {
    const a = await rawRequest(s.url, `PUT /api/terminals HTTP/1.1\r\nHost: x\r\nX-Secret-Key: ${key}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`);
    expectCatalogued(a, 405, 'method_not_allowed');
    expect(a.headers.allow).toMatch(/GET/);
  });

  it('HEAD is answered by the GET route: its headers, Content-Length included, and no body', async () => {
    const g = await request(`${s.url}/api/test`, { headers: { 'x-secret-key': key } });
    const gBody = await g.body.text();
    const h = await request(`${s.url}/api/test`, { method: 'HEAD', headers: { 'x-secret-key': key } });
    expect(g.statusCode).toBe(200);
    expect(h.statusCode).toBe(200);
    expect(await h.body.text()).toBe('');
    expect(Number(h.headers['content-length'])).toBe(Buffer.byteLength(gBody));
    expect(h.headers['content-type']).toBe(g.headers['content-type']);
    // Without a key HEAD is refused as GET is.
    const refused = await request(`${s.url}/api/test`, { method: 'HEAD' });
    expect(refused.statusCode).toBe(401);
    expect(await refused.body.text()).toBe('');
    // The methods a path takes name HEAD where they name GET.
    const a = await rawRequest(s.url, `PUT /api/terminals HTTP/1.1\r\nHost: x\r\nX-Secret-Key: ${key}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`);
    expect(a.headers.allow).toMatch(/\bGET\b.*\bHEAD\b|\bHEAD\b.*\bGET\b/);
  });
});
