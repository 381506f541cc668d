/**
 * Outage windows are recorded by the real sync worker (the link to the central through a proxy we
 * cut) and by the terminal's stored and forwarded payments (the processor), merged into one
 * outage, and reported by `posd outage report --json` (a separate process, beside the running
 * daemon): sales by method, stored payments by final state, the declined-later sale with what the
 * till gave, the checkout owing again, and the reconciliation state, equal once reconciled.
 */
import { afterAll, expect, it } from 'vitest';
import { ManualClock } from '../helpers/manual-clock.js';
import { runPosd } from '../helpers/process.js';
import { syncStatus } from '../../src/sync/status.js';
import { storeSide } from '../../src/sync/store/sync-store.js';
import { reconcileDay } from '../../src/sync/store/reconcile.js';
import { CentralClient } from '../../src/sync/store/transport.js';
import { outageNow, outageReports } from '../../src/modules/ops/outage.js';
import { startHarness } from '../terminals/helpers/harness.js';
import { ChaosProxy } from './e2e/chaos-proxy.js';
import { connectWsTerminal } from '../terminals/helpers/scripted-terminal.js';
import { BACKDATED, addStoreAccount, http, removeDir, startCentral, startStore, until } from './helpers.js';

const cleanup: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const at = (hhmm: string) => Date.parse(`2026-03-02T${hhmm}:00.000Z`);
const iso = (hhmm: string) => new Date(at(hhmm)).toISOString();

it('records the central and processor windows, merges them into one outage and reports it; the CLI prints the same', async () => {
  const central = await startCentral({ config: BACKDATED });
  cleanup.push(() => central.stop());
  const acct = addStoreAccount(central);
  const link = new ChaosProxy({ host: '127.0.0.1', port: Number(new URL(central.url).port) });
  const linkPort = await link.listen();
  cleanup.push(() => link.close());
  const clock = new ManualClock(at('09:00'));
  // No keepalive: the business clock jumps hours and the terminal must stay linked.
  const store = await startStore(`http://127.0.0.1:${linkPort}`, acct.key, { clock, config: { terminals: { ping_interval_ms: 0 } } });
  cleanup.push(() => removeDir(store.dataDir));
  cleanup.push(() => store.stop());
  const { db, config } = store.daemon.ctx;
  await until('first contact', () => syncStatus(config, db).connected);

  const trm = await http('POST', `${store.url}/api/terminals`, acct.key, { name: 'Caja 1' });
  expect(trm.status).toBe(201);
  const terminal = await connectWsTerminal(store.url, trm.body.id, trm.body.pairing_token, clock);
  cleanup.push(() => terminal.close().catch(() => {}));
  expect((await terminal.hello({ protocol: 2 })).type).toBe('welcome');

  // 09:00 the uplink goes.
  link.mode = { up: false, cutResponse: 0, delayMs: 0 };
  link.cutAll();
  await until('the central window opened', () =>
    storeSide(db)
      .openOutages()
      .find((w) => w.link === 'central'),
  );
  expect(storeSide(db).openOutages()).toEqual([expect.objectContaining({ link: 'central', started_at: iso('09:00'), ended_at: null })]);

  // 10:00 a cash sale and two cards the terminal can only store.
  clock.set(at('10:00'));
  expect((await http('POST', `${store.url}/api/cash_sales`, acct.key, { amount_in_cents: 1200, currency: 'GTQ' })).status).toBe(201);
  const charges: Array<{ id: string; checkout_id: string }> = [];
  for (const [n, amount] of [
    [1, 3000],
    [2, 4500],
  ] as const) {
    const c = await http('POST', `${store.url}/api/terminal_session_commands`, acct.key, {
      terminal_id: trm.body.id,
      external_id: `till-${n}`,
      amount_in_cents: amount,
      currency: 'GTQ',
      description: `Mesa ${n}`,
      tax_id: `${n}234567-8`,
    });
    expect(c.status).toBe(201);
    await terminal.next('charge', (m) => m.command_id === c.body.id);
    await terminal.result(c.body.id, 'stored', { offline_reference: `R-${n}`, card: { network: 'visa', last4: '4242' } });
    await terminal.next('result_ack', (m) => m.command_id === c.body.id);
    charges.push(c.body);
  }
  expect(
    storeSide(db)
      .openOutages()
      .map((w) => [w.link, w.started_at]),
  ).toEqual([
    ['central', iso('09:00')],
    ['processor', iso('10:00')],
  ]);

  // 12:00 the uplink is back; 12:10 the terminal forwards: one approved, one declined.
  clock.set(at('12:00'));
  link.mode = { up: true, cutResponse: 0, delayMs: 0 };
  await until(
    'the central window closed',
    () =>
      !storeSide(db)
        .openOutages()
        .some((w) => w.link === 'central'),
  );
  clock.set(at('12:10'));
  await terminal.forward(charges[0].id, 'R-1', 'approved');
  await terminal.next('forward_ack', (a) => a.offline_reference === 'R-1');
  await terminal.forward(charges[1].id, 'R-2', 'declined');
  await terminal.next('forward_ack', (a) => a.offline_reference === 'R-2');
  // A second forward of the same outcome changes nothing, and does not reopen anything.
  await terminal.forward(charges[1].id, 'R-2', 'declined');
  await terminal.next('forward_ack', (a) => a.offline_reference === 'R-2');
  expect(storeSide(db).openOutages()).toEqual([]);
  await until('everything pushed', () => syncStatus(config, db).records_waiting === 0);

  // The CLI runs on the real clock and looks back 30 days; the box's business clock is in March.
  const since = ['--since', '2026-03-01T00:00:00.000Z'];
  const cli = await runPosd(['outage', 'report', '--json', ...since, '--data', store.dataDir]);
  expect(cli.stderr).toBe('');
  expect(cli.code).toBe(0);
  const printed = JSON.parse(cli.stdout);
  expect(printed.offline_now).toMatchObject({ offline: false, links: [], stored: [] });
  expect(printed.outages).toHaveLength(1);
  const o = printed.outages[0];
  expect(o).toMatchObject({
    started_at: iso('09:00'),
    ended_at: iso('12:10'),
    links: [
      { link: 'central', started_at: iso('09:00'), ended_at: iso('12:00') },
      { link: 'processor', started_at: iso('10:00'), ended_at: iso('12:10') },
    ],
    // The card approved later is a sale of 10:00, when it was stored (its intent was made then, pending).
    sales: [
      { method: 'cash', currency: 'GTQ', count: 1, amount_in_cents: 1200 },
      { method: 'terminal', currency: 'GTQ', count: 1, amount_in_cents: 3000 },
    ],
    stored_payments: [
      { status: 'approved', currency: 'GTQ', count: 1, amount_in_cents: 3000 },
      { status: 'declined', currency: 'GTQ', count: 1, amount_in_cents: 4500 },
    ],
    // The declined-later sale is listed once, under to_collect, not again as a checkout left open.
    open_checkouts: { total: 0, items: [] },
  });
  expect(o.to_collect).toEqual([
    expect.objectContaining({
      status: 'declined',
      reason: 'insufficient_funds',
      command_id: charges[1].id,
      external_id: 'till-2',
      description: 'Mesa 2',
      tax_id: '2234567-8',
      amount_in_cents: 4500,
      checkout_id: charges[1].checkout_id,
      checkout_status: 'unpaid',
      settled_at: iso('12:10'),
      payment_intent_id: expect.stringMatching(/^pa_/),
    }),
  ]);
  // What was taken offline, per terminal: both cards, whatever became of them.
  expect(o.taken_offline).toEqual([
    {
      terminal_id: o.to_collect[0].terminal_id,
      account_id: expect.any(String),
      live_mode: expect.any(Boolean),
      currency: 'GTQ',
      count: 2,
      amount_in_cents: 7500,
    },
  ]);
  // Everything pushed, the day not reconciled since the outage ended.
  expect(o.reconciliation).toMatchObject({ state: 'unchecked', records_waiting: 0 });
  // For people: the same checklist in lines.
  // Local times with the zone named, as the page shows them (issue 37: it printed UTC); 09:00Z is 03:00 in Guatemala.
  const human = (await runPosd(['outage', 'report', ...since, '--data', store.dataDir], { TZ: 'America/Guatemala' })).stdout;
  expect(human).toMatch(/^Times in America\/Guatemala \(UTC-06:00\)\.\n/);
  expect(human).toContain('Outage 2026-03-02 03:00 to 2026-03-02 06:10 (central, processor)');
  expect(human).toContain(`  taken offline on terminal ${o.to_collect[0].terminal_id}: 2 (GTQ 75.00)`);
  expect(human).toContain('  stored payments declined: 1 (GTQ 45.00)');
  // Every field of the JSON's sale to collect: description, reason, card, terminal.
  expect(human).toContain(`  to collect: till-2 "Mesa 2" GTQ 45.00\n    declined (insufficient_funds) at 2026-03-02 06:10; `);
  expect(human).toMatch(
    new RegExp(`; terminal ${o.to_collect[0].terminal_id}\\n    checkout ${charges[1].checkout_id} unpaid, payment intent pa_\\w+; 2234567-8`),
  );
  expect(human).toContain('  checkouts left open (besides those to collect): 0');
  expect(human).toContain('  reconciliation: unchecked');

  const client = new CentralClient(central.url, acct.key, { timeoutMs: 5000 });
  cleanup.push(() => client.close());
  const r = await reconcileDay(store.daemon.ctx, client, '2026-03-02');
  expect(r.differences).toEqual([]);
  expect(outageReports(store.daemon.ctx)[0].reconciliation).toMatchObject({ state: 'equal', differences: 0 });
});

it('a processor outage without a central: opened by the first stored payment, closed by the next online approval even if nothing was forwarded yet', async () => {
  const clock = new ManualClock(at('08:00'));
  const h = await startHarness('websocket', { protocol: 2, clock });
  cleanup.push(() => h.stop());
  const db = h.server.daemon.ctx.db;
  const stored = await h.charge({ amount_in_cents: 2_000 });
  await h.terminal.next('charge', (m) => m.command_id === stored.body.id);
  await h.terminal.result(stored.body.id, 'stored', { offline_reference: 'P-1' });
  await h.terminal.next('result_ack', (m) => m.command_id === stored.body.id);
  expect(storeSide(db).openOutages()).toEqual([expect.objectContaining({ link: 'processor', started_at: iso('08:00') })]);
  expect(outageNow(h.server.daemon.ctx)).toMatchObject({ offline: true, links: [{ link: 'processor', since: iso('08:00') }] });

  // A declined result proves nothing (a terminal declines offline charges by itself); an approval does.
  clock.set(at('08:20'));
  const declined = await h.charge({ amount_in_cents: 1_000 });
  await h.terminal.next('charge', (m) => m.command_id === declined.body.id);
  await h.terminal.result(declined.body.id, 'declined', { reason: 'offline_not_allowed' });
  await h.terminal.next('result_ack', (m) => m.command_id === declined.body.id);
  expect(storeSide(db).openOutages()).toHaveLength(1);
  clock.set(at('08:30'));
  const online = await h.charge({ amount_in_cents: 1_500 });
  await h.terminal.next('charge', (m) => m.command_id === online.body.id);
  await h.terminal.result(online.body.id, 'approved');
  await h.terminal.next('result_ack', (m) => m.command_id === online.body.id);
  expect(storeSide(db).openOutages()).toEqual([]);
  const [report] = outageReports(h.server.daemon.ctx);
  expect(report).toMatchObject({
    started_at: iso('08:00'),
    ended_at: iso('08:30'),
    stored_payments: [{ status: 'stored', count: 1, amount_in_cents: 2_000 }],
    reconciliation: { state: 'not_synced' },
  });
  // The stored payment still waits for its forward; the outage is over.
  expect(outageNow(h.server.daemon.ctx)).toMatchObject({ offline: false, stored: [{ status: 'stored', count: 1 }], next_deadline: '2026-03-04T08:00:00.000Z' });

  // A five-second blip of the central link is kept but is no outage worth a report; two minutes are.
  storeSide(db).openOutage('central', iso('09:00'));
  storeSide(db).closeOutage('central', '2026-03-02T09:00:05.000Z');
  expect(outageReports(h.server.daemon.ctx).map((o) => o.started_at)).toEqual([iso('08:00')]);
  storeSide(db).openOutage('central', iso('10:00'));
  storeSide(db).closeOutage('central', iso('10:02'));
  expect(outageReports(h.server.daemon.ctx).map((o) => o.started_at)).toEqual([iso('10:00'), iso('08:00')]);
});
