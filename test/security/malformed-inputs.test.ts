import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { rawRequest } from '../helpers/raw-http.js';

// Issue 17, hole 6: input at fault is a 400 in the error body on every list, and a flood of
// malformed requests writes at most one line per kind a minute, never a stack.
let s: TestServer;
const clock = new ManualClock();
const lines: Array<Record<string, unknown>> = [];
beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n')) if (l.trim()) lines.push(JSON.parse(l));
      done();
    },
  });
  s = await startTestServer({ clock, log: pino({ level: 'info' }, sink) });
});
afterAll(() => s.stop());

interface Operation {
  method: string;
  path: string;
  query: string[];
}

async function listOperations(): Promise<Operation[]> {
  const r = await s.api('GET', '/../openapi.json');
  expect(r.status).toBe(200);
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(r.body.paths as Record<string, Record<string, { parameters?: Array<{ in: string; name: string }> }>>)) {
    const get = item.get;
    if (!get || path.includes('{')) continue;
    const query = (get.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
    if (query.includes('page')) ops.push({ method: 'GET', path, query });
  }
  return ops;
}

describe('malformed input on lists', () => {
  it('a 20-digit page is a 400 with a catalogue code on every list', async () => {
    const ops = await listOperations();
    expect(ops.length).toBeGreaterThan(20);
    for (const op of ops) {
      const r = await s.api('GET', `${op.path}?page=99999999999999999999`);
      expect(r.status, op.path).toBe(400);
      expect(r.body.code, op.path).toBe('validation_error');
      expect(Object.keys(r.body.errors ?? {}), op.path).toContain('page');
    }
  });

  it('GET /bookings?items=abc is a 400 naming the parameter, not a 500', async () => {
    const r = await s.api('GET', '/bookings?items=abc');
    expect(r.status).toBe(400);
    expect(['validation_error', 'unknown_parameter']).toContain(r.body.code);
    expect(JSON.stringify(r.body.errors)).toContain('items');
  });
});

describe('logging malformed requests', () => {
  it('logs at most one line per kind a minute, without a stack, and counts the rest', async () => {
    // The lists above logged their kinds a moment ago: start from a fresh minute.
    clock.advance(60_000);
    lines.length = 0;
    for (let i = 0; i < 30; i++) {
      expect((await s.api('POST', '/cash_sales', { rawBody: '{"amount_in_cents":', headers: { 'content-type': 'application/json' } })).status).toBe(400);
      expect((await s.api('GET', '/terminals?page=0')).status).toBe(400);
      expect((await rawRequest(s.url, 'NOT HTTP AT ALL\r\n\r\n')).status).toBe(400);
    }
    const malformed = lines.filter((l) => l.msg?.toString().startsWith('malformed request'));
    expect(malformed.map((l) => l.code).sort()).toEqual(['bad_request', 'invalid_json', 'validation_error']);
    expect(JSON.stringify(lines)).not.toMatch(/"stack"|\n\s+at /);

    // A minute later each kind gets one more line, saying how many went unlogged.
    clock.advance(60_000);
    lines.length = 0;
    expect((await s.api('POST', '/cash_sales', { rawBody: '[', headers: { 'content-type': 'application/json' } })).status).toBe(400);
    const again = lines.filter((l) => l.msg?.toString().startsWith('malformed request'));
    expect(again).toHaveLength(1);
    expect(again[0]).toMatchObject({ code: 'invalid_json', suppressed: 29 });
  });
});
