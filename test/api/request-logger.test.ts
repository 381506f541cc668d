import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lazyRequestLogger } from '../../src/api/request-logger.js';
import { MODULES_WITH_FIXTURE } from '../helpers/fixture-module.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// A request's logger is made only when the request logs (src/api/request-logger.ts, decision 0246):
// what it logs still carries the request's id, and the process's redaction.

const lines: Record<string, unknown>[] = [];
const sink = new Writable({
  write(chunk, _enc, done) {
    for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line));
    done();
  },
});

let s: TestServer;
beforeAll(async () => {
  const log = pino({ level: 'info', redact: { paths: ['headers["x-secret-key"]'], censor: '[redacted]' } }, sink);
  s = await startTestServer({ modules: MODULES_WITH_FIXTURE, log });
});
afterAll(() => s.stop());

describe('the request logger', () => {
  it('logs a failed request with its request id, one id per request', async () => {
    const failing = { text: 'dies', amount_in_cents: 1, fail_after_commit: true };
    expect((await s.api('POST', '/fixture_notes', { body: failing })).status).toBe(500);
    expect((await s.api('POST', '/fixture_notes', { body: failing })).status).toBe(500);
    const failed = lines.filter((l) => l.msg === 'request failed');
    expect(failed).toHaveLength(2);
    for (const l of failed) {
      expect(l.reqId).toMatch(/^req-/);
      expect((l.err as { message: string }).message).toBe('the process died before it could answer');
    }
    expect(failed[0].reqId).not.toBe(failed[1].reqId);
  });

  it('a child of the request logger keeps the request id and the redaction', async () => {
    const seen: Record<string, unknown>[] = [];
    const out = new Writable({
      write(chunk, _enc, done) {
        seen.push(JSON.parse(String(chunk)));
        done();
      },
    });
    const parent = pino({ level: 'info', redact: { paths: ['key'], censor: '[redacted]' } }, out);
    const log = lazyRequestLogger(parent, { reqId: 'req-7' }, {});
    expect(log.level).toBe('info');
    log.debug('not written');
    log.child({ area: 'x' }).warn({ key: 'sk_test_secret' }, 'hello');
    await new Promise((r) => setImmediate(r));
    expect(seen).toEqual([expect.objectContaining({ reqId: 'req-7', area: 'x', key: '[redacted]', msg: 'hello' })]);
  });
});
