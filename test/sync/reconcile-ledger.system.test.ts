import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tx } from '../../src/db/database.js';
import { AccountsService } from '../../src/accounts/service.js';
import { settleCheckoutPayment } from '../../src/modules/payments/service.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { posdExit, requireBuild } from './e2e/processes.js';
import { runPosd } from '../helpers/process.js';
import { localDayRange } from '../../src/sync/shared/summary.js';
import { addStoreAccount, http, removeDir, startStore, until, type TestStore, appliedAtCentral } from './helpers.js';

/**
 * Reconciliation of the ledger and intents tables themselves: the rows a store wrote, compared with
 * the rows its records wrote at the central, by `posd reconcile` in its own process.
 */
const cleanup: Array<() => Promise<void> | void> = [];
let central: TestServer;
let store: TestStore;
let key: string;
let accountId: string;
const today = new Date().toISOString().slice(0, 10);
const charge = { id: '' };

const reconcile = async () => {
  const r = await posdExit(['reconcile', '--date', today, '--json', '--data', store.dataDir]);
  return { code: r.code, result: r.stdout ? JSON.parse(r.stdout) : undefined, stderr: r.stderr };
};
const row = (rows: any[], measure: string, currency = 'GTQ') => rows.find((r) => r.measure === measure && r.currency === currency);
const synced = () => appliedAtCentral(store);

beforeAll(async () => {
  requireBuild();
  // The central charges a higher fee than the box computes: it posts its own fee adjustment for each
  // charge a store pushes, inside the applying of the store's record, and sends it back by the feed.
  central = await startTestServer({ config: { role: 'central', money: { fee_percent: 5 } } });
  cleanup.push(() => central.stop());
  const acct = addStoreAccount(central);
  store = await startStore(central.url, acct.key);
  cleanup.push(() => removeDir(store.dataDir));
  cleanup.push(() => store.stop());
  key = acct.key;
  accountId = acct.accountId;
  // At the store: a cash sale, a terminal payment approved and one declined.
  expect((await http('POST', `${store.url}/api/cash_sales`, key, { amount_in_cents: 1234, currency: 'GTQ' })).status).toBe(201);
  const account = new AccountsService(store.daemon.ctx.db, store.daemon.ctx.clock).account(accountId)!;
  for (const outcome of ['succeeded', 'failed'] as const) {
    const co = await http('POST', `${store.url}/api/checkouts`, key, { items: [{ name: outcome, amount_in_cents: 10_000 }], currency: 'GTQ' });
    const r = settleCheckoutPayment(store.daemon.ctx, account, {
      checkoutId: co.body.id,
      method: 'terminal',
      outcome,
      failureReason: outcome === 'failed' ? 'card_declined' : null,
    });
    if (outcome === 'succeeded') charge.id = r.balanceTransactionId!;
  }
  // At the central, rows of its own: a cash sale made there, and a charge settled there.
  expect((await http('POST', `${central.url}/api/cash_sales`, key, { amount_in_cents: 999, currency: 'GTQ' })).status).toBe(201);
  const atCentral = new AccountsService(central.daemon.ctx.db, central.daemon.ctx.clock).account(accountId)!;
  const co = await http('POST', `${central.url}/api/checkouts`, key, { items: [{ name: 'online', amount_in_cents: 5_000 }], currency: 'GTQ' });
  settleCheckoutPayment(central.daemon.ctx, atCentral, { checkoutId: co.body.id, method: 'card', outcome: 'succeeded' });
  // The central's own rows reach the box through the feed: its sale, its charge and fee adjustment.
  const fromCentral = "SELECT count(*) AS n FROM balance_transactions WHERE origin = 'central'";
  await until('the central rows at the box', () => (store.daemon.ctx.db.prepare(fromCentral).get() as { n: number }).n === 2);
  await synced();
}, 60_000);
afterAll(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

describe('reconciliation of the ledger and intents', () => {
  it("takes today's date in the box's time zone when no --date is given, and compares it midnight to midnight there (issue 37)", async () => {
    // UTC+14 and UTC-12: at any hour one of them is on another date than UTC.
    const zones = ['Pacific/Kiritimati', 'Etc/GMT+12'];
    const localToday = (timeZone: string) =>
      new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date());
    expect(zones.some((z) => localToday(z) !== new Date().toISOString().slice(0, 10))).toBe(true);
    for (const TZ of zones) {
      const r = await runPosd(['reconcile', '--json', '--data', store.dataDir], { TZ, POSD_LOG_LEVEL: 'warn' });
      expect(r.stderr).not.toMatch(/failed/);
      const result = JSON.parse(r.stdout);
      expect(result.day).toBe(localToday(TZ));
      // The central (this process, in UTC) summed the span the box named: the day in the box's zone.
      expect(result).toMatchObject({ zone: TZ, ...localDayRange(localToday(TZ), TZ) });
      expect(Date.parse(result.from) % 86_400_000).not.toBe(0);
    }
  });

  it('compares the rows the store wrote with the rows its records wrote at the central, whatever else each side holds', async () => {
    const { code, result } = await reconcile();
    expect(code).toBe(0);
    expect(result.state).toBe('equal');
    const fee = (store.daemon.ctx.db.prepare('SELECT fee_in_cents AS f FROM balance_transactions WHERE id = ?').get(charge.id) as { f: number }).f;
    expect(row(result.rows, 'ledger.charge')).toMatchObject({
      account_id: accountId,
      store_count: 1,
      central_count: 1,
      store_sum: 10_000,
      central_sum: 10_000,
    });
    expect(row(result.rows, 'ledger.charge.fee')).toMatchObject({ store_count: 1, store_sum: fee, central_sum: fee });
    expect(row(result.rows, 'intents.cash.succeeded')).toMatchObject({ store_count: 1, central_count: 1, store_sum: 1234, central_sum: 1234 });
    expect(row(result.rows, 'intents.payment.succeeded')).toMatchObject({ store_count: 1, central_count: 1, store_sum: 10_000 });
    expect(row(result.rows, 'intents.payment.failed')).toMatchObject({ store_count: 1, central_count: 1, store_sum: 10_000 });
    // Neither the central's own rows (its charge, its fee adjustment of the store's charge) nor their
    // copies the feed brought the box are the store's: both sides hold them, neither counts them.
    expect(row(result.rows, 'ledger.adjustment')).toBeUndefined();
    const origins = (db: typeof store.daemon.ctx.db) => db.prepare('SELECT type, origin FROM balance_transactions ORDER BY type, origin').all();
    expect(origins(central.daemon.ctx.db)).toEqual([
      { type: 'adjustment', origin: null },
      { type: 'charge', origin: null },
      { type: 'charge', origin: store.storeId },
    ]);
    expect(origins(store.daemon.ctx.db)).toEqual([
      { type: 'adjustment', origin: 'central' },
      { type: 'charge', origin: null },
      { type: 'charge', origin: 'central' },
    ]);
    expect(row(result.rows, 'intents.payment.succeeded')).toMatchObject({ store_count: 1, central_count: 1 });
  });

  it('reports a ledger row tampered at the central (exit 1), at the box and to central operations, and patches nothing', async () => {
    const cdb = central.daemon.ctx.db;
    tx(cdb, () =>
      cdb
        .prepare('UPDATE balance_transactions SET amount_in_cents = amount_in_cents + 100, net_amount_in_cents = net_amount_in_cents + 100 WHERE id = ?')
        .run(charge.id),
    );
    const { code, result } = await reconcile();
    expect(code).toBe(1);
    expect(result.state).toBe('different');
    expect(result.differences).toEqual([
      expect.objectContaining({ measure: 'ledger.charge', store_count: 1, central_count: 1, store_sum: 10_000, central_sum: 10_100 }),
    ]);
    const status = await http('GET', `${store.url}/sync/status`, key);
    expect(status.body.reconciliation).toMatchObject({
      state: 'different',
      differences: [expect.objectContaining({ measure: 'ledger.charge', central_sum: 10_100 })],
    });
    await until('reported to central operations', () =>
      cdb.prepare("SELECT payload FROM events WHERE type = 'sync.reconciliation_difference' AND payload LIKE '%ledger.charge%'").get(),
    );
    // Reported, never patched: each side keeps its row as it is.
    const amount = (db: typeof cdb) => (db.prepare('SELECT amount_in_cents AS a FROM balance_transactions WHERE id = ?').get(charge.id) as { a: number }).a;
    expect(amount(cdb)).toBe(10_100);
    expect(amount(store.daemon.ctx.db)).toBe(10_000);
    tx(cdb, () =>
      cdb
        .prepare('UPDATE balance_transactions SET amount_in_cents = amount_in_cents - 100, net_amount_in_cents = net_amount_in_cents - 100 WHERE id = ?')
        .run(charge.id),
    );
  });

  it('reports an intent tampered at the store (exit 1) as a move between statuses', async () => {
    await synced(); // the report of the last test reached the central: the day is comparable again
    const sdb = store.daemon.ctx.db;
    const cash = sdb.prepare("SELECT id FROM intents WHERE type = 'cash'").get() as { id: string };
    tx(sdb, () => sdb.prepare("UPDATE intents SET status = 'failed' WHERE id = ?").run(cash.id));
    const { code, result } = await reconcile();
    expect(code).toBe(1);
    expect(result.differences).toEqual([
      expect.objectContaining({ measure: 'intents.cash.failed', store_count: 1, central_count: 0 }),
      expect.objectContaining({ measure: 'intents.cash.succeeded', store_count: 0, central_count: 1 }),
    ]);
    expect((central.daemon.ctx.db.prepare('SELECT status FROM intents WHERE id = ?').get(cash.id) as { status: string }).status).toBe('succeeded');
  });
});
