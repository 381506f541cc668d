import { afterAll, beforeAll, expect, it } from 'vitest';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { request } from 'undici';
import { ChaosProxy } from './chaos-proxy.js';
import { until } from '../helpers.js';
import {
  killStarted,
  posd,
  posdExit,
  removeTempDirs,
  requireBuild,
  startDaemonProcess,
  startSimulatorProcess,
  tempDir,
  type DaemonProcess,
  type SimulatorProcess,
} from './processes.js';

/**
 * An outage of a trading day, as separate processes: a central, a store joined to it through a
 * proxy we cut (the uplink), and two simulated card terminals without their processor. 100 card
 * payments are stored across the two terminals; the count cap is reached and refused with its
 * reason, a manager's override (from the shell, as a manager would) lets the rest through; then
 * the link comes back and the terminals regain their processor (SIGUSR2): every stored payment
 * reaches a final state once (terminal B sends every forward result twice), the ledgers, the
 * intents (pending while stored, then succeeded or failed), their events and the stored payments'
 * final states agree with the central row for row, the declined-later sales are listed by `posd outage report` and their
 * checkouts owe again. The till's command says `stored` while its card waits, then `consumed` or
 * `failed` with the processor's answer. Real time, short: the business hours are the sequence, not the clock.
 */
const PER_TERMINAL = 50;
const CAP = 40;

let central: DaemonProcess;
let store: DaemonProcess;
let proxy: ChaosProxy;
const sims: Record<'A' | 'B', SimulatorProcess> = {} as never;
const terminals: Record<'A' | 'B', string> = {} as never;
let storeDir: string;
let centralDir: string;
let storeKey: string;
let accountId: string;

const hostPort = (url: string) => {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port) };
};

async function call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await request(`${store.url}${path}`, {
    method,
    headers: { 'x-secret-key': storeKey, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.statusCode, body: await res.body.json() };
}

beforeAll(async () => {
  requireBuild();
  centralDir = tempDir('posd-central-');
  const inst = await posd(['init', '--role', 'central', '--name', 'Chain', '--json', '--data', centralDir]);
  accountId = (await posd(['accounts', 'create', '--name', 'Store 3', '--organization', inst.organization_id, '--json', '--data', centralDir])).account_id;
  storeKey = (await posd(['keys', 'create', '--account', accountId, '--env', 'live', '--json', '--data', centralDir])).key;
  const limits = { per_key_per_second: 100_000 };
  central = await startDaemonProcess(centralDir, { role: 'central', limits });
  proxy = new ChaosProxy(hostPort(central.url));
  const proxyPort = await proxy.listen();
  storeDir = tempDir('posd-store-');
  await posd(['init', '--central-url', `http://127.0.0.1:${proxyPort}`, '--central-key', storeKey, '--json', '--data', storeDir]);
  store = await startDaemonProcess(storeDir, {
    role: 'store',
    limits,
    sync: { batch_size: 100, backoff_min_ms: 20, backoff_max_ms: 300, feed_wait_ms: 500, request_timeout_ms: 3000, reconcile_interval_ms: 0 },
    // The box's caps: 40 payments may wait stored; the rest of the defaults.
    terminals: { offline: { max_count: CAP, max_total_in_cents: 10_000_000 } },
  });
  const linkUrl = `${store.url.replace('http', 'ws')}/terminals/link`;
  for (const name of ['A', 'B'] as const) {
    const t = await call('POST', '/api/terminals', { name: `Till ${name}` });
    expect(t.status).toBe(201);
    terminals[name] = t.body.id;
    // A approves every forwarded payment; B has half of them declined, and sends each answer twice.
    const forward = name === 'A' ? ['--forward-outcomes', 'approved'] : ['--forward-outcomes', 'approved,declined', '--forward-twice'];
    sims[name] = await startSimulatorProcess({
      url: linkUrl,
      terminalId: t.body.id,
      token: t.body.pairing_token,
      behaviour: 'approve',
      delaysMs: { waiting: 2, reading: 2, authorizing: 5 },
      reconnectDelayMs: 50,
      extraArgs: ['--protocol', '2', '--offline', ...forward],
    });
  }
}, 120_000);

afterAll(async () => {
  await Promise.all(Object.values(sims).map((s) => s.stop()));
  await store?.kill('SIGTERM');
  await central?.kill('SIGTERM');
  await killStarted();
  await proxy?.close();
  removeTempDirs();
});

/**
 * One charge on a terminal, until the terminal is done with it (final, or `stored`: a card approved
 * offline stays `stored`, not final, until its processor answers); returns the command.
 */
async function charge(till: 'A' | 'B', n: number, amount = 1000 + n): Promise<any> {
  const c = await call('POST', '/api/terminal_session_commands', {
    terminal_id: terminals[till],
    external_id: `day-${n}`,
    amount_in_cents: amount,
    currency: 'GTQ',
    description: `ticket ${n}`,
    tax_id: `${n}-K`,
  });
  if (c.status !== 201) return c;
  for (;;) {
    const now = await call('GET', `/api/terminal_session_commands/${c.body.id}`);
    if (now.body.final || now.body.status === 'stored') return { status: 201, body: now.body };
    await new Promise((r) => setTimeout(r, 10));
  }
}

const storeDb = () => new Database(join(storeDir, 'posd.db'), { readonly: true });

it('stores 100 card payments through a day without the internet, refuses past the cap, takes an override, and settles every one once when the link is back', async () => {
  // The uplink goes: the central (and, behind the same uplink, the processor) is unreachable.
  proxy.mode = { up: false, cutResponse: 0, delayMs: 0 };
  proxy.cutAll();
  await until('the box knows it is offline', async () => (await posd(['outage', 'report', '--json', '--data', storeDir])).offline_now.offline, 20_000);

  // Morning: 40 payments (20 per terminal, in parallel) fill the count cap.
  const morning = async (till: 'A' | 'B', first: number) => {
    for (let i = 0; i < CAP / 2; i++) expect((await charge(till, first + i)).body).toMatchObject({ status: 'stored', final: false });
  };
  await Promise.all([morning('A', 1), morning('B', 1001)]);
  // The 41st is refused before it reaches a terminal, with the cap named; so is one over the per-payment cap.
  const refused = await charge('A', 41);
  expect(refused).toMatchObject({ status: 422, body: { code: 'offline_cap_reached', reason: 'max_count' } });
  const big = await charge('B', 1041, 60_000);
  expect(big.status).toBe(422);
  expect(big.body.caps).toEqual(expect.arrayContaining(['max_payment', 'max_count']));

  // The manager raises the count for the afternoon, from the shell; the terminals hear within seconds.
  const untilIso = new Date(Date.now() + 6 * 3600_000).toISOString();
  await posd([
    'payments',
    'offline',
    'allow',
    '--account',
    accountId,
    '--until',
    untilIso,
    '--max-count',
    '150',
    '--reason',
    'uplink down all day',
    '--by',
    'maria',
    '--data',
    storeDir,
  ]);
  for (const name of ['A', 'B'] as const) {
    await until(
      `terminal ${name} got the raised policy`,
      () => sims[name].events.some((e) => e.event === 'offline_policy' && (e.data as { remaining_count: number }).remaining_count > 100),
      15_000,
    );
  }
  const afternoon = async (till: 'A' | 'B', first: number) => {
    for (let i = 0; i < PER_TERMINAL - CAP / 2; i++) expect((await charge(till, first + i)).body).toMatchObject({ status: 'stored', final: false });
  };
  await Promise.all([afternoon('A', 100), afternoon('B', 1100)]);
  const db = storeDb();
  expect(db.prepare('SELECT status, count(*) AS n FROM stored_payments GROUP BY status').all()).toEqual([{ status: 'stored', n: 2 * PER_TERMINAL }]);
  expect((await posd(['outage', 'report', '--json', '--data', storeDir])).offline_now).toMatchObject({
    offline: true,
    stored: [{ status: 'stored', currency: 'GTQ', count: 100 }],
  });

  // Evening: the link is back, the terminals regain their processor.
  proxy.mode = { up: true, cutResponse: 0, delayMs: 0 };
  await until(
    'the central window closed',
    () => (db.prepare("SELECT count(*) AS n FROM outage_windows WHERE link = 'central' AND ended_at IS NULL").get() as { n: number }).n === 0,
    20_000,
  );
  for (const s of Object.values(sims)) s.child.kill('SIGUSR2');
  for (const name of ['A', 'B'] as const)
    await until(`terminal ${name} forwarded everything`, () => sims[name].events.some((e) => e.event === 'forwarded_all'), 30_000);

  // Every stored payment final once: 50 + 25 approved, 25 declined; one charge in the ledger per approval.
  expect(db.prepare('SELECT status, count(*) AS n FROM stored_payments GROUP BY status ORDER BY status').all()).toEqual([
    { status: 'approved', n: 75 },
    { status: 'declined', n: 25 },
  ]);
  expect(db.prepare('SELECT count(*) AS n FROM stored_payments WHERE late_outcome IS NOT NULL').get()).toEqual({ n: 0 });
  // The tills' commands follow their cards: consumed for the approved, failed for the declined later.
  const commandsIn = async (status: string) => {
    const res = await request(`${store.url}/api/terminal_session_commands?status=${status}&items=1`, { headers: { 'x-secret-key': storeKey } });
    await res.body.dump();
    return Number(res.headers['total-count']);
  };
  expect({ stored: await commandsIn('stored'), consumed: await commandsIn('consumed'), failed: await commandsIn('failed') }).toEqual({
    stored: 0,
    consumed: 75,
    failed: 25,
  });
  const chargesPerCheckout = db
    .prepare(
      `SELECT sp.status, count(bt.id) AS n FROM stored_payments sp
         LEFT JOIN payment_intents p ON p.checkout_id = sp.checkout_id AND p.status = 'succeeded'
         LEFT JOIN balance_transactions bt ON bt.source_id = p.id AND bt.type = 'charge'
       GROUP BY sp.id`,
    )
    .all() as Array<{ status: string; n: number }>;
  expect(chargesPerCheckout.filter((r) => r.status === 'approved').every((r) => r.n === 1)).toBe(true);
  expect(chargesPerCheckout.filter((r) => r.status === 'declined').every((r) => r.n === 0)).toBe(true);
  // B sent every answer twice: posd acknowledged both (each after its commit, so the last acks may
  // still be on their way when B says it has sent everything), applied one.
  await until('terminal B got an ack for each answer', () => sims.B.events.filter((e) => e.event === 'forward_ack').length >= 2 * PER_TERMINAL, 20_000);

  // The ledgers and the payments agree with the central, row for row.
  await until('everything pushed', async () => (await posd(['sync', 'status', '--json', '--data', storeDir])).records_waiting === 0, 30_000);
  const centralDb = new Database(join(centralDir, 'posd.db'), { readonly: true });
  const ledgerQ =
    'SELECT id, type, amount_in_cents, fee_in_cents, net_amount_in_cents, currency, source_id, source_type, created_at FROM balance_transactions WHERE account_id = ? ORDER BY id';
  const storeLedger = db.prepare(ledgerQ).all(accountId);
  expect(storeLedger.filter((r: any) => r.type === 'charge')).toHaveLength(75);
  await until('the central applied the ledger', () => centralDb.prepare(ledgerQ).all(accountId).length === storeLedger.length, 20_000);
  expect(centralDb.prepare(ledgerQ).all(accountId)).toEqual(storeLedger);
  const intentsQ = "SELECT id, status, amount_in_cents, checkout_id FROM intents WHERE account_id = ? AND status = 'succeeded' ORDER BY id";
  expect(centralDb.prepare(intentsQ).all(accountId)).toEqual(db.prepare(intentsQ).all(accountId));
  // Each stored card waited as one pending intent (intent.pending once), then succeeded or failed
  // (intent.failed for the 25 declined later): the same events at the central, under the same ids.
  const failedQ = "SELECT id, status, amount_in_cents, checkout_id FROM intents WHERE account_id = ? AND status = 'failed' ORDER BY id";
  expect(db.prepare(failedQ).all(accountId)).toHaveLength(25);
  expect(centralDb.prepare(failedQ).all(accountId)).toEqual(db.prepare(failedQ).all(accountId));
  expect(db.prepare("SELECT count(*) AS n FROM intents WHERE account_id = ? AND status = 'pending'").get(accountId)).toEqual({ n: 0 });
  const eventsQ = "SELECT type, count(*) AS n FROM events WHERE account_id = ? AND type LIKE 'intent.%' GROUP BY type ORDER BY type";
  expect(db.prepare(eventsQ).all(accountId)).toEqual([
    { type: 'intent.failed', n: 25 },
    { type: 'intent.pending', n: 100 },
    { type: 'intent.succeeded', n: 75 },
  ]);
  await until(
    'the central re-emitted the events',
    () => JSON.stringify(centralDb.prepare(eventsQ).all(accountId)) === JSON.stringify(db.prepare(eventsQ).all(accountId)),
    20_000,
  );
  // The central knows each card's final state, the declined-later ones with the store's reason.
  const finalQ = 'SELECT id, status, amount_in_cents, checkout_id, payment_intent_id, terminal_id FROM stored_payments ORDER BY id';
  const centralFinalQ = 'SELECT id, status, amount_in_cents, checkout_id, payment_intent_id, terminal_id FROM central_stored_payments ORDER BY id';
  expect(centralDb.prepare(centralFinalQ).all()).toEqual(db.prepare(finalQ).all());
  // Each payment intent of a stored card stays recognisable at the central as taken offline.
  const markQ =
    'SELECT status, count(*) AS n FROM payment_intents WHERE offline_stored_at IS NOT NULL AND offline_forwarded_at IS NOT NULL GROUP BY status ORDER BY status';
  expect(centralDb.prepare(markQ).all()).toEqual([
    { status: 'failed', n: 25 },
    { status: 'succeeded', n: 75 },
  ]);
  const approvedId = (db.prepare("SELECT payment_intent_id AS id FROM stored_payments WHERE status = 'approved' LIMIT 1").get() as { id: string }).id;
  const atCentral = await request(`${central.url}/api/payment_intents/${approvedId}`, { headers: { 'x-secret-key': storeKey } });
  expect(await atCentral.body.json()).toMatchObject({ status: 'succeeded', offline: { stored_at: expect.any(String), forwarded_at: expect.any(String) } });
  // The central lists the same 25 sales to collect through its API, with what the till gave, still owed.
  const centralToCollect = await request(`${central.url}/api/to_collect`, { headers: { 'x-secret-key': storeKey } });
  expect(centralToCollect.statusCode).toBe(200);
  const owed = (await centralToCollect.body.json()) as Array<Record<string, any>>;
  expect(owed).toHaveLength(25);
  for (const c of owed) {
    expect(c).toMatchObject({ status: 'declined', terminal_id: terminals.B, checkout_status: 'unpaid', store_id: expect.any(String) });
    expect(c.description).toBe(`ticket ${c.external_id.slice(4)}`);
    expect(c.tax_id).toBe(`${c.external_id.slice(4)}-K`);
  }
  const day = new Date().toISOString().slice(0, 10);
  expect((await posdExit(['reconcile', '--date', day, '--json', '--data', storeDir])).code).toBe(0);

  // The report after the outage: the 25 declined-later sales with what the till gave, owing again.
  const report = await posd(['outage', 'report', '--json', '--data', storeDir]);
  expect(report.offline_now.offline).toBe(false);
  const o = report.outages[0];
  expect(o.stored_payments).toEqual([
    { status: 'approved', currency: 'GTQ', count: 75, amount_in_cents: expect.any(Number) },
    { status: 'declined', currency: 'GTQ', count: 25, amount_in_cents: expect.any(Number) },
  ]);
  expect(o.to_collect).toHaveLength(25);
  for (const c of o.to_collect) {
    expect(c).toMatchObject({ status: 'declined', terminal_id: terminals.B, checkout_status: 'unpaid' });
    expect(c.description).toBe(`ticket ${c.external_id.slice(4)}`);
    expect(c.tax_id).toBe(`${c.external_id.slice(4)}-K`);
  }
  // The 25 sales to collect are listed there only, not again as checkouts left open.
  expect(o.open_checkouts).toEqual({ total: 0, items: [] });
  expect(o.reconciliation.state).toBe('equal');
  expect(o.taken_offline).toEqual(
    [
      { terminal_id: terminals.A, account_id: accountId, live_mode: true, currency: 'GTQ', count: PER_TERMINAL, amount_in_cents: expect.any(Number) },
      { terminal_id: terminals.B, account_id: accountId, live_mode: true, currency: 'GTQ', count: PER_TERMINAL, amount_in_cents: expect.any(Number) },
    ].sort((a, b) => a.terminal_id.localeCompare(b.terminal_id)),
  );

  // The central serves the same outage, from the windows the store reported once they ended (its
  // link to the central, then its terminals' to the processor), beside its other stores'.
  const storeId = (await posd(['sync', 'status', '--json', '--data', storeDir])).store_id;
  const centralReports = async () => {
    const res = await request(`${central.url}/api/outage_reports?store_id=${storeId}`, { headers: { 'x-secret-key': storeKey } });
    expect(res.statusCode).toBe(200);
    return (await res.body.json()) as { offline_now: unknown; outages: Array<Record<string, any>> };
  };
  await until('the central has both windows of the outage', async () => (await centralReports()).outages[0]?.links.length === 2, 20_000);
  const atCentralReport = await centralReports();
  expect(atCentralReport.outages).toHaveLength(1);
  const co = atCentralReport.outages[0];
  expect(co).toMatchObject({
    store_id: storeId,
    started_at: o.started_at,
    ended_at: o.ended_at,
    links: o.links,
    sales: o.sales,
    taken_offline: o.taken_offline,
    stored_payments: o.stored_payments,
    open_checkouts: null,
  });
  const collectOf = (list: Array<Record<string, any>>) =>
    list.map(({ store_id: _s, ...c }) => c).sort((a, b) => a.stored_payment_id.localeCompare(b.stored_payment_id));
  expect(collectOf(co.to_collect)).toEqual(collectOf(o.to_collect));
  expect(co.to_collect.every((c: { store_id: string }) => c.store_id === storeId)).toBe(true);
  // The override is in the audit with who and why.
  const audit = await posd(['payments', 'offline', 'audit', '--account', accountId, '--json', '--data', storeDir]);
  expect(audit[0]).toMatchObject({ action: 'override_allow', actor: 'maria', reason: 'uplink down all day' });
  centralDb.close();
  db.close();
}, 240_000);
