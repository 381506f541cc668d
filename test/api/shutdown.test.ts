import { once } from 'node:events';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { request } from 'undici';
import { startTestServer } from '../helpers/server.js';
import { MODULES_WITH_FIXTURE, fixtureEvents } from '../helpers/fixture-module.js';
import { openDatabase } from '../../src/db/database.js';

describe('stopping (the SIGTERM path)', () => {
  it('finishes the request in flight, refuses new ones, closes the database, and the write is on disk', async () => {
    const s = await startTestServer({ modules: MODULES_WITH_FIXTURE });
    const dir = s.dataDir;
    const handling = once(fixtureEvents, 'handling');
    const inFlight = s.api('POST', '/fixture_notes', { body: { text: 'in flight', amount_in_cents: 10, delay_ms: 200 } });
    await handling;
    const stopped = s.daemon.stop();
    const late = await request(`${s.url}/api/test`, { headers: { 'x-secret-key': s.installation.keys.test } }).then(
      (r) => r.statusCode,
      () => 'refused',
    );
    expect(['refused', 503]).toContain(late);
    const r = await inFlight;
    expect(r.status).toBe(201);
    await stopped;
    expect(s.daemon.ctx.db.open).toBe(false);
    const db = openDatabase(join(dir, 'posd.db'));
    try {
      expect(db.prepare("SELECT count(*) AS n FROM fixture_notes WHERE text = 'in flight'").get()).toEqual({ n: 1 });
    } finally {
      db.close();
      // The daemon is stopped already (its stop runs once); this removes its data folder.
      await s.stop();
    }
  });
});
