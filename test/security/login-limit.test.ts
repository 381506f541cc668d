import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from 'undici';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { PageClient } from '../helpers/page-client.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { tx } from '../../src/db/database.js';
import { hashPassword } from '../../src/modules/ops/password.js';
import { setManagerPassword } from '../../src/modules/ops/store.js';

// Issue 17, hole 10: the manager password's limit was per address only (600 guesses from 60
// addresses were all checked). A global limit with back-off now refuses outside addresses unchecked,
// while the right password from the box's own network still gets in. The box's own network is
// 127.0.0.1 here; 127.0.0.2 and up play addresses from elsewhere.
const PASSWORD = 'open sesame 2026';
const clock = new ManualClock();
let s: TestServer;
const agents: Agent[] = [];

function from(address: string): PageClient {
  const agent = new Agent({ localAddress: address });
  agents.push(agent);
  return new PageClient(s.url, agent);
}

beforeAll(async () => {
  s = await startTestServer({ clock, config: { http: { port: 0, host: '127.0.0.1', own_networks: ['127.0.0.1/32'] } } });
  const hash = await hashPassword(PASSWORD);
  tx(s.daemon.ctx.db, () => setManagerPassword(s.daemon.ctx.db, hash));
});
afterAll(async () => {
  await Promise.all(agents.map((a) => a.close()));
  await s.stop();
});

/** 20 wrong guesses spread over 4 outside addresses, each under its own per-address limit of 10. */
async function spreadGuesses(first: number): Promise<void> {
  for (let a = 0; a < 4; a++) {
    const page = from(`127.0.0.${first + a}`);
    for (let i = 0; i < 5; i++) {
      const r = await page.login(`guess ${a}-${i}`);
      expect(r.status, `${first + a}#${i}: ${r.text.match(/wait \d+/)}`).toBe(401);
    }
  }
}

describe('the manager password global limit', () => {
  it('locks outside addresses after spread guesses, with a back-off, while the box network still logs in', async () => {
    await spreadGuesses(2);
    // A fresh outside address, with the right password, is refused unchecked.
    const outsider = from('127.0.0.20');
    const refused = await outsider.login(PASSWORD);
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('60');
    expect(outsider.cookies.has('posd_session')).toBe(false);

    // The manager at the box gets in.
    const manager = from('127.0.0.1');
    expect((await manager.login(PASSWORD)).status).toBe(303);
    expect(manager.cookies.has('posd_session')).toBe(true);

    // The lock ends; the next wave of guesses locks for twice as long.
    clock.advance(61_000);
    expect((await from('127.0.0.21').login(PASSWORD)).status).toBe(303);
    await spreadGuesses(30);
    const second = await from('127.0.0.22').login(PASSWORD);
    expect(second.status).toBe(429);
    expect(second.headers['retry-after']).toBe('120');
    // ~45 memory-hard password checks (argon2id, ~0.3 s each on 2 cores) by design.
  }, 90_000);
});
