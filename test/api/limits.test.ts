import { afterEach, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ManualClock } from '../helpers/manual-clock.js';

let s: TestServer | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

describe('rate limits (spec section 8)', () => {
  it('allows 60 requests per second per key, then 429 with Retry-After; the next second is open again', async () => {
    const clock = new ManualClock(Date.parse('2026-03-01T10:00:00.000Z'));
    s = await startTestServer({ clock, config: { limits: { per_key_per_second: 60 } } });
    const results = [];
    for (let i = 0; i < 61; i++) results.push(await s.api('GET', '/test'));
    expect(results.slice(0, 60).every((r) => r.status === 200)).toBe(true);
    const over = results[60];
    expect(over.status).toBe(429);
    expect(over.body.code).toBe('rate_limited');
    expect(Number(over.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // Another key is independent of the first.
    expect((await s.api('GET', '/test', { key: s.installation.keys.live })).status).toBe(200);
    clock.advance(1000);
    expect((await s.api('GET', '/test')).status).toBe(200);
  });

  it('the burst is 60 in any rolling second, not per fixed window: 60 late in one second and 15 early in the next let 60 through (issue 15)', async () => {
    const clock = new ManualClock(Date.parse('2026-03-01T10:00:00.500Z'));
    s = await startTestServer({ clock, config: { limits: { per_key_per_second: 60 } } });
    const statuses: number[] = [];
    for (let i = 0; i < 60; i++) statuses.push((await s.api('GET', '/test')).status);
    clock.advance(100); // 10:00:00.600, a new fixed window
    for (let i = 0; i < 15; i++) statuses.push((await s.api('GET', '/test')).status);
    expect(statuses.filter((st) => st === 200)).toHaveLength(60);
    const refused = await s.api('GET', '/test');
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('1');
    clock.advance(901); // the first 60 have left the rolling second
    expect((await s.api('GET', '/test')).status).toBe(200);
  });

  it('limits /users per IP to 300 per 5 minutes, format variants sharing the window', async () => {
    const clock = new ManualClock(Date.parse('2026-03-01T10:00:00.000Z'));
    s = await startTestServer({ clock, config: { limits: { per_key_per_second: 10_000, users_per_ip_per_window: 5, users_per_test_key_per_window: 1000 } } });
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await s.api('GET', i % 2 ? '/users.json' : '/users', { key: s.installation.keys.live })).status);
    // The route may not exist yet (404), but the window counts every call and the sixth is refused.
    expect(statuses.slice(0, 5).every((st) => st !== 429)).toBe(true);
    expect(statuses[5]).toBe(429);
    expect((await s.api('GET', '/test', { key: s.installation.keys.live })).status).toBe(200);
    clock.advance(300_000);
    expect((await s.api('GET', '/users', { key: s.installation.keys.live })).status).not.toBe(429);
  });

  it('limits /users per test key', async () => {
    const clock = new ManualClock(Date.parse('2026-03-01T10:00:00.000Z'));
    s = await startTestServer({ clock, config: { limits: { per_key_per_second: 10_000, users_per_ip_per_window: 1000, users_per_test_key_per_window: 3 } } });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await s.api('GET', '/users')).status);
    expect(statuses[3]).toBe(429);
    // A live key is not under the test-key window.
    expect((await s.api('GET', '/users', { key: s.installation.keys.live })).status).not.toBe(429);
  });
});

describe('blocking rules', () => {
  it('answers 503 Blocked to a blocked key prefix or user agent, and nothing else', async () => {
    s = await startTestServer({ config: { blocking: { key_prefixes: ['sk_live_'], user_agents: ['BadBot'] } } });
    const blockedKey = await s.api('GET', '/test', { key: s.installation.keys.live });
    expect(blockedKey.status).toBe(503);
    expect(blockedKey.body).toMatchObject({ message: 'Blocked', code: 'blocked' });
    const blockedAgent = await s.api('GET', '/test', { headers: { 'user-agent': 'BadBot/1.0' } });
    expect(blockedAgent.status).toBe(503);
    expect((await s.api('GET', '/test')).status).toBe(200);
  });

  it('blocks by IP address', async () => {
    s = await startTestServer({ config: { blocking: { ips: ['127.0.0.1'] } } });
    expect((await s.api('GET', '/test')).status).toBe(503);
  });
});
