import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { commandsStore } from '../../src/modules/terminals/commands/store.js';
import { intentsStore } from '../../src/modules/intents/store.js';
import { couponsStore } from '../../src/modules/coupons/store.js';

// The statements a terminal charge and a cash sale run are compiled once, not again on every run
// (decision 0308). SQLite marks a bare `?` of an equality the planner leaves to a filter as one whose
// value may change the plan; better-sqlite3 clears the bindings after each run, and SQLite then
// compiles the statement again at the next one, and better-sqlite3 builds its row shape again with
// `Function`: counting those builds counts the compilations of a statement that returns a row.
let s: TestServer;
let builds = 0;
const RealFunction = globalThis.Function;

beforeAll(async () => {
  s = await startTestServer();
});
afterEach(() => {
  globalThis.Function = RealFunction;
});
afterAll(() => s.stop());

function countRowShapes(): void {
  builds = 0;
  globalThis.Function = new Proxy(RealFunction, {
    apply(target, self, args: string[]) {
      if (String(args[args.length - 1]).startsWith('return (v0')) builds++;
      return Reflect.apply(target, self, args);
    },
  });
}

/** Row shapes built while `fn` runs each call twice over, alternating its arguments; after one warm-up run. */
function shapesBuilt<A extends unknown[]>(fn: (...a: A) => unknown, ...argSets: A[]): number {
  fn(...argSets[0]);
  countRowShapes();
  for (let i = 0; i < 4; i++) for (const args of argSets) expect(fn(...args)).toBeTruthy();
  globalThis.Function = RealFunction;
  return builds;
}

it('compiles each statement of a charge and a sale once, not again on every run', async () => {
  const t = await s.api('POST', '/terminals', { body: { name: 'Till' } });
  expect(t.status).toBe(201);
  const a = await s.api('POST', '/terminal_session_commands', { body: { terminal_id: t.body.id, external_id: 'a', amount_in_cents: 1500 } });
  const b = await s.api('POST', '/terminal_session_commands', { body: { terminal_id: t.body.id, external_id: 'b', amount_in_cents: 1500 } });
  const c = await s.api('POST', '/terminal_session_commands', { body: { terminal_id: t.body.id, external_id: 'c', amount_in_cents: 1500 } });
  expect([a.status, b.status, c.status]).toEqual([201, 201, 201]);
  const coupon = await s.api('POST', '/coupons', { body: { name: 'AUTO', percent_off: 5, duration: 'once', automatically_applies: true } });
  expect(coupon.status).toBe(201);
  const sale = await s.api('POST', '/cash_sales', { body: { amount_in_cents: 2500, description: 'Two coffees' } });
  expect(sale.status).toBe(201);

  const db = s.daemon.ctx.db;
  const commands = commandsStore(db);
  const account = s.installation.sandbox_id;
  expect(shapesBuilt(commands.byId, [a.body.id], [c.body.id])).toBe(0);
  expect(shapesBuilt(commands.byExternalId, [account, 'a'], [account, 'c'])).toBe(0);
  // The newest of the three is pending and never offered (no terminal attached).
  expect(shapesBuilt((id: string) => commands.newestUntaken(id), [t.body.id], [t.body.id])).toBe(0);
  expect(shapesBuilt((id: string) => commands.untakenPending(id)[0], [t.body.id], [t.body.id])).toBe(0);
  expect(shapesBuilt((id: string) => intentsStore(db).nextReceiptNumber(id), [account], [s.installation.account_id])).toBe(0);
  const now = new Date().toISOString();
  expect(shapesBuilt((id: string, at: string) => couponsStore(db).automatic(id, at)[0], [account, now], [account, now])).toBe(0);
});
