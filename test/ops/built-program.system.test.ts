import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mailText, pdfText, squash, startMailbox, type Mailbox } from '../contracts/helpers.js';
import { MAIN, spawnDaemon, type DaemonProcess } from '../helpers/process.js';

/**
 * The built `posd` (dist/posd/posd.js, what a store box runs) through the paths it loads at their
 * first use rather than at start: the in-process tests run the sources, so a path the build breaks
 * (a dynamic import the bundle cannot follow, a file not copied beside it) shows only here. Once it
 * was the signed contract's PDF (pdfkit, imported by renderSignedPdf at the first signature):
 * `pdf_available` stayed false in the built program while every in-process test passed.
 */
let dir: string;
let mail: Mailbox;
let posd: DaemonProcess;
let api: string;
let key: string;

const call = async (method: string, path: string, body?: unknown) => {
  const res = await request(`${api}${path}`, {
    method: method as 'GET',
    headers: { 'x-secret-key': key, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.body.text();
  return { status: res.statusCode, body: text ? JSON.parse(text) : undefined };
};
const form = async (url: string, fields: Record<string, string>) => {
  const res = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });
  return { status: res.statusCode, text: await res.body.text() };
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'posd-built-'));
  mail = await startMailbox();
  const config = join(dir, 'posd.json');
  writeFileSync(config, JSON.stringify({ contracts: { smtp: { host: '127.0.0.1', port: mail.port } } }));
  posd = spawnDaemon(['--data', join(dir, 'data'), '--config', config, '--port', '0']);
  const [, url, testKey] = await posd.waitFor(/API\s+(http:\/\/127\.0\.0\.1:\d+\/api)[\s\S]*test key\s+(sk_test_\w+)/, 60_000);
  api = url;
  key = testKey;
}, 90_000);
afterAll(async () => {
  posd?.child.kill('SIGTERM');
  if (posd) expect((await posd.exited).code).toBe(0);
  await mail?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the built program loads what it loads at first use', () => {
  it('a contract sent by e-mail, signed on its page, and its PDF fetched (nodemailer, the signing page, pdfkit)', async () => {
    const template = await call('POST', '/contract_templates', {
      name: 'Consentimiento',
      body: '<p>Yo, {nombre}, autorizo a {comercio} a realizar {servicio}.</p>',
      fields: [{ key: 'acepto', label: 'Acepto', kind: 'checkbox', required: true }],
    });
    expect(template.status, JSON.stringify(template.body)).toBe(201);
    const sent = await call('POST', '/contracts', {
      template_id: template.body.id,
      service_name: 'Limpieza',
      customer: { name: 'Ana Pérez', phone: '+50255550000', email: 'ana@example.com' },
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    const contract = sent.body;
    expect(mailText((await mail.next()).raw)).toContain(contract.signing_url);

    const page = await request(contract.signing_url);
    expect(page.statusCode).toBe(200);
    expect(await page.body.text()).toContain('Limpieza');
    const code = /id="sandbox-code">[^<]*<strong>(\d{6})</.exec((await form(`${contract.signing_url}/code`, { channel: 'sandbox' })).text)?.[1];
    expect(code).toMatch(/^\d{6}$/);
    const signed = await form(`${contract.signing_url}/complete`, { code: code!, action: 'sign', field_acepto: 'on' });
    expect(signed.status).toBe(200);

    // The signing request renders the PDF before it answers (a failure is logged and left to the worker).
    const got = await call('GET', `/contracts/${contract.id}`);
    expect(got.body, posd.stdout()).toMatchObject({ status: 'signed', pdf_available: true });
    const pdf = await request(`${api}/contracts/${contract.id}/pdf`, { headers: { 'x-secret-key': key } });
    expect(pdf.statusCode).toBe(200);
    const bytes = Buffer.from(await pdf.body.arrayBuffer());
    expect(bytes.subarray(0, 5).toString()).toBe('%PDF-');
    expect(squash(pdfText(bytes))).toContain(got.body.body_sha256);
  });

  it('the status page, the OpenAPI document and an unknown route (each loaded by its first request)', async () => {
    const origin = api.replace(/\/api$/, '');
    const status = await request(`${origin}/`);
    expect(status.statusCode).toBe(200);
    expect(await status.body.text()).toContain('posd managers add');
    const doc = await request(`${origin}/openapi.json`);
    expect(doc.statusCode).toBe(200);
    expect(((await doc.body.json()) as { paths: Record<string, unknown> }).paths).toHaveProperty(['/test']);
    const missing = await call('GET', '/no_such_route');
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe('route_not_found');
  });

  it('a report run written in the background and downloaded (the CSV writer)', async () => {
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    const created = await call('POST', '/report_runs', { from_time: '2026-01-01', until_time: yesterday });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    // Another process: its worker (pending, running, then succeeded or failed) is watched only through
    // the API, a read every 50 ms for up to a
    // minute (a loaded machine runs the worker late).
    let run = created.body;
    for (const until = Date.now() + 60_000; run.status !== 'succeeded' && run.status !== 'failed' && Date.now() < until; ) {
      await new Promise((r) => setTimeout(r, 50));
      run = (await call('GET', `/report_runs/${run.id}`)).body;
    }
    expect(run.status).toBe('succeeded');
    const csv = await request(`${api}/report_runs/${run.id}/download`, { headers: { 'x-secret-key': key } });
    expect(csv.statusCode).toBe(200);
    expect((await csv.body.text()).split('\n')[0]).toMatch(/^Id,Created,Type/);
  }, 90_000);

  it('runs as a command: by its #! line (npx posd), through bin/posd, and as node dist/posd/posd.js', async () => {
    const run = promisify(execFile);
    const bin = fileURLToPath(new URL('../../bin/posd', import.meta.url));
    for (const [file, args] of [
      [MAIN, ['--version']],
      [bin, ['--version']],
      [process.execPath, [MAIN, '--version']],
    ] as const) {
      expect((await run(file, [...args])).stdout, file).toBe('0.1.0\n');
    }
  });

  it('logged no error on any of them', () => {
    expect(posd.stdout() + posd.stderr()).not.toMatch(/"level":50|ERR_VM_DYNAMIC_IMPORT|Cannot find module/);
  });
});
