/**
 * Issue 37: "stored payments near their caps or window" is one of the conditions the page turns red
 * for and the manager hears of (decision 0226's channels: a real SMTP server in-process and a signed
 * webhook to a real receiver), once per condition, with the all-clear. A real daemon, a scripted
 * v2 terminal over a real WebSocket storing real payments, an injected clock for the window.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startHarness, type Harness } from '../terminals/helpers/harness.js';
import { ManualClock } from '../../devices/index.js';
import { tx } from '../../src/db/database.js';
import { AlertNotifier } from '../../src/modules/ops/alerts.js';
import { statusView } from '../../src/modules/ops/panels.js';
import { setAccountCaps } from '../../src/modules/terminals/stored/changes.js';
import { newSigningSecret, verify } from '../../src/modules/webhooks/index.js';
import { STATE, syncState } from '../../src/sync/shared/state.js';
import { Receiver } from '../helpers/receiver.js';
import { mailText, startMailbox, type Mailbox } from '../contracts/helpers.js';

const T0 = Date.parse('2026-06-05T14:00:00.000Z');
const SECRET = newSigningSecret();
const UNREACHABLE = { central_url: 'http://127.0.0.1:9', central_key: 'sk_central_unused' };

let h: Harness;
let mailbox: Mailbox;
let receiver: Receiver;
const clock = new ManualClock(T0);

beforeAll(async () => {
  mailbox = await startMailbox();
  receiver = new Receiver([{ status: 200 }]);
  const url = await receiver.start();
  h = await startHarness('websocket', {
    protocol: 2,
    clock,
    // Small caps, so four payments reach 80% of max_count; a 10 h window, so 8 h is 80% of it.
    terminals: { offline: { max_count: 5, max_total_in_cents: 100_000, max_age_hours: 10 } },
    config: {
      sync: UNREACHABLE,
      webhooks: { allow_cidrs: ['127.0.0.0/8'] },
      alerts: {
        email_to: 'manager@shop.example',
        smtp: { host: '127.0.0.1', port: mailbox.port, from: 'posd <alerts@shop.example>' },
        webhook_url: `${url}/alerts`,
        webhook_secret: SECRET,
        // The test drives the checks itself.
        check_interval_ms: 3_600_000,
      },
    },
  });
});

afterAll(async () => {
  await h?.stop();
  await mailbox?.close();
  await receiver?.stop();
});

async function storeOne(amount: number, reference: string): Promise<string> {
  const c = await h.charge({ amount_in_cents: amount });
  expect(c.status).toBe(201);
  await h.terminal.next('charge', (m) => m.command_id === c.body.id);
  await h.terminal.result(c.body.id, 'stored', { offline_reference: reference, card: { network: 'visa', last4: '1881' } });
  await h.terminal.next('result_ack', (m) => m.command_id === c.body.id);
  return c.body.id as string;
}

const hooks = (key: string) =>
  receiver.received
    .map((x) => ({ ...x, json: JSON.parse(x.body) as { type: string; data: { key: string; problem: string } } }))
    .filter((x) => x.json.data.key === key);
// By the text (a long subject is cut with an ellipsis, then MIME-encoded).
const mails = (pattern: RegExp) => mailbox.messages.filter((m) => pattern.test(mailText(m.raw)));
const nearLines = () => statusView(h.server.daemon.ctx).verdict.filter((p) => /stored offline (are near their caps|used \d+% or more)/.test(p.problem));

it('near a cap or the window: red on the page, one mail and one signed webhook each, and the all-clear', async () => {
  const ctx = h.server.daemon.ctx;
  tx(ctx.db, () => syncState(ctx.db).setState(STATE.lastAttemptOk, 0));
  const notifier = new AlertNotifier(ctx);
  const commands: string[] = [];
  for (const ref of ['off-1', 'off-2', 'off-3']) commands.push(await storeOne(1_000, ref));

  // 3 of 5 (60%): not near yet, nothing red for it, nothing sent for it.
  expect(nearLines()).toEqual([]);
  await notifier.check();
  expect(hooks('stored:caps')).toHaveLength(0);

  // The fourth: 4 of 5, 80% of max_count.
  commands.push(await storeOne(1_000, 'off-4'));
  const view = statusView(ctx);
  expect(view.level).toBe('attention');
  expect(nearLines().map((p) => p.problem)).toEqual([expect.stringContaining('4 of 5 payments stored (80% of max_count)')]);
  await notifier.check();
  await notifier.check();
  const raised = hooks('stored:caps');
  expect(raised.map((x) => x.json.type)).toEqual(['alert.raised']);
  expect(raised[0].json.data.problem).toMatch(/^card payments stored offline are near their caps: .*4 of 5 payments stored \(80% of max_count\)/);
  const hd = raised[0].headers as Record<string, string>;
  expect(
    verify(
      SECRET,
      { 'webhook-id': hd['webhook-id'], 'webhook-timestamp': hd['webhook-timestamp'], 'webhook-signature': hd['webhook-signature'] },
      raised[0].body,
    ),
  ).toBe(true);
  const capMails = mails(/^card payments stored offline are near their caps/);
  expect(capMails).toHaveLength(1);
  expect(mailText(capMails[0].raw)).toContain('posd payments offline caps');
  expect(hooks('stored:window')).toHaveLength(0);

  // 7 h 59 min after the first was stored: under 80% of its 10 h window.
  clock.advance(8 * 3_600_000 - 60_000);
  await notifier.check();
  expect(hooks('stored:window')).toHaveLength(0);
  // 8 h: 80% of the window.
  clock.advance(60_000);
  expect(nearLines().map((p) => p.problem)).toContainEqual(expect.stringMatching(/^4 card payment\(s\) stored offline used 80% or more of their window/));
  await notifier.check();
  await notifier.check();
  expect(hooks('stored:window').map((x) => x.json.type)).toEqual(['alert.raised']);
  expect(mails(/^4 card payment\(s\) stored offline used 80% or more/)).toHaveLength(1);

  // A manager raises the cap: the caps' all-clear, once by each channel; the window still stands.
  tx(ctx.db, () => setAccountCaps(ctx, { id: h.server.installation.sandbox_id, live_mode: false }, { max_count: 50 }, { actor: 'Ana', reason: 'busy day' }));
  await notifier.check();
  await notifier.check();
  expect(hooks('stored:caps').map((x) => x.json.type)).toEqual(['alert.raised', 'alert.cleared']);
  expect(mails(/^All clear[\s\S]*card payments stored offline are near their caps/)).toHaveLength(1);
  expect(nearLines().map((p) => p.problem)).toEqual([expect.stringMatching(/used 80% or more of their window/)]);

  // The link is back and the terminal forwards them: the window's all-clear; nothing left red for them.
  for (const [i, id] of commands.entries()) {
    await h.terminal.forward(id, `off-${i + 1}`, 'approved');
    await h.terminal.next('forward_ack', (a) => a.offline_reference === `off-${i + 1}`);
  }
  expect(nearLines()).toEqual([]);
  await notifier.check();
  expect(hooks('stored:window').map((x) => x.json.type)).toEqual(['alert.raised', 'alert.cleared']);
  expect(mails(/^All clear[\s\S]*4 card payment\(s\) stored offline/)).toHaveLength(1);
});
