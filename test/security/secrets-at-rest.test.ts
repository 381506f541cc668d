import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { databaseFile } from '../../src/db/paths.js';

// Issue 17, hole 2: a copy of the database (or a backup of it) holds no secret in clear: not the
// pairing token in a stored Idempotency-Key answer, not a merchant's tax-invoicing api_key.
let s: TestServer;

beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

/** Whether the text appears anywhere in the database's files on disk (main file and WAL). */
function onDisk(text: string): boolean {
  const file = databaseFile(s.config);
  const needle = Buffer.from(text, 'utf8');
  return [file, `${file}-wal`].some((f) => existsSync(f) && readFileSync(f).includes(needle));
}

describe('secrets at rest', () => {
  it('a terminal pairing token made under an Idempotency-Key is not kept in clear, and the replay still shows it', async () => {
    const headers = { 'idempotency-key': 'pair-till-1' };
    const made = await s.api('POST', '/terminals', { body: { name: 'Till 1' }, headers });
    expect(made.status).toBe(201);
    const token = made.body.pairing_token as string;
    expect(token).toMatch(/^tpt_/);
    const replay = await s.api('POST', '/terminals', { body: { name: 'Till 1' }, headers });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body.pairing_token).toBe(token);
    const stored = s.daemon.ctx.db.prepare("SELECT response FROM idempotency_keys WHERE key = 'pair-till-1'").get() as { response: string };
    expect(stored.response).not.toContain(token);
    expect(onDisk(token)).toBe(false);
  });

  it("a merchant's tax-invoicing api_key is sealed with the box's key", async () => {
    const child = await s.api('POST', '/connected_accounts', { body: { email: 'bella@example.com', name: 'Salón Bella' } });
    expect(child.status).toBe(201);
    const body = { provider: 'infile', establishment_code: '1', username: 'bella-user-7f3a', api_key: 'SECRET-KEY-9b1c77e2' };
    const on = await s.api('PUT', `/connected_accounts/${child.body.id}/tax_invoicing`, { body });
    expect(on.status).toBe(200);
    expect(onDisk('SECRET-KEY-9b1c77e2')).toBe(false);
    expect(onDisk('bella-user-7f3a')).toBe(false);
  });
});
