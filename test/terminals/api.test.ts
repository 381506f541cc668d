import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { connectWsTerminal } from './helpers/scripted-terminal.js';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ config: { terminals: { ping_interval_ms: 0 }, limits: { per_key_per_second: 100_000 } } });
});
afterAll(() => s.stop());

let seq = 0;
const ext = () => `api-ext-${++seq}`;

async function terminal(name = 'Till') {
  const r = await s.api('POST', '/terminals', { body: { name } });
  expect(r.status).toBe(201);
  return r.body as { id: string; pairing_token: string };
}

function commandCount(): number {
  return (s.daemon.ctx.db.prepare('SELECT COUNT(*) AS n FROM terminal_commands').get() as { n: number }).n;
}

describe('terminal registry', () => {
  it('shows the pairing token once and stores only its hash', async () => {
    const created = await s.api('POST', '/terminals', { body: { name: 'Front counter' } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'Front counter',
      transport: 'websocket',
      availability: 'unavailable',
      last_seen_at: null,
      model: null,
      firmware: null,
    });
    expect(created.body.id).toMatch(/^trm_[0-9a-z]{16}$/);
    const token = created.body.pairing_token as string;
    expect(token.length).toBeGreaterThan(30);
    const got = await s.api('GET', `/terminals/${created.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body.pairing_token).toBeUndefined();
    const row = s.daemon.ctx.db.prepare('SELECT token_hash FROM terminals WHERE id = ?').get(created.body.id) as { token_hash: string };
    expect(row.token_hash).toBe(createHash('sha256').update(token).digest('hex'));
    expect(JSON.stringify(s.daemon.ctx.db.prepare('SELECT * FROM terminals').all())).not.toContain(token);
  });

  it('takes serial terminals with their port and baud rate, and refuses incoherent transports', async () => {
    const serial = await s.api('POST', '/terminals', { body: { name: 'Serial', transport: 'serial', serial_path: '/dev/ttyNOPE0', baud_rate: 9600 } });
    expect(serial.status).toBe(201);
    expect(serial.body).toMatchObject({ transport: 'serial', serial_path: '/dev/ttyNOPE0', baud_rate: 9600 });
    const noPath = await s.api('POST', '/terminals', { body: { name: 'S', transport: 'serial' } });
    expect(noPath.status).toBe(400);
    expect(noPath.body.errors.serial_path).toBeDefined();
    const mixed = await s.api('POST', '/terminals', { body: { name: 'W', transport: 'websocket', serial_path: '/dev/x' } });
    expect(mixed.status).toBe(400);
    const badBaud = await s.api('POST', '/terminals', { body: { name: 'B', transport: 'serial', serial_path: '/dev/y', baud_rate: 'fast' } });
    expect(badBaud.status).toBe(400);
    expect((await s.api('POST', '/terminals', { body: {} })).status).toBe(400);
  });

  it('lists with page headers, hides other environments, and retires', async () => {
    const t = await terminal('To retire');
    const list = await s.api('GET', '/terminals?items=1');
    expect(list.status).toBe(200);
    expect(list.body).toHaveLength(1);
    expect(Number(list.headers['total-count'])).toBeGreaterThanOrEqual(2);
    expect(list.headers.link).toContain('rel="next"');
    // The live key sees the live account: none of the sandbox's terminals.
    expect((await s.api('GET', `/terminals/${t.id}`, { key: s.installation.keys.live })).status).toBe(404);
    expect((await s.api('GET', '/terminals', { key: s.installation.keys.live })).body).toEqual([]);

    const retired = await s.api('DELETE', `/terminals/${t.id}`);
    expect(retired.status).toBe(200);
    expect((await s.api('GET', `/terminals/${t.id}`)).status).toBe(404);
    expect((await s.api('DELETE', `/terminals/${t.id}`)).status).toBe(404);
    // Its token no longer opens a link.
    const link = await connectWsTerminal(s.url, t.id, t.pairing_token);
    const answer = await link.hello();
    expect(answer).toMatchObject({ type: 'error', code: 'unauthorized' });
    await link.link.whenDown;
  });

  it('refuses a hello with a wrong token, and records model and firmware from a good one', async () => {
    const t = await terminal('Hello');
    const bad = await connectWsTerminal(s.url, t.id, t.pairing_token);
    expect(await bad.hello({ token: 'tpt_wrong' })).toMatchObject({ type: 'error', code: 'unauthorized' });
    const good = await connectWsTerminal(s.url, t.id, t.pairing_token);
    expect((await good.hello()).type).toBe('welcome');
    await expect.poll(async () => (await s.api('GET', `/terminals/${t.id}`)).body.availability, { timeout: 10_000 }).toBe('available');
    const got = (await s.api('GET', `/terminals/${t.id}`)).body;
    expect(got).toMatchObject({ model: 'scripted-1', firmware: '2.3.4' });
    // A terminal holding a command cannot be retired.
    const cmd = await s.api('POST', '/terminal_session_commands', { body: { terminal_id: t.id, external_id: ext(), amount_in_cents: 800 } });
    await good.next('charge');
    const busy = await s.api('DELETE', `/terminals/${t.id}`);
    expect(busy.status).toBe(409);
    expect(busy.body.code).toBe('terminal_busy');
    await good.result(cmd.body.id, 'declined');
    await good.next('result_ack');
    expect((await s.api('DELETE', `/terminals/${t.id}`)).status).toBe(200);
    await good.link.whenDown;
  });
});

describe('POST /terminal_session_commands', () => {
  it('creates a pending command with its checkout carrying metadata.external_id', async () => {
    const t = await terminal();
    const externalId = ext();
    const r = await s.api('POST', '/terminal_session_commands', {
      body: { terminal_id: t.id, external_id: externalId, amount: 150.5, currency: 'GTQ', description: 'Lunch', tax_id: '1234567-8' },
    });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      external_id: externalId,
      status: 'pending',
      final: false,
      terminal_id: t.id,
      amount_in_cents: 15050,
      currency: 'GTQ',
      installments: null,
      description: 'Lunch',
      print_receipt: true,
      show_post_payment_screens: false,
      tax_id: '1234567-8',
      terminal_availability: 'unavailable',
      checkout_status: 'unpaid',
      cancellation_requested_at: null,
      canceled_at: null,
    });
    expect(r.body.id).toMatch(/^tsc_/);
    const checkout = await s.api('GET', `/checkouts/${r.body.checkout_id}`);
    expect(checkout.status).toBe(200);
    expect(checkout.body).toMatchObject({ amount_in_cents: 15050, status: 'unpaid', metadata: { external_id: externalId } });
    expect(r.body.checkout_url).toContain(r.body.checkout_id);
  });

  it('answers 200 with the same command for the same external_id, amount and terminal; 422 otherwise', async () => {
    const t = await terminal();
    const t2 = await terminal();
    const body = { terminal_id: t.id, external_id: ext(), amount_in_cents: 1200 };
    const first = await s.api('POST', '/terminal_session_commands', { body });
    expect(first.status).toBe(201);
    const again = await s.api('POST', '/terminal_session_commands', { body: { ...body, amount: 12, amount_in_cents: undefined } });
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(first.body.id);
    const n = commandCount();
    const otherAmount = await s.api('POST', '/terminal_session_commands', { body: { ...body, amount_in_cents: 1300 } });
    expect(otherAmount.status).toBe(422);
    expect(otherAmount.body.code).toBe('external_id_reused');
    const otherTerminal = await s.api('POST', '/terminal_session_commands', { body: { ...body, terminal_id: t2.id } });
    expect(otherTerminal.status).toBe(422);
    expect(commandCount()).toBe(n);
  });

  it('takes items summing to the amount, and refuses bad amounts with 400 changing nothing', async () => {
    const t = await terminal();
    const items = [
      { name: 'Tea', amount_in_cents: 600, quantity: 2 },
      { name: 'Cake', amount_in_cents: 900 },
    ];
    const ok = await s.api('POST', '/terminal_session_commands', { body: { terminal_id: t.id, external_id: ext(), items } });
    expect(ok.status).toBe(201);
    expect(ok.body.amount_in_cents).toBe(2100);
    const matching = await s.api('POST', '/terminal_session_commands', { body: { terminal_id: t.id, external_id: ext(), items, amount: 21 } });
    expect(matching.status).toBe(201);
    const usd = await s.api('POST', '/terminal_session_commands', { body: { terminal_id: t.id, external_id: ext(), amount_in_cents: 100, currency: 'USD' } });
    expect(usd.status).toBe(201);

    const n = commandCount();
    const bad: Array<[Record<string, unknown>, string]> = [
      [{ amount: 10, amount_in_cents: 1000 }, 'amount'],
      [{ items, amount_in_cents: 2000 }, 'amount_in_cents'],
      [{}, 'amount_in_cents'],
      [{ amount_in_cents: 499 }, 'amount_in_cents'],
      [{ amount_in_cents: 99, currency: 'USD' }, 'amount_in_cents'],
      [{ amount: 10.555 }, 'amount'],
      [{ amount_in_cents: '15.00' }, 'amount_in_cents'],
      [{ amount_in_cents: 1500, currency: 'EUR' }, 'currency'],
      [{ amount_in_cents: 100_000_001 }, 'amount_in_cents'],
      [{ items: [{ name: 'x', amount_in_cents: 1000, quantity: 10 }] }, 'items.0.quantity'],
      [{ amount_in_cents: 1500, terminal_id: 'trm_doesnotexist0000' }, 'terminal_id'],
    ];
    for (const [extra, field] of bad) {
      const r = await s.api('POST', '/terminal_session_commands', { body: { terminal_id: t.id, external_id: ext(), ...extra } });
      expect(r.status, JSON.stringify(extra)).toBe(400);
      expect(Object.keys(r.body.errors), JSON.stringify(extra)).toContain(field);
    }
    expect(commandCount()).toBe(n);
  });

  it('a new command supersedes the pending ones its terminal was never handed', async () => {
    const t = await terminal();
    const a = await s.api('POST', '/terminal_session_commands', { body: { terminal_id: t.id, external_id: ext(), amount_in_cents: 700 } });
    const b = await s.api('POST', '/terminal_session_commands', { body: { terminal_id: t.id, external_id: ext(), amount_in_cents: 800 } });
    expect((await s.api('GET', `/terminal_session_commands/${a.body.id}`)).body).toMatchObject({ status: 'superseded', final: true });
    expect((await s.api('GET', `/terminal_session_commands/${b.body.id}`)).body.status).toBe('pending');
    const del = await s.api('DELETE', `/terminal_session_commands/${a.body.id}`);
    expect(del.status).toBe(409);
    expect(del.body).toMatchObject({ id: a.body.id, status: 'superseded', code: 'terminal_command_final' });
    // The terminal connects: it receives only the newest.
    const link = await connectWsTerminal(s.url, t.id, t.pairing_token);
    await link.hello();
    expect((await link.next('charge')).command_id).toBe(b.body.id);
    await link.close();
  });
});

describe('GET and DELETE /terminal_session_commands', () => {
  it('lists newest first with filters and page headers', async () => {
    const t = await terminal();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await s.api('POST', '/terminal_session_commands', { body: { terminal_id: t.id, external_id: ext(), amount_in_cents: 900 + i } })).body.id);
    }
    const byTerminal = await s.api('GET', `/terminal_session_commands?terminal_id=${t.id}`);
    expect(byTerminal.body.map((c: { id: string }) => c.id)).toEqual([...ids].reverse());
    expect(byTerminal.headers['total-count']).toBe('3');
    const superseded = await s.api('GET', `/terminal_session_commands?terminal_id=${t.id}&status=superseded&items=1`);
    expect(superseded.body).toHaveLength(1);
    expect(superseded.headers['total-count']).toBe('2');
    const one = await s.api('GET', `/terminal_session_commands?external_id=${byTerminal.body[0].external_id}`);
    expect(one.body.map((c: { id: string }) => c.id)).toEqual([ids[2]]);
    expect((await s.api('GET', '/terminal_session_commands?status=lost')).status).toBe(400);
  });

  it('answers 404 for an unknown id or another account’s command', async () => {
    const t = await terminal();
    const c = await s.api('POST', '/terminal_session_commands', { body: { terminal_id: t.id, external_id: ext(), amount_in_cents: 900 } });
    expect((await s.api('GET', '/terminal_session_commands/tsc_nope')).status).toBe(404);
    expect((await s.api('DELETE', '/terminal_session_commands/tsc_nope')).status).toBe(404);
    expect((await s.api('GET', `/terminal_session_commands/${c.body.id}`, { key: s.installation.keys.live })).status).toBe(404);
    expect((await s.api('DELETE', `/terminal_session_commands/${c.body.id}`, { key: s.installation.keys.live })).status).toBe(404);
    expect((await s.api('GET', `/terminal_session_commands/${c.body.id}`)).body.status).toBe('pending');
  });
});
