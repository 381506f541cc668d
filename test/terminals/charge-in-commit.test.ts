import { once } from 'node:events';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { until } from '../helpers/until.js';
import { groupCommit } from '../../src/db/group-commit.js';
import { type SyncFile, walFlusherOf } from '../../src/db/wal-flush.js';
import { accountsOf } from '../../src/accounts/service.js';
import { bridgeOf } from '../../src/modules/terminals/link/index.js';
import { createCommand } from '../../src/modules/terminals/commands/service.js';
import { connectWsTerminal, type ScriptedTerminal } from './helpers/scripted-terminal.js';

// A new command for an attached, idle terminal is offered in the group commit that creates it, and
// its charge leaves once that commit is on disk: not after an OFFER commit and a flush of its own
// (decision 0278). The charge still never reaches the terminal before the command is durable.
let s: TestServer;
let held: Array<(error: Error | null) => void> = [];
let realSync: SyncFile | undefined;
const terminals: ScriptedTerminal[] = [];

beforeAll(async () => {
  s = await startTestServer({ config: { terminals: { ping_interval_ms: 0 } } });
});
afterEach(async () => {
  releaseFlushes();
  for (const t of terminals.splice(0)) await t.close();
});
afterAll(() => s.stop());

/** The daemon's real flusher, with a disk whose flushes end when the test says. */
function holdFlushes(): void {
  const flusher = walFlusherOf(s.daemon.ctx.db) as unknown as { sync: SyncFile };
  realSync = flusher.sync;
  held = [];
  flusher.sync = (_file, done) => held.push(done);
}

/** Ends the held flushes and gives the flusher its disk back. */
function releaseFlushes(): void {
  const flusher = walFlusherOf(s.daemon.ctx.db) as unknown as { sync: SyncFile };
  if (realSync) flusher.sync = realSync;
  realSync = undefined;
  while (held.length) held.shift()!(null);
}

async function attachedTerminal(): Promise<{ id: string; t: ScriptedTerminal }> {
  const r = await s.api('POST', '/terminals', { body: { name: 'Till' } });
  expect(r.status).toBe(201);
  const t = await connectWsTerminal(s.url, r.body.id, r.body.pairing_token);
  terminals.push(t);
  const attached = once(bridgeOf(s.daemon.ctx).events, 'attached');
  expect((await t.hello()).type).toBe('welcome');
  await attached;
  return { id: r.body.id, t };
}

async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
}

it('offers a new command in the commit that creates it, and sends the charge only once that commit is on disk', async () => {
  const { id: terminalId, t } = await attachedTerminal();
  holdFlushes();
  const post = s.api('POST', '/terminal_session_commands', { body: { terminal_id: terminalId, external_id: 'in-commit-1', amount_in_cents: 1500 } });
  await until('the batch committed and its flush started', () => held.length === 1);
  const row = s.daemon.ctx.db.prepare('SELECT id, status, offered FROM terminal_commands WHERE external_id = ?').get('in-commit-1') as {
    id: string;
    status: string;
    offered: number;
  };
  // Committed already offered: the offer rides on the command's own commit.
  expect(row).toMatchObject({ status: 'pending', offered: 1 });
  // Nothing leaves while the disk has not said it holds it (a send would arrive within these turns).
  await turns(50);
  expect(t.count('charge')).toBe(0);
  held.shift()!(null);
  const charge = await t.next('charge');
  expect(charge).toMatchObject({ command_id: row.id, amount_in_cents: 1500 });
  const answer = await post;
  expect(answer.status).toBe(201);
  // The answer says what was committed: the checkout is being paid on the terminal.
  expect(answer.body).toMatchObject({ id: row.id, status: 'pending', checkout_status: 'payment_in_progress' });
});

it('never sends a charge for a command whose write rolled back after it was offered', async () => {
  const { id: terminalId, t } = await attachedTerminal();
  const ctx = s.daemon.ctx;
  const account = accountsOf(ctx).account(s.installation.sandbox_id)!;
  holdFlushes();
  // A write joined to a batch (as sendCommitted joins a route's) that fails after creating the command.
  const other = groupCommit(ctx.db, () => 'another job of the batch');
  let joined: Promise<unknown> | undefined;
  const outer = groupCommit(ctx.db, () => {
    joined = groupCommit(ctx.db, () => {
      createCommand(ctx, account, { terminal_id: terminalId, external_id: 'rolled-back-1', amount_in_cents: 1500 });
      throw new Error('fails after the command was written');
    }).catch((err: Error) => err.message);
  });
  const failed = outer.then(() => joined);
  await until('the batch committed and its flush started', () => held.length === 1);
  expect(ctx.db.prepare('SELECT COUNT(*) FROM terminal_commands WHERE external_id = ?').pluck().get('rolled-back-1')).toBe(0);
  releaseFlushes();
  expect(await other).toBe('another job of the batch');
  expect(await failed).toBe('fails after the command was written');
  await turns(50);
  expect(t.count('charge')).toBe(0);
  // The terminal still takes the next command that does commit.
  const next = await s.api('POST', '/terminal_session_commands', { body: { terminal_id: terminalId, external_id: 'after-rollback', amount_in_cents: 1600 } });
  expect(next.status).toBe(201);
  expect(await t.next('charge')).toMatchObject({ command_id: next.body.id });
});

it("commits a terminal's ack, progress and result through the group commit: none flushes on the event loop", async () => {
  const { id: terminalId, t } = await attachedTerminal();
  const post = await s.api('POST', '/terminal_session_commands', { body: { terminal_id: terminalId, external_id: 'news-1', amount_in_cents: 1500 } });
  const id = post.body.id as string;
  await t.next('charge');
  const handled: string[] = [];
  const onHandled = (_terminal: string, msg: { type: string }) => handled.push(msg.type);
  bridgeOf(s.daemon.ctx).events.on('handled', onHandled);
  try {
    holdFlushes();
    await t.ack(id);
    await t.progress(id, 'authorizing');
    await t.result(id, 'approved');
    const status = () => s.daemon.ctx.db.prepare('SELECT status FROM terminal_commands WHERE id = ?').pluck().get(id);
    // All three committed, in the order they came, while the first flush they wait on is held...
    await until('the result committed', () => status() === 'consumed');
    // (the flush may still be gathering when the last commit lands: wait for it to start)
    await until('the flush they wait on started', () => held.length > 0);
    // ...and none is taken as done before the disk holds it (an ack of its own would have flushed inline).
    await turns(20);
    expect(held).toHaveLength(1);
    expect(handled).toEqual([]);
    expect(t.count('result_ack', id)).toBe(0);
    releaseFlushes();
    expect(await t.next('result_ack')).toMatchObject({ command_id: id });
    await until('all three handled', () => handled.length === 3);
    expect(handled).toEqual(['ack', 'progress', 'result']);
  } finally {
    bridgeOf(s.daemon.ctx).events.off('handled', onHandled);
  }
});

it("offers the next command after a result through the group commit: its charge leaves once that commit's flush ends", async () => {
  const { id: terminalId, t } = await attachedTerminal();
  const first = await s.api('POST', '/terminal_session_commands', { body: { terminal_id: terminalId, external_id: 'pump-a', amount_in_cents: 1500 } });
  await t.next('charge', (c) => c.command_id === first.body.id);
  await t.ack(first.body.id);
  // The terminal is busy: the next command waits, pending, for the result.
  const next = await s.api('POST', '/terminal_session_commands', { body: { terminal_id: terminalId, external_id: 'pump-b', amount_in_cents: 1600 } });
  expect(next.status).toBe(201);
  const offered = () => s.daemon.ctx.db.prepare('SELECT offered FROM terminal_commands WHERE id = ?').pluck().get(next.body.id);
  expect(offered()).toBe(0);
  holdFlushes();
  await t.result(first.body.id, 'approved');
  await until("the result's flush started", () => held.length === 1);
  held.shift()!(null);
  await t.next('result_ack', (a) => a.command_id === first.body.id);
  // The OFFER is committed in a group commit whose flush is held: no charge leaves before it ends.
  await until('the next command offered and its flush started', () => offered() === 1 && held.length === 1);
  await turns(20);
  expect(t.count('charge', next.body.id)).toBe(0);
  held.shift()!(null);
  expect(await t.next('charge', (c) => c.command_id === next.body.id)).toMatchObject({ amount_in_cents: 1600 });
});
