import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../devices/index.js';
import { tx } from '../../src/db/database.js';
import { startDaemon, type Daemon } from '../../src/daemon.js';
import { validateConfig } from '../../src/config.js';
import { AlertNotifier } from '../../src/modules/ops/alerts.js';
import { newSigningSecret, verify } from '../../src/modules/webhooks/index.js';
import { centralSide } from '../../src/sync/central/sync-store.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Receiver } from '../helpers/receiver.js';
import { until } from '../helpers/until.js';
import { mailText, startMailbox, type Mailbox } from '../contracts/helpers.js';
import { addStoreAccount } from '../sync/helpers.js';

// Issue 37: the conditions that turn the page red reach the manager, by e-mail (a real SMTP server
// in-process) and by a signed webhook (a real HTTP receiver on port 0): once per condition, the
// all-clear when it clears, and nothing sent twice across a restart.

const T0 = Date.parse('2026-06-05T15:00:00.000Z');
const SECRET = newSigningSecret();
const iso = (ms: number) => new Date(ms).toISOString();

let server: TestServer | undefined;
let restarted: Daemon | undefined;
let mailbox: Mailbox | undefined;
let receiver: Receiver | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await restarted?.stop();
  await server?.stop();
  await mailbox?.close();
  await receiver?.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  server = restarted = mailbox = receiver = undefined;
});

async function central(checkEveryMs: number, clock = new ManualClock(T0)) {
  mailbox = await startMailbox();
  receiver = new Receiver([{ status: 200 }]);
  const url = await receiver.start();
  const dataDir = mkdtempSync(join(tmpdir(), 'posd-alerts-'));
  dirs.push(dataDir);
  const config = {
    role: 'central',
    sync: { store_silent_ms: 15 * 60_000 },
    webhooks: { allow_cidrs: ['127.0.0.0/8'] },
    alerts: {
      email_to: 'manager@shop.example',
      smtp: { host: '127.0.0.1', port: mailbox.port, from: 'posd <alerts@shop.example>' },
      webhook_url: `${url}/alerts`,
      webhook_secret: SECRET,
      check_interval_ms: checkEveryMs,
    },
  };
  server = await startTestServer({ config, clock, dataDir });
  const account = addStoreAccount(server, 'Antigua');
  // A store box that last pushed 2 h ago: silent past the 15 min.
  const db = server.daemon.ctx.db;
  tx(db, () => {
    centralSide(db).ensureStore('store_ant', account.accountId, true, iso(T0 - 86_400_000));
    centralSide(db).setReceived('store_ant', 1, iso(T0 - 2 * 3_600_000));
  });
  return { clock, config, dataDir };
}

const silentMails = (m: Mailbox) => m.messages.filter((x) => /Subject: .*store\(s\) have not pushed/.test(x.raw.replace(/\r?\n\s+/g, ' ')));
const hooks = (r: Receiver, key: string) =>
  r.received
    .map((x) => ({ ...x, json: JSON.parse(x.body) as { type: string; data: { key: string; problem: string; since: string } } }))
    .filter((x) => x.json.data.key === key);

describe('alerts that reach the manager', () => {
  it('the daemon sends a silent store by e-mail and a signed webhook at its own pace', async () => {
    await central(50);
    await until('the first alert by both channels', () => silentMails(mailbox!).length === 1 && hooks(receiver!, 'sync:sync_store_silent').length === 1);
    const mail = silentMails(mailbox!)[0];
    expect(mail.to).toEqual(['manager@shop.example']);
    expect(mailText(mail.raw)).toContain('What to do: check that the store is open');
    const hook = hooks(receiver!, 'sync:sync_store_silent')[0];
    expect(hook.json.type).toBe('alert.raised');
    expect(hook.json.data.problem).toMatch(/^sync: 1 store\(s\) have not pushed for more than 15 min: store_ant/);
    const h = hook.headers as Record<string, string>;
    expect(
      verify(SECRET, { 'webhook-id': h['webhook-id'], 'webhook-timestamp': h['webhook-timestamp'], 'webhook-signature': h['webhook-signature'] }, hook.body),
    ).toBe(true);
    expect(
      verify(
        newSigningSecret(),
        { 'webhook-id': h['webhook-id'], 'webhook-timestamp': h['webhook-timestamp'], 'webhook-signature': h['webhook-signature'] },
        hook.body,
      ),
    ).toBe(false);
  });

  it('once per condition, not again after a restart, a failed webhook retried alone, and the all-clear', async () => {
    const { clock, config } = await central(3_600_000);
    // A fresh box has three conditions (no backup yet, no recovery key, the silent store): the
    // receiver refuses each once.
    receiver!.replies = [{ status: 503 }, { status: 503 }, { status: 503 }, { status: 200 }];
    const notifier = new AlertNotifier(server!.daemon.ctx);
    await notifier.check();
    expect(silentMails(mailbox!)).toHaveLength(1);
    // Backups failing (here: none taken yet) is a condition of its own.
    expect(mailbox!.messages.filter((m) => m.raw.includes('Subject: [posd ') && m.raw.includes('last backup: no backup has been taken'))).toHaveLength(1);
    // The receiver refused it: tried again at the next check, the e-mail not sent again.
    expect(hooks(receiver!, 'sync:sync_store_silent')).toHaveLength(1);
    await notifier.check();
    await notifier.check();
    expect(silentMails(mailbox!)).toHaveLength(1);
    const raised = hooks(receiver!, 'sync:sync_store_silent');
    expect(raised).toHaveLength(2);
    // The same notice, the same id: a receiver drops the repeat by it.
    expect(raised[0].headers['webhook-id']).toBe(raised[1].headers['webhook-id']);
    const mailsBefore = mailbox!.messages.length;
    const hooksBefore = receiver!.received.length;

    // A restart on the same data folder: what was announced is remembered.
    await server!.daemon.stop();
    restarted = await startDaemon({
      config: validateConfig({ data_dir: server!.dataDir, http: { port: 0, host: '127.0.0.1' }, ...config }),
      clock,
      log: pino({ level: 'silent' }),
    });
    await new AlertNotifier(restarted.ctx).check();
    expect(mailbox!.messages.length).toBe(mailsBefore);
    expect(receiver!.received.length).toBe(hooksBefore);

    // The store pushes again: the all-clear, once, by each channel.
    clock.advance(60_000);
    tx(restarted.ctx.db, () => centralSide(restarted!.ctx.db).setReceived('store_ant', 2, iso(clock.now())));
    const again = new AlertNotifier(restarted.ctx);
    await again.check();
    await again.check();
    const clearMails = mailbox!.messages.slice(mailsBefore);
    expect(clearMails).toHaveLength(1);
    expect(clearMails[0].raw.replace(/\r?\n\s+/g, ' ')).toMatch(/Subject: \[posd [^\]]+\] cleared: sync: 1 store\(s\) have not pushed/);
    expect(mailText(clearMails[0].raw)).toContain('All clear');
    const cleared = hooks(receiver!, 'sync:sync_store_silent').slice(2);
    expect(cleared.map((c) => c.json.type)).toEqual(['alert.cleared']);
    expect(cleared[0].json.data.since).toBe(raised[1].json.data.since);
  });

  it('refuses a webhook URL without a signing secret', () => {
    expect(() => validateConfig({ alerts: { webhook_url: 'https://alerts.example/hook' } })).toThrow(/alerts\.webhook_secret/);
  });
});
