import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountsService } from '../../src/accounts/service.js';
import { commitAudit, openDatabase, type Db } from '../../src/db/database.js';
import { afterCommit, GroupCommitter } from '../../src/db/group-commit.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { fund } from '../transfers/money-helpers.js';
import { rows } from './helpers.js';

describe('the commit pipeline (group commit)', () => {
  let dir: string;
  let db: Db;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'posd-pipeline-'));
    db = openDatabase(join(dir, 'x.db'));
    // A deferred foreign key is checked at COMMIT, after every savepoint was released: the way to
    // make the batch's commit itself fail with real SQLite.
    db.exec(`
      CREATE TABLE parent (id INTEGER PRIMARY KEY) STRICT;
      CREATE TABLE child (v INTEGER NOT NULL, parent_id INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED) STRICT;
    `);
  });
  afterAll(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a failed commit fails every job of the batch, writes nothing and runs no after-commit signal', async () => {
    const gc = new GroupCommitter(db);
    const insert = db.prepare('INSERT INTO child (v, parent_id) VALUES (?, ?)');
    const signalled: number[] = [];
    const settled = await Promise.allSettled([
      gc.run(() => {
        insert.run(1, null);
        afterCommit(db, () => signalled.push(1));
        return 1;
      }),
      // Its own savepoint releases fine; the whole batch's COMMIT then finds parent 99 missing.
      gc.run(() => insert.run(2, 99)),
      gc.run(() => {
        insert.run(3, null);
        afterCommit(db, () => signalled.push(3));
        return 3;
      }),
    ]);
    expect(settled.map((s) => s.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(String((settled[0] as PromiseRejectedResult).reason)).toMatch(/FOREIGN KEY/);
    expect(db.prepare('SELECT count(*) AS n FROM child').get()).toEqual({ n: 0 });
    expect(signalled).toEqual([]);
    expect(db.inTransaction).toBe(false);
    // The committer goes on: the next batch commits.
    await expect(gc.run(() => insert.run(4, null).changes)).resolves.toBe(1);
    db.exec('DELETE FROM child');
  });

  it('runs jobs in the order they came, answers in that order, and signals only the jobs that committed', async () => {
    const gc = new GroupCommitter(db, 4);
    const insert = db.prepare('INSERT INTO child (v) VALUES (?)');
    const order: string[] = [];
    const jobs = Array.from({ length: 10 }, (_, i) =>
      gc
        .run(() => {
          insert.run(i);
          afterCommit(db, () => order.push(`signal ${i}`));
          if (i === 5) throw new Error('job 5 fails');
          return i;
        })
        .then(
          (v) => order.push(`answer ${v}`),
          () => order.push(`error ${i}`),
        ),
    );
    await Promise.all(jobs);
    // Each job's signal before its answer; signals and answers in arrival order; job 5 alone failed.
    const committed = [0, 1, 2, 3, 4, 6, 7, 8, 9];
    expect(order.filter((o) => o.startsWith('signal'))).toEqual(committed.map((i) => `signal ${i}`));
    expect(order.filter((o) => !o.startsWith('signal'))).toEqual(Array.from({ length: 10 }, (_, i) => (i === 5 ? 'error 5' : `answer ${i}`)));
    for (const i of committed) expect(order.indexOf(`signal ${i}`)).toBeLessThan(order.indexOf(`answer ${i}`));
    expect((db.prepare('SELECT v FROM child ORDER BY rowid').all() as Array<{ v: number }>).map((r) => r.v)).toEqual([0, 1, 2, 3, 4, 6, 7, 8, 9]);
  });

  it('afterCommit outside a group commit runs at once (the caller committed already)', () => {
    let ran = false;
    afterCommit(db, () => (ran = true));
    expect(ran).toBe(true);
  });
});

describe('request writes go through the pipeline', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
    fund(s.daemon.ctx, s.installation.sandbox_id, 10_000_000);
  });
  afterAll(() => s.stop());

  it('checkouts, payments, refunds, disputes, transfers, withdrawals, customers, products and terminal commands commit in it', async () => {
    commitAudit.outsidePipeline.clear();
    const checkoutBody = { items: [{ name: 'Coffee', amount_in_cents: 1500 }], currency: 'GTQ' };
    const checkout = (await s.api('POST', '/checkouts', { body: checkoutBody })).body;
    expect((await s.api('PATCH', `/checkouts/${checkout.id}`, { body: { metadata: { till: '1' } } })).status).toBe(200);
    const paid = await s.api('POST', `/test_helpers/checkouts/${checkout.id}/pay`, { body: { method: 'card', outcome: 'succeeded' } });
    expect(paid.status).toBe(200);
    expect((await s.api('POST', '/refunds', { body: { payment_intent_id: paid.body.payment_intent_id } })).status).toBe(201);
    const disputedCheckout = (await s.api('POST', '/checkouts', { body: checkoutBody })).body;
    const disputedPayment = await s.api('POST', `/test_helpers/checkouts/${disputedCheckout.id}/pay`, { body: { method: 'card', outcome: 'succeeded' } });
    const dispute = await s.api('POST', `/test_helpers/payment_intents/${disputedPayment.body.payment_intent_id}/dispute`, { body: {} });
    expect(dispute.status).toBe(201);
    expect((await s.api('POST', `/test_helpers/disputes/${dispute.body.id}/advance`, { body: { outcome: 'won' } })).status).toBe(200);
    // A fresh install has one account: a second one in the organization to transfer to.
    const recipient = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock).createAccount({
      name: 'Recipient',
      organizationId: s.installation.organization_id,
    }).sandbox.id;
    const transfer = await s.api('POST', '/transfers', { body: { amount_in_cents: 100, currency: 'GTQ', recipient_id: recipient } });
    expect(transfer.status).toBe(201);
    expect(transfer.body.status).toBe('completed');
    const bank = (
      await s.api('POST', '/bank_accounts', {
        body: { holder_name: 'Tienda', number: '0123456789', bank_name: 'Banrural', currency: 'GTQ', account_type: 'monetaria' },
      })
    ).body;
    const withdrawal = await s.api('POST', '/withdrawals', { body: { amount_in_cents: 100, currency: 'GTQ', bank_account_id: bank.id } });
    expect(withdrawal.status).toBe(201);
    expect((await s.api('POST', `/test_helpers/withdrawals/${withdrawal.body.id}/advance`, { body: { outcome: 'in_transit' } })).status).toBe(200);
    expect((await s.api('POST', '/customers', { body: { email: 'ana@example.com' } })).status).toBe(201);
    expect((await s.api('POST', '/customers', { body: { email: 'ana@example.com' } })).status).toBe(200);
    const product = await s.api('POST', '/products', { body: { product: { name: 'Tea', prices_attributes: [{ amount_in_cents: 900, currency: 'GTQ' }] } } });
    expect(product.status).toBe(201);
    expect((await s.api('PATCH', `/products/${product.body.id}`, { body: { product: { name: 'Green tea' } } })).status).toBe(200);
    const terminal = (await s.api('POST', '/terminals', { body: { name: 'Till' } })).body;
    const command = await s.api('POST', '/terminal_session_commands', { body: { terminal_id: terminal.id, external_id: 'sale-1', amount_in_cents: 500 } });
    expect(command.status).toBe(201);
    expect((await s.api('DELETE', `/terminal_session_commands/${command.body.id}`)).status).toBe(200);
    expect((await s.api('DELETE', `/terminals/${terminal.id}`)).status).toBe(200);
    // With an Idempotency-Key too: the claim and the stored answer join the pipeline.
    const keyed = await s.api('POST', '/checkouts', { body: checkoutBody, headers: { 'idempotency-key': 'k-1' } });
    expect(keyed.status).toBe(201);
    expect(rows(s, "SELECT state FROM idempotency_keys WHERE key = 'k-1'")).toEqual([{ state: 'done' }]);

    expect([...commitAudit.outsidePipeline]).toEqual([]);
  });

  it('requests sent together share commits; one refused rolls back alone and the others are written', async () => {
    const before = rows(s, 'SELECT count(*) AS n FROM checkouts')[0].n as number;
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        s.api('POST', '/checkouts', {
          body: { items: [{ name: 'Coffee', amount_in_cents: 1000 + i }], currency: 'GTQ', ...(i === 4 ? { customer_id: 'cus_missing' } : {}) },
        }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array.from({ length: 12 }, (_, i) => (i === 4 ? 400 : 201)));
    expect(rows(s, 'SELECT count(*) AS n FROM checkouts')[0].n).toBe(before + 11);
  });
});
