import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MAIN, runPosd, spawnDaemon, type DaemonProcess } from '../helpers/process.js';
import { PageClient } from '../helpers/page-client.js';

// Issue 16: "the status page gives no verdict: nothing says all good or what needs attention".
// A box served as its own process, its password set and its terminal registered by the command line.

const dirs: string[] = [];
const daemons: DaemonProcess[] = [];
afterEach(async () => {
  for (const d of daemons.splice(0)) {
    if (d.child.exitCode === null && d.child.signalCode === null) {
      d.child.kill('SIGKILL');
      await d.exited;
    }
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function setPassword(data: string, password: string): Promise<void> {
  const child = spawn(process.execPath, [MAIN, 'manager', 'set-password', '--password-stdin', '--data', data], { stdio: ['pipe', 'ignore', 'inherit'] });
  child.stdin.end(`${password}\n`);
  const [code] = await once(child, 'exit');
  expect(code).toBe(0);
}

/** The verdict's lines, as a manager reads them. */
function verdictOf(html: string): { headline: string; lines: string[] } {
  const section = /<section id="verdict"[^>]*>([\s\S]*?)<\/section>/.exec(html)![1];
  const text = (s: string) =>
    s
      .replace(/<[^>]+>/g, '')
      .replace(/&#39;/g, "'")
      .replace(/&amp;/g, '&')
      .trim();
  return {
    headline: text(/<h2[^>]*>([\s\S]*?)<\/h2>/.exec(section)![1]),
    lines: [...section.matchAll(/<li>([\s\S]*?)<\/li>/g)].map((m) => text(m[1].replace('</span><span class="fix">', ' | '))),
  };
}

describe('the status page gives a verdict first', () => {
  it('each problem in one line with what to do, then "All good" once they are fixed', { timeout: 300_000 }, async () => {
    const data = mkdtempSync(join(tmpdir(), 'posd-verdict-'));
    dirs.push(data);
    const inst = JSON.parse((await runPosd(['init', '--data', data, '--json'])).stdout) as { account_id: string };
    await setPassword(data, 'open sesame 2026');
    const box = spawnDaemon(['--data', data, '--port', '0']);
    daemons.push(box);
    const [, url] = await box.waitFor(/"url":"(http:\/\/127\.0\.0\.1:\d+)\/api"/, 90_000);
    const till = JSON.parse((await runPosd(['terminals', 'add', '--account', inst.account_id, '--name', 'Till 2', '--data', data, '--json'])).stdout) as {
      id: string;
    };

    const page = new PageClient(url);
    const form = await page.get('/');
    const csrf = /name="_csrf" value="([^"]+)"/.exec(form.text)![1];
    expect((await page.post('/login', { password: 'open sesame 2026', _csrf: csrf })).status).toBe(303);
    const first = await page.get('/');
    expect(first.status).toBe(200);
    // First on the page: before every panel.
    expect(first.text.indexOf('id="verdict"')).toBeGreaterThan(0);
    expect(first.text.indexOf('id="verdict"')).toBeLessThan(first.text.indexOf('<main>'));
    const problems = verdictOf(first.text);
    expect(problems.headline).toBe('2 things need attention');
    expect(problems.lines).toEqual([
      expect.stringMatching(/^last backup: no backup has been taken \| What to do: run posd backup now/),
      expect.stringMatching(/^terminal Till 2 is not connected \(never seen\) \| What to do: check that it is powered on/),
    ]);

    // The manager does what the lines say.
    expect((await runPosd(['backup', '--data', data])).code).toBe(0);
    expect((await runPosd(['terminals', 'retire', till.id, '--account', inst.account_id, '--data', data])).code).toBe(0);
    const after = verdictOf((await page.get('/')).text);
    expect(after).toEqual({ headline: 'All good', lines: [] });

    box.child.kill('SIGTERM');
    expect((await box.exited).code).toBe(0);
  });

  it('red while backups cannot rebuild the box: an upgraded box with no recovery key, until posd backup makes one', { timeout: 300_000 }, async () => {
    const data = mkdtempSync(join(tmpdir(), 'posd-verdict-'));
    dirs.push(data);
    expect((await runPosd(['init', '--data', data, '--json'])).code).toBe(0);
    // A box made before recovery keys: no public half in its data folder.
    rmSync(join(data, 'recovery-key.pub'));
    await setPassword(data, 'open sesame 2026');
    const box = spawnDaemon(['--data', data, '--port', '0']);
    daemons.push(box);
    const [, url] = await box.waitFor(/"url":"(http:\/\/127\.0\.0\.1:\d+)\/api"/, 90_000);
    const page = new PageClient(url);
    const form = await page.get('/');
    const csrf = /name="_csrf" value="([^"]+)"/.exec(form.text)![1];
    expect((await page.post('/login', { password: 'open sesame 2026', _csrf: csrf })).status).toBe(303);
    const before = verdictOf((await page.get('/')).text);
    expect(before.lines).toContainEqual(
      expect.stringMatching(
        /^recovery key: no recovery key: backups leave out the webhook signing key and secret settings, and cannot rebuild this box \| What to do: run posd backup recovery-key and write down the key it shows/,
      ),
    );

    // The first backup makes the pair, shows its private half once, and is complete.
    const backup = await runPosd(['backup', '--data', data]);
    expect(backup.code).toBe(0);
    expect(backup.stdout).toMatch(/^posd: this box had no recovery key; one was made: rk-[0-9a-f]{12}\n {2}recovery key {2}POSD-RK1-/);
    expect(backup.stdout).toMatch(/secrets sealed to recovery key rk-[0-9a-f]{12}\)\n$/);
    expect(verdictOf((await page.get('/')).text)).toEqual({ headline: 'All good', lines: [] });

    box.child.kill('SIGTERM');
    expect((await box.exited).code).toBe(0);
  });
});
