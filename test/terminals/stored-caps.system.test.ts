/**
 * The four caps of stored payments, per account and settable per box: enforced before a charge
 * reaches the terminal while the box is offline (its central unreachable), and a stored result
 * over a cap recorded and flagged, never dropped. A manager's override is audited.
 */
import { afterEach, expect, it } from 'vitest';
import { startHarness, type Harness } from './helpers/harness.js';
import { bridgeOf } from '../../src/modules/terminals/link/index.js';
import { boxOffline, flaggedStoredPayments } from '../../src/modules/terminals/stored/service.js';
import { policyOf } from '../../src/modules/terminals/stored/policy.js';
import { allowOfflineUntil, offlineAudit, setAccountCaps } from '../../src/modules/terminals/stored/changes.js';
import { AccountsService } from '../../src/accounts/service.js';
import { tx } from '../../src/db/database.js';
import { ManualClock } from '../../devices/index.js';
import { STATE, syncState } from '../../src/sync/shared/state.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

// A central is configured (nobody listens there); the sync worker's last attempt failed, as it
// records after an unreachable central (sync/store/client.ts noteFailure). This box never joined, so
// its worker does not run: the test writes that one state key itself.
const UNREACHABLE = { central_url: 'http://127.0.0.1:9', central_key: 'sk_central_unused' };

function accountOf(h: Harness) {
  const ctx = h.server.daemon.ctx;
  const terminal = ctx.db.prepare(`SELECT account_id FROM terminals WHERE id = ?`).get(h.terminalId) as { account_id: string };
  return new AccountsService(ctx.db, ctx.clock).account(terminal.account_id)!;
}

async function storeOne(h: Harness, amount: number, reference: string) {
  const c = await h.charge({ amount_in_cents: amount });
  expect(c.status).toBe(201);
  await h.terminal.next('charge', (m) => m.command_id === c.body.id);
  await h.terminal.result(c.body.id, 'stored', { offline_reference: reference });
  await h.terminal.next('result_ack', (m) => m.command_id === c.body.id);
  return c.body.id as string;
}

it('offline, a charge over a cap is refused with the cap named; a manager override lets it through, audited', async () => {
  h = await startHarness('websocket', { protocol: 2, config: { sync: UNREACHABLE } });
  const ctx = h.server.daemon.ctx;
  expect(boxOffline(ctx)).toBe(false);
  syncState(ctx.db).setState(STATE.lastAttemptOk, 0);
  expect(boxOffline(ctx)).toBe(true);
  const account = accountOf(h);

  // The box's caps (config) until the account has its own.
  expect(policyOf(ctx, account)).toMatchObject({ allowed: true, max_payment_in_cents: 50_000, remaining_count: 100 });
  const over = await h.charge({ amount_in_cents: 60_000 });
  expect(over.status).toBe(422);
  expect(over.body).toMatchObject({ code: 'offline_cap_reached', reason: 'max_payment', caps: ['max_payment'] });
  expect(h.terminal.count('charge')).toBe(0);

  tx(ctx.db, () => setAccountCaps(ctx, account, { max_count: 1, max_total_in_cents: 10_000 }, { actor: 'maria', reason: 'small float today' }));
  bridgeOf(ctx).refreshPolicies(account.id);
  expect(await h.terminal.next('offline_policy', (p) => p.remaining_count === 1)).toMatchObject({
    remaining_amount_in_cents: 10_000,
    max_payment_in_cents: 10_000,
  });

  await storeOne(h, 4_000, 'r-1');
  const full = await h.charge({ amount_in_cents: 1_000 });
  expect(full.body).toMatchObject({ code: 'offline_cap_reached', reason: 'max_count' });
  expect(await h.terminal.next('offline_policy', (p) => p.remaining_count === 0)).toMatchObject({ allowed: false, max_payment_in_cents: 0 });

  // The manager raises the count for the afternoon: the same charge goes through.
  const until = new Date(ctx.clock.now() + 4 * 3600_000).toISOString();
  tx(ctx.db, () => allowOfflineUntil(ctx, account, until, { max_count: 5 }, { actor: 'maria', reason: 'card queue at the door' }));
  bridgeOf(ctx).refreshPolicies(account.id);
  expect(await h.terminal.next('offline_policy', (p) => p.allowed && p.remaining_count === 4)).toMatchObject({ remaining_amount_in_cents: 6_000 });
  await storeOne(h, 1_000, 'r-2');
  const audit = offlineAudit(ctx, account);
  expect(audit.map((a) => [a.action, a.actor, a.reason])).toEqual([
    ['override_allow', 'maria', 'card queue at the door'],
    ['caps_set', 'maria', 'small float today'],
  ]);
  // before and after are objects, not strings holding JSON.
  expect(audit[0].after).toMatchObject({ max_count: 5, allowed: true, until });
  expect(() => tx(ctx.db, () => setAccountCaps(ctx, account, { max_age_hours: 200 }, { actor: 'maria', reason: 'x' }))).toThrow();
  expect(() => tx(ctx.db, () => setAccountCaps(ctx, account, { max_count: 3 }, { actor: 'maria', reason: ' ' }))).toThrow();
});

it('online nothing is refused; a stored result over a cap is recorded as it is and flagged for the manager', async () => {
  h = await startHarness('serial', { protocol: 2 });
  const ctx = h.server.daemon.ctx;
  expect(boxOffline(ctx)).toBe(false);
  const account = accountOf(h);
  // The terminal decided alone: 900 GTQ stored against a 500 GTQ per-payment cap.
  const id = await storeOne(h, 90_000, 'big-1');
  const flagged = flaggedStoredPayments(ctx, account);
  expect(flagged).toHaveLength(1);
  expect(flagged[0]).toMatchObject({ command_id: id, status: 'stored', amount_in_cents: 90_000 });
  expect(JSON.parse(flagged[0].over_cap!)).toEqual(['max_payment']);
  // It counts against the caps like any stored payment.
  expect(await h.terminal.next('offline_policy', (p) => p.remaining_count === 99)).toMatchObject({ remaining_amount_in_cents: 410_000 });
});

it('a terminal that never forwards: posd expires the payment at its deadline, the sale is owed again, a late approval is flagged', async () => {
  const clock = new ManualClock(Date.parse('2026-04-01T10:00:00.000Z'));
  h = await startHarness('websocket', { protocol: 2, clock });
  const ctx = h.server.daemon.ctx;
  const id = await storeOne(h, 2_000, 'never-1');
  const sp = () => ctx.db.prepare(`SELECT status, reason, late_outcome FROM stored_payments WHERE command_id = ?`).get(id);
  clock.advance(48 * 3600_000 - 1);
  expect(sp()).toMatchObject({ status: 'stored' });
  clock.advance(1);
  expect(sp()).toEqual({ status: 'expired', reason: 'not_forwarded_in_time', late_outcome: null });
  expect((await h.get(id)).checkout_status).toBe('unpaid');
  expect(await h.terminal.next('offline_policy', (p) => p.remaining_count === 100 && p.forward_by === null)).toMatchObject({ allowed: true });
  // The terminal forwards after all: acknowledged so it can forget it, kept for the manager, not applied.
  await h.terminal.forward(id, 'never-1', 'approved');
  await h.terminal.next('forward_ack', (a) => a.offline_reference === 'never-1');
  expect(sp()).toEqual({ status: 'expired', reason: 'not_forwarded_in_time', late_outcome: 'approved' });
  expect((await h.get(id)).checkout_status).toBe('unpaid');
  expect(flaggedStoredPayments(ctx, accountOf(h)).map((r) => r.command_id)).toEqual([id]);
});
