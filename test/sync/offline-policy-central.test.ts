/**
 * A store's offline-policy changes at its central (issue 36): each `offline_policy_change` record
 * is checked at receipt like every pushed fact (a person, a reason, a known action, valid caps, a
 * terminal only on a terminal's change) and kept once; the central serves the same reads as a store
 * (audit, policy as reported, stored payments) across its stores, and refuses changes. In process:
 * a central daemon on port 0, the records through the sync registry's appliers.
 */
import { afterEach, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { MODULES, buildRegistry } from '../../src/modules/index.js';
import { SyncRejection } from '../../src/sync/shared/registry.js';
import type { PushRecord } from '../../src/sync/shared/wire.js';
import { tx } from '../../src/db/database.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

const registry = buildRegistry(MODULES);
const AT = '2026-03-02T10:00:00.000Z';

function change(extra: Record<string, unknown> = {}) {
  return {
    id: 'oa_1',
    terminal_id: null,
    action: 'caps_set',
    actor: 'Ana López',
    reason: 'small float today',
    before: { allowed: true, max_payment_in_cents: 50_000, max_total_in_cents: 500_000, max_count: 100, max_age_hours: 48 },
    after: { allowed: true, max_payment_in_cents: 50_000, max_total_in_cents: 20_000, max_count: 5, max_age_hours: 48 },
    at: AT,
    ...extra,
  };
}

it('checks each change at receipt, keeps it once, and serves the reads across stores; changes are refused at a central', async () => {
  server = await startTestServer({ config: { role: 'central' } });
  const ctx = server.daemon.ctx;
  const account = server.installation.sandbox_id;
  let seq = 0;
  const record = (kind: string, payload: Record<string, unknown>): PushRecord => ({
    seq: ++seq,
    prev_seq: seq - 1,
    id: `sync_${seq}`,
    kind,
    account_id: account,
    live_mode: false,
    payload,
    created_at: AT,
  });
  const push = (kind: string, payload: Record<string, unknown>, storeId = 'store_a') =>
    tx(ctx.db, () => registry.sync.applier(kind)!(ctx, record(kind, payload), { storeId, keyAccountId: account }));
  const refused = (payload: Record<string, unknown>) => {
    try {
      push('offline_policy_change', payload);
    } catch (err) {
      if (err instanceof SyncRejection) return err.reason;
      throw err;
    }
    return null;
  };

  // Malformed: no person, a cap out of range, a terminal named on an account's change, a string for an object.
  expect(refused(change({ actor: '  ' }))).toMatch(/^offline_policy_change record without/);
  expect(refused(change({ after: { max_age_hours: 500 } }))).toMatch(/^offline_policy_change record without/);
  expect(refused(change({ terminal_id: 'trm_1' }))).toMatch(/^offline_policy_change record without/);
  expect(refused(change({ after: JSON.stringify({ max_count: 5 }) }))).toMatch(/^offline_policy_change record without/);
  expect(ctx.db.prepare('SELECT COUNT(*) AS n FROM central_offline_audit').get()).toEqual({ n: 0 });

  push('offline_policy_change', change());
  push('offline_policy_change', change()); // the same id again changes nothing
  push(
    'offline_policy_change',
    change({
      id: 'oa_2',
      action: 'terminal_caps_set',
      terminal_id: 'trm_9',
      before: { max_count: null },
      after: { max_count: 2 },
      at: '2026-03-02T10:05:00.000Z',
    }),
    'store_b',
  );
  push(
    'stored_payment',
    {
      id: 'sp_1',
      terminal_id: 'trm_9',
      command_id: 'tsc_1',
      checkout_id: 'ch_1',
      payment_intent_id: 'pa_1',
      offline_reference: 'R-1',
      status: 'declined',
      amount_in_cents: 1500,
      currency: 'GTQ',
      card_network: 'visa',
      card_last4: '4242',
      over_cap: null,
      reason: 'insufficient_funds',
      stored_at: AT,
      forward_by: '2026-03-04T10:00:00.000Z',
      forwarded_at: '2026-03-02T11:00:00.000Z',
      settled_at: '2026-03-02T11:00:00.000Z',
      external_id: 'mesa-4',
      description: 'Mesa 4',
      tax_id: '1234567-8',
    },
    'store_b',
  );

  const audit = await server.api('GET', '/offline_audit');
  expect(audit.status).toBe(200);
  expect(audit.body).toEqual([
    expect.objectContaining({
      id: 'oa_2',
      store_id: 'store_b',
      terminal_id: 'trm_9',
      action: 'terminal_caps_set',
      actor: 'Ana López',
      after: { max_count: 2 },
    }),
    expect.objectContaining({
      id: 'oa_1',
      store_id: 'store_a',
      terminal_id: null,
      before: expect.objectContaining({ max_count: 100 }),
      after: expect.objectContaining({ max_count: 5 }),
    }),
  ]);
  const [policy] = (await server.api('GET', '/offline_policy')).body;
  expect(policy.reported).toEqual(
    expect.arrayContaining([
      expect.objectContaining({ store_id: 'store_a', action: 'caps_set', caps: expect.objectContaining({ max_count: 5 }) }),
      expect.objectContaining({ store_id: 'store_b', terminal_id: 'trm_9', caps: { max_count: 2 } }),
    ]),
  );
  // A terminal's: its own reported caps, and its account's, which bear on it too.
  const terminal = (await server.api('GET', '/terminals/trm_9/offline_policy')).body.reported;
  expect(terminal.map((r: { store_id: string; terminal_id: string | null }) => [r.store_id, r.terminal_id])).toEqual([
    ['store_b', 'trm_9'],
    ['store_a', null],
  ]);
  const stored = (await server.api('GET', '/stored_payments?status=declined')).body;
  expect(stored).toEqual([
    expect.objectContaining({ id: 'sp_1', store_id: 'store_b', status: 'declined', final: true, card: { network: 'visa', last4: '4242' } }),
  ]);
  expect((await server.api('GET', '/stored_payments/sp_1')).body).toMatchObject({ id: 'sp_1', reason: 'insufficient_funds' });
  // The sale to collect, as a store lists it (what the till gave, from the store's record), naming the store.
  const toCollect = (await server.api('GET', '/to_collect')).body;
  expect(toCollect).toEqual([
    expect.objectContaining({
      stored_payment_id: 'sp_1',
      store_id: 'store_b',
      status: 'declined',
      reason: 'insufficient_funds',
      external_id: 'mesa-4',
      description: 'Mesa 4',
      tax_id: '1234567-8',
      card: { network: 'visa', last4: '4242' },
      checkout_id: 'ch_1',
    }),
  ]);

  const patch = await server.api('PATCH', '/offline_policy', { body: { max_count: 3, reason: 'from the central' } });
  expect(patch.status).toBe(409);
  expect(patch.body.code).toBe('offline_policy_at_store');
});
