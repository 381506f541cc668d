/**
 * posd killed with SIGKILL while payments are stored, and again while forward results arrive: after
 * each restart the terminal's stored payments are all there, each waiting as one pending payment
 * intent (intent.pending once each), each forward result is applied once, and the money moves once
 * (the same payment intent succeeds or fails: one intent.succeeded or intent.failed per sale, one
 * `terminal_payment` and one `stored_payment` record for the central).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, expect, it } from 'vitest';
import { call, freePort, kill9, startPosd, type PosdProcess } from './helpers/posd-process.js';
import { runPosd } from '../helpers/process.js';
import { connectWsTerminal, type ScriptedTerminal } from './helpers/scripted-terminal.js';

let posd: PosdProcess | undefined;
let terminal: ScriptedTerminal | undefined;
let dataDir: string | undefined;
afterEach(async () => {
  await terminal?.close().catch(() => {});
  if (posd) await kill9(posd);
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

it('SIGKILL while payments are stored and while forward results arrive: nothing lost or doubled', async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'posd-stored-crash-'));
  const env = {
    POSD_DATA: dataDir,
    POSD_HTTP_PORT: String(await freePort()),
    POSD_TERMINALS_PING_INTERVAL_MS: '0',
    POSD_LIMITS_PER_KEY_PER_SECOND: '10000',
  };
  posd = await startPosd(env);
  const key = posd.testKey!;
  const trm = (await call(posd.url, key, 'POST', '/terminals', { name: 'Till 1' })).body;
  const connect = async () => {
    terminal = await connectWsTerminal(posd!.url, trm.id, trm.pairing_token);
    expect(await terminal.hello({ protocol: 2 })).toMatchObject({ type: 'welcome', protocol: 2 });
    return terminal;
  };
  let t = await connect();

  const ids: string[] = [];
  for (const [i, amount] of [1200, 3400, 560].entries()) {
    const c = await call(posd.url, key, 'POST', '/terminal_session_commands', { terminal_id: trm.id, external_id: `off-${i}`, amount_in_cents: amount });
    expect(c.status).toBe(201);
    ids.push(c.body.id);
    await t.next('charge', (m) => m.command_id === c.body.id);
    await t.result(c.body.id, 'stored', { offline_reference: `R${i}` });
    await t.next('result_ack', (m) => m.command_id === c.body.id);
  }

  // Killed with three payments stored: after the restart the policy counts them all.
  await kill9(posd);
  await t.link.whenDown;
  posd = await startPosd(env);
  t = await connect();
  expect(await t.next('offline_policy')).toMatchObject({ remaining_count: 97, remaining_amount_in_cents: 500_000 - 5160 });
  for (const id of ids)
    expect((await call(posd.url, key, 'GET', `/terminal_session_commands/${id}`)).body).toMatchObject({
      status: 'stored',
      final: false,
      checkout_status: 'payment_in_progress',
    });
  const waiting = new Database(join(dataDir, 'posd.db'), { readonly: true });
  try {
    // Each waits as one pending payment intent, named by its stored payment and its checkout.
    const rows = waiting
      .prepare(
        `SELECT sp.offline_reference AS r, p.status, p.method, i.status AS intent, c.payment_intent_id = p.id AS linked FROM stored_payments sp
           JOIN payment_intents p ON p.id = sp.payment_intent_id JOIN intents i ON i.id = p.intent_id JOIN checkouts c ON c.id = sp.checkout_id ORDER BY sp.seq`,
      )
      .all();
    expect(rows).toEqual(['R0', 'R1', 'R2'].map((r) => ({ r, status: 'pending', method: 'terminal', intent: 'pending', linked: 1 })));
    expect((waiting.prepare(`SELECT COUNT(*) AS n FROM events WHERE type = 'intent.pending'`).get() as { n: number }).n).toBe(3);
  } finally {
    waiting.close();
  }

  // The processor is back. The first result goes out and posd dies before (or after) committing it:
  // the terminal never saw its ack, so it sends it again after the restart, with the others.
  await t.forward(ids[0], 'R0', 'approved');
  await kill9(posd);
  await t.link.whenDown;
  expect(t.count('forward_ack')).toBe(0);
  posd = await startPosd(env);
  t = await connect();
  await t.forward(ids[0], 'R0', 'approved');
  await t.forward(ids[1], 'R1', 'declined');
  await t.forward(ids[2], 'R2', 'approved');
  await t.forward(ids[2], 'R2', 'approved');
  for (const ref of ['R0', 'R1', 'R2', 'R2']) await t.next('forward_ack', (a) => a.offline_reference === ref);

  const statuses = await Promise.all(ids.map(async (id) => (await call(posd!.url, key, 'GET', `/terminal_session_commands/${id}`)).body.checkout_status));
  expect(statuses).toEqual(['paid', 'unpaid', 'paid']);
  const db = new Database(join(dataDir, 'posd.db'), { readonly: true });
  try {
    expect(db.prepare(`SELECT offline_reference AS r, status FROM stored_payments ORDER BY seq`).all()).toEqual([
      { r: 'R0', status: 'approved' },
      { r: 'R1', status: 'declined' },
      { r: 'R2', status: 'approved' },
    ]);
    const checkouts = ids.map((id) => (db.prepare(`SELECT checkout_id FROM terminal_commands WHERE id = ?`).get(id) as { checkout_id: string }).checkout_id);
    const pas = checkouts.map((c) => (db.prepare(`SELECT COUNT(*) AS n FROM payment_intents WHERE checkout_id = ?`).get(c) as { n: number }).n);
    // One payment intent per sale, the one that waited: succeeded, failed (declined later), succeeded.
    expect(pas).toEqual([1, 1, 1]);
    const outcomes = checkouts.map((c) =>
      db
        .prepare(
          `SELECT p.status, p.failure_reason AS reason, i.status AS intent FROM payment_intents p JOIN intents i ON i.id = p.intent_id WHERE p.checkout_id = ?`,
        )
        .get(c),
    );
    expect(outcomes).toEqual([
      { status: 'succeeded', reason: null, intent: 'succeeded' },
      { status: 'failed', reason: 'insufficient_funds', intent: 'failed' },
      { status: 'succeeded', reason: null, intent: 'succeeded' },
    ]);
    const events = db.prepare(`SELECT type, COUNT(*) AS n FROM events WHERE type LIKE 'intent.%' GROUP BY type ORDER BY type`).all();
    expect(events).toEqual([
      { type: 'intent.failed', n: 1 },
      { type: 'intent.pending', n: 3 },
      { type: 'intent.succeeded', n: 2 },
    ]);
    expect((db.prepare(`SELECT COUNT(*) AS n FROM balance_transactions WHERE type = 'charge'`).get() as { n: number }).n).toBe(2);
    // The central gets each sale's outcome once, and each stored payment's final state once.
    const records = db
      .prepare(`SELECT kind, COUNT(*) AS n FROM sync_outbox WHERE kind IN ('terminal_payment', 'stored_payment') GROUP BY kind ORDER BY kind`)
      .all();
    expect(records).toEqual([
      { kind: 'stored_payment', n: 3 },
      { kind: 'terminal_payment', n: 3 },
    ]);
    // The manager's list of sales to collect, from the shell beside the running daemon: the declined one.
    const { account_id: accountId } = db.prepare('SELECT account_id FROM terminals WHERE id = ?').get(trm.id) as { account_id: string };
    const declinedPa = (db.prepare('SELECT payment_intent_id AS id FROM stored_payments WHERE offline_reference = ?').get('R1') as { id: string }).id;
    const listed = await runPosd(['payments', 'offline', 'to-collect', '--account', accountId, '--json', '--data', dataDir!]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([
      expect.objectContaining({
        external_id: 'off-1',
        amount_in_cents: 3400,
        currency: 'GTQ',
        status: 'declined',
        reason: 'insufficient_funds',
        terminal_id: trm.id,
        command_id: ids[1],
        checkout_id: checkouts[1],
        checkout_status: 'unpaid',
        payment_intent_id: declinedPa,
        customer: null,
      }),
    ]);
    const table = await runPosd(['payments', 'offline', 'to-collect', '--account', accountId, '--data', dataDir!]);
    expect(table.stdout).toContain('declined: insufficient_funds');
    expect(table.stdout).toContain(`${checkouts[1]} unpaid`);
  } finally {
    db.close();
  }
});
