import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config.js';
import { createContext } from '../../src/daemon.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { ApiError } from '../../src/errors.js';
import { AccountsService, type Account } from '../../src/accounts/service.js';
import { balancesFor } from '../../src/modules/ledger/service.js';
import { createBankAccount } from '../../src/modules/bank-accounts/service.js';
import { createTransfer } from '../../src/modules/transfers/service.js';
import { advanceWithdrawal, createWithdrawal } from '../../src/modules/transfers/withdrawals.js';
import { pathTo, type WithdrawalStatus } from '../../src/modules/transfers/machine.js';
import { chainHolds, fund, ledgerRows } from './money-helpers.js';

type Currency = 'GTQ' | 'USD';
type Op =
  | { kind: 'fund'; account: number; currency: Currency; amount: number }
  | { kind: 'transfer'; from: number; to: number; currency: Currency; amount: number }
  | { kind: 'withdraw'; account: number; currency: Currency; amount: number }
  | { kind: 'advance'; pick: number; outcome: 'in_transit' | 'paid' | 'failed' };

const currency = fc.constantFrom<Currency>('GTQ', 'USD');
const who = fc.nat(2);
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('fund' as const), account: who, currency, amount: fc.integer({ min: 1, max: 1_000_000 }) }),
  fc.record({ kind: fc.constant('transfer' as const), from: who, to: who, currency, amount: fc.integer({ min: 1, max: 1_500_000 }) }),
  fc.record({ kind: fc.constant('withdraw' as const), account: who, currency, amount: fc.integer({ min: 1, max: 1_500_000 }) }),
  fc.record({ kind: fc.constant('advance' as const), pick: fc.nat(), outcome: fc.constantFrom('in_transit' as const, 'paid' as const, 'failed' as const) }),
);

let dir: string;
let ctx: ReturnType<typeof createContext>;
let accounts: Account[];
const banks = new Map<string, string>();
// The model: what every balance must be, every withdrawal's status, and what left for banks.
const model = new Map<string, number>();
const withdrawals: Array<{ id: string; account: Account; currency: Currency; amount: number; status: WithdrawalStatus }> = [];
const expected = { funded: 0, peers: 0, withdrawalUpdates: 0 };
const key = (a: Account, c: Currency) => `${a.id}/${c}`;
const balanceOf = (a: Account, c: Currency) => model.get(key(a, c)) ?? 0;

function code(fn: () => unknown): string | null {
  try {
    fn();
    return null;
  } catch (err) {
    if (err instanceof ApiError) return err.code;
    throw err;
  }
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'posd-movements-'));
  // NORMAL: the property runs thousands of commits; durability is not what it checks.
  const config = validateConfig({ data_dir: dir, database: { synchronous: 'NORMAL' }, log: { level: 'silent' } });
  ctx = createContext(config, { clock: new ManualClock(), log: pino({ level: 'silent' }) });
  const service = new AccountsService(ctx.db, ctx.clock);
  const org = service.createOrganization('Prop');
  accounts = [0, 1, 2].map((i) => service.createAccount({ name: `A${i}`, organizationId: org.id }).sandbox);
  for (const a of accounts) {
    for (const c of ['GTQ', 'USD'] as const) {
      const bank = createBankAccount(ctx, a, { holder_name: a.name, number: '12345678', bank_name: 'BI', currency: c, account_type: 'monetaria' });
      banks.set(key(a, c), bank.id);
    }
  }
});
afterAll(() => {
  ctx.db.close();
  rmSync(dir, { recursive: true, force: true });
});

function apply(o: Op): void {
  if (o.kind === 'fund') {
    const a = accounts[o.account];
    fund(ctx, a.id, o.amount, o.currency);
    model.set(key(a, o.currency), balanceOf(a, o.currency) + o.amount);
    expected.funded += o.amount;
  } else if (o.kind === 'transfer') {
    const [from, to] = [accounts[o.from], accounts[o.to]];
    const got = code(() => createTransfer(ctx, from, { amount_in_cents: o.amount, currency: o.currency, recipient_id: to.id }));
    if (from.id === to.id) return void expect(got).toBe('validation_error');
    if (o.amount > balanceOf(from, o.currency)) return void expect(got).toBe('insufficient_funds');
    expect(got).toBeNull();
    model.set(key(from, o.currency), balanceOf(from, o.currency) - o.amount);
    model.set(key(to, o.currency), balanceOf(to, o.currency) + o.amount);
    expected.peers += 1;
  } else if (o.kind === 'withdraw') {
    const a = accounts[o.account];
    let id = '';
    const got = code(
      () => (id = createWithdrawal(ctx, a, { amount_in_cents: o.amount, currency: o.currency, bank_account_id: banks.get(key(a, o.currency))! }).id),
    );
    if (o.amount > balanceOf(a, o.currency)) return void expect(got).toBe('insufficient_funds');
    expect(got).toBeNull();
    model.set(key(a, o.currency), balanceOf(a, o.currency) - o.amount);
    withdrawals.push({ id, account: a, currency: o.currency, amount: o.amount, status: 'pending' });
  } else {
    if (withdrawals.length === 0) return;
    const w = withdrawals[o.pick % withdrawals.length];
    const plan = pathTo(w.status, o.outcome);
    const got = code(() => advanceWithdrawal(ctx, { accountIds: [w.account.id], liveMode: false }, w.id, o.outcome));
    if (!plan) return void expect(got).toBe(w.status === 'paid' || w.status === 'failed' ? 'withdrawal_final' : 'validation_error');
    expect(got).toBeNull();
    expected.withdrawalUpdates += plan.length;
    w.status = o.outcome;
    if (o.outcome === 'failed') model.set(key(w.account, w.currency), balanceOf(w.account, w.currency) + w.amount);
  }
}

function checkInvariants(): void {
  const n = (sql: string) => (ctx.db.prepare(sql).get() as { n: number }).n;
  for (const b of balancesFor(
    ctx,
    accounts.map((a) => a.id),
    false,
  )) {
    const a = accounts.find((x) => x.id === b.account_id)!;
    expect(b.available_in_cents).toBe(balanceOf(a, b.currency as Currency));
    expect(b.available_in_cents).toBeGreaterThanOrEqual(0);
  }
  for (const a of accounts) for (const c of ['GTQ', 'USD'] as const) expect(chainHolds(ledgerRows(ctx, a.id, c))).toBe(true);
  // Money is neither made nor lost: what was funded is in balances or on its way to (or at) a bank.
  const inBalances = [...model.values()].reduce((s, v) => s + v, 0);
  const leftForBanks = withdrawals.filter((w) => w.status !== 'failed').reduce((s, w) => s + w.amount, 0);
  expect(inBalances + leftForBanks).toBe(expected.funded);
  expect(n("SELECT count(*) AS n FROM events WHERE type = 'transfer.sent'")).toBe(expected.peers);
  expect(n("SELECT count(*) AS n FROM events WHERE type = 'transfer.received'")).toBe(expected.peers);
  expect(n("SELECT count(*) AS n FROM events WHERE type = 'withdrawal.create'")).toBe(withdrawals.length);
  expect(n("SELECT count(*) AS n FROM events WHERE type = 'withdrawal.update'")).toBe(expected.withdrawalUpdates);
  expect(n("SELECT count(*) AS n FROM sync_outbox WHERE kind = 'transfer'")).toBe(expected.peers);
  expect(n("SELECT count(*) AS n FROM sync_outbox WHERE kind = 'withdrawal'")).toBe(withdrawals.length + expected.withdrawalUpdates);
  const statuses = ctx.db.prepare("SELECT id, status FROM transfers WHERE kind = 'withdrawal'").all() as Array<{ id: string; status: string }>;
  expect(new Map(statuses.map((s) => [s.id, s.status]))).toEqual(new Map(withdrawals.map((w) => [w.id, w.status])));
}

describe('transfers and withdrawals against a model (property)', () => {
  it('keep balances, the ledger chain, conservation of money, events and sync records exact under any sequence', () => {
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 30 }), (ops) => {
        for (const o of ops) apply(o);
        checkInvariants();
      }),
      { numRuns: 60 },
    );
  });
});
