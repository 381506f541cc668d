/**
 * Stored (offline) card payments through the API alone (issue 36): a till program can read the
 * policy (account and terminal), the stored payments, the audit, the sales to collect and the
 * outage report; a change of the policy takes a named manager's credential (never the till's
 * secret key alone) and the audit names that manager; a terminal's own caps sit beside its
 * account's; the 422 names each cap's value and what is left; /openapi.json documents it all.
 * Real daemon, real HTTP, a scripted terminal over a real WebSocket.
 */
import { afterEach, expect, it } from 'vitest';
import { startHarness, type Harness } from './helpers/harness.js';
import { tx } from '../../src/db/database.js';
import { AccountsService } from '../../src/accounts/service.js';
import { addManager, issueManagerToken } from '../../src/modules/ops/managers.js';
import { hashPassword } from '../../src/modules/ops/password.js';
import { STATE, syncState } from '../../src/sync/shared/state.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

const UNREACHABLE = { central_url: 'http://127.0.0.1:9', central_key: 'sk_central_unused' };

it('reads everything the page shows; changes only with a named manager, audited under their name', async () => {
  h = await startHarness('websocket', { protocol: 2, config: { sync: UNREACHABLE } });
  const ctx = h.server.daemon.ctx;
  const api = h.server.api.bind(h.server);
  const hash = await hashPassword('a long password 1');
  const token = tx(ctx.db, () => issueManagerToken(ctx.db, addManager(ctx.db, 'Ana López', hash, new Date().toISOString()).id));
  const asManager = { 'x-manager-token': token };

  const [policy] = (await api('GET', '/offline_policy')).body;
  expect(policy).toMatchObject({
    caps: { allowed: true, max_payment_in_cents: 50_000, max_count: 100 },
    override: null,
    policy: { allowed: true, remaining_count: 100 },
  });

  // The till's key alone changes nothing: 403, and no audit entry.
  const tillOnly = await api('PATCH', '/offline_policy', { body: { max_count: 5, reason: 'from the till' } });
  expect(tillOnly.status).toBe(403);
  expect(tillOnly.body.code).toBe('manager_credential_required');
  const wrongToken = await api('PATCH', '/offline_policy', { body: { max_count: 5, reason: 'x' }, headers: { 'x-manager-token': `pmt_${'A'.repeat(43)}` } });
  expect(wrongToken.status).toBe(403);
  expect((await api('GET', '/offline_audit')).body).toEqual([]);
  // An organization key reads, never writes.
  const accounts = new AccountsService(ctx.db, ctx.clock);
  const orgKey = tx(ctx.db, () => accounts.createKey({ organizationId: h!.server.installation.organization_id, environment: 'test' }).key);
  expect((await api('GET', '/offline_policy', { key: orgKey })).status).toBe(200);
  expect((await api('PATCH', '/offline_policy', { key: orgKey, headers: asManager, body: { max_count: 5, reason: 'x' } })).body.code).toBe(
    'organization_key_unsupported',
  );

  const set = await api('PATCH', '/offline_policy', { headers: asManager, body: { max_count: 5, max_total_in_cents: 20_000, reason: 'small float today' } });
  expect(set.status).toBe(200);
  expect(set.body).toMatchObject({
    standing_caps: { max_count: 5, max_total_in_cents: 20_000 },
    policy: { remaining_count: 5, remaining_amount_in_cents: 20_000 },
  });

  // The terminal's own cap, beside the account's: the terminal hears it, the API shows it.
  const tcaps = await api('PATCH', `/terminals/${h.terminalId}/offline_policy`, {
    headers: asManager,
    body: { max_payment_in_cents: 2_000, reason: 'counter 2 takes small sales' },
  });
  expect(tcaps.status).toBe(200);
  expect(tcaps.body).toMatchObject({
    terminal_id: h.terminalId,
    terminal_caps: { max_payment_in_cents: 2_000, max_count: null },
    policy: { max_payment_in_cents: 2_000 },
  });
  expect(await h.terminal.next('offline_policy', (p) => p.max_payment_in_cents === 2_000)).toMatchObject({ remaining_count: 5 });
  expect((await api('GET', `/terminals/${h.terminalId}/offline_policy`)).body.policy).toMatchObject({
    max_payment_in_cents: 2_000,
    remaining_amount_in_cents: 20_000,
  });

  // Offline: the 422 names each cap in force, its value and what is left.
  syncState(ctx.db).setState(STATE.lastAttemptOk, 0);
  const over = await h.charge({ amount_in_cents: 3_000 });
  expect(over.status).toBe(422);
  expect(over.body).toMatchObject({ code: 'offline_cap_reached', reason: 'max_payment', caps: ['max_payment'] });
  expect(over.body.limits).toEqual(
    expect.arrayContaining([
      { cap: 'max_payment', scope: 'terminal', value: 2_000, left: null, passed: true },
      { cap: 'max_payment', scope: 'account', value: 50_000, left: null, passed: false },
      { cap: 'max_total', scope: 'account', value: 20_000, left: 20_000, passed: false },
      { cap: 'max_count', scope: 'account', value: 5, left: 5, passed: false },
    ]),
  );

  // A stored payment, read through the API; then declined later: a sale to collect.
  const c = await h.charge({ amount_in_cents: 1_500, description: 'Mesa 4' });
  await h.terminal.next('charge', (m) => m.command_id === c.body.id);
  await h.terminal.result(c.body.id, 'stored', { offline_reference: 'R-1', card: { network: 'visa', last4: '4242' } });
  await h.terminal.next('result_ack', (m) => m.command_id === c.body.id);
  const stored = (await api('GET', '/stored_payments?status=stored')).body;
  expect(stored).toHaveLength(1);
  expect(stored[0]).toMatchObject({
    object: 'stored_payment',
    command_id: c.body.id,
    status: 'stored',
    final: false,
    card: { network: 'visa', last4: '4242' },
    store_id: null,
  });
  expect((await api('GET', `/stored_payments/${stored[0].id}`)).body).toEqual(stored[0]);
  expect((await api('GET', '/stored_payments?status=approved')).body).toEqual([]);
  expect((await api('GET', '/stored_payments/sp_nope')).status).toBe(404);

  // An override forced on by the manager, then ended: both audited under their name.
  const until = new Date(ctx.clock.now() + 3_600_000).toISOString();
  const allow = await api('POST', '/offline_policy/override', { headers: asManager, body: { until, max_count: 9, reason: 'queue at the door' } });
  expect(allow.status).toBe(201);
  expect(allow.body.override).toMatchObject({ actor: 'Ana López', reason: 'queue at the door', caps: { max_count: 9 } });
  expect((await api('POST', '/offline_policy/override/revoke', { body: { reason: 'done' } })).status).toBe(403);
  expect((await api('POST', '/offline_policy/override/revoke', { headers: asManager, body: { reason: 'processor back' } })).status).toBe(200);

  const audit = (await api('GET', '/offline_audit')).body;
  expect(audit.map((a: { action: string; actor: string }) => [a.action, a.actor])).toEqual([
    ['override_revoke', 'Ana López'],
    ['override_allow', 'Ana López'],
    ['terminal_caps_set', 'Ana López'],
    ['caps_set', 'Ana López'],
  ]);
  // before and after are objects, not strings holding JSON.
  expect(audit[3]).toMatchObject({ before: { max_count: 100 }, after: { max_count: 5 }, reason: 'small float today' });
  expect(audit[2]).toMatchObject({ terminal_id: h.terminalId, before: { max_payment_in_cents: null }, after: { max_payment_in_cents: 2_000 } });
  // Each change is reported to the central as a pushed fact.
  const pushed = ctx.db.prepare(`SELECT payload FROM sync_outbox WHERE kind = 'offline_policy_change' ORDER BY rowid`).all() as Array<{ payload: string }>;
  expect(pushed.map((p) => JSON.parse(p.payload).actor)).toEqual(['Ana López', 'Ana López', 'Ana López', 'Ana López']);

  await h.terminal.forward(c.body.id, 'R-1', 'declined');
  await h.terminal.next('forward_ack', (m) => m.offline_reference === 'R-1');
  const toCollect = (await api('GET', '/to_collect')).body;
  expect(toCollect).toEqual([
    expect.objectContaining({ command_id: c.body.id, description: 'Mesa 4', status: 'declined', checkout_status: 'unpaid', terminal_id: h.terminalId }),
  ]);
  const report = (await api('GET', '/outage_reports')).body;
  // The processor's outage: opened by the stored card, closed by its forward result.
  expect(report.offline_now).toMatchObject({ offline: false, links: [] });
  expect(report.outages[0].links).toEqual([expect.objectContaining({ link: 'processor', ended_at: expect.any(String) })]);
  expect(report.outages[0].open_checkouts).toEqual({ total: 0, items: [] });
  expect(report.outages[0].to_collect).toEqual([expect.objectContaining({ command_id: c.body.id })]);

  const doc = JSON.stringify((await (await fetch(`${h.server.url}/openapi.json`)).json()) as unknown);
  for (const word of ['/offline_policy', '/stored_payments', '/outage_reports', '/to_collect', '/offline_audit', 'offline_cap_reached', 'stored'])
    expect(doc).toContain(word);
});
