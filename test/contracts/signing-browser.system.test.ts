import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import { request } from 'undici';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { htmlToText } from '../../src/modules/contracts/index.js';
import { mailText, pdfText, squash, startMailbox, type Mailbox } from './helpers.js';

const CHROMIUM = '/usr/bin/chromium';
let s: TestServer;
let mail: Mailbox;
let browser: Browser;

beforeAll(async () => {
  mail = await startMailbox();
  s = await startTestServer({ config: { contracts: { smtp: { host: '127.0.0.1', port: mail.port } } } });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await s?.stop();
  await mail?.close();
});

async function newContract(email: string) {
  const t = await s.api('POST', '/contract_templates', {
    body: {
      name: 'Contrato de servicio',
      body: '<p>Yo, {nombre}, contrato a {comercio} para {servicio}.</p><p>Pagaré al terminar el servicio.</p>',
      fields: [
        { key: 'dpi', label: 'DPI', kind: 'document', required: true },
        { key: 'fecha', label: 'Fecha de nacimiento', kind: 'date', required: true },
        { key: 'acepto', label: 'Acepto los términos', kind: 'checkbox', required: true },
      ],
    },
  });
  const c = await s.api('POST', '/contracts', {
    body: { template_id: t.body.id, service_name: 'Corte y tinte', customer: { name: 'María José', phone: '+50255552222', email } },
  });
  expect(c.status).toBe(201);
  await mail.next(); // the signing link
  return c.body;
}

const codeIn = (raw: string) => /es (\d{6})\./.exec(mailText(raw))?.[1];

describe('the signing page in headless Chromium', () => {
  it('chromium is installed', () => {
    expect(existsSync(CHROMIUM)).toBe(true);
  });

  it('read, get the code by e-mail, fill, sign; the PDF holds the signed body; body_sha256 matches', async () => {
    const contract = await newContract('maria@example.com');
    const page = await browser.newPage();
    await page.goto(contract.signing_url);
    await expect(page.locator('#contract-body').innerText()).resolves.toContain('Yo, María José, contrato a My store para Corte y tinte.');
    await page.click('#send-email');
    await page.waitForSelector('#notice');
    const message = await mail.next();
    expect(message.to).toEqual(['maria@example.com']);
    const code = codeIn(message.raw)!;
    expect(code).toMatch(/^\d{6}$/);

    // A forged code first: refused, nothing signed.
    await page.fill('#code', code === '000000' ? '111111' : '000000');
    await page.fill('#field-dpi', '1234567890101');
    await page.fill('#field-fecha', '1990-05-17');
    await page.check('#field-acepto');
    await page.click('#sign');
    await expect(page.locator('#error').innerText()).resolves.toContain('El código no es correcto.');
    expect((await s.api('GET', `/contracts/${contract.id}`)).body.status).toBe('viewed');

    await page.fill('#code', code);
    await page.fill('#field-dpi', '1234567890101');
    await page.fill('#field-fecha', '1990-05-17');
    await page.check('#field-acepto');
    await page.click('#sign');
    await page.waitForSelector('#signed');
    const shownSha = await page.locator('#sha').innerText();

    const got = (await s.api('GET', `/contracts/${contract.id}`)).body;
    const { body } = s.daemon.ctx.db.prepare('SELECT body FROM contracts WHERE id = ?').get(contract.id) as { body: string };
    expect(got).toMatchObject({
      status: 'signed',
      verified_channel: 'email',
      field_values: { dpi: '1234567890101', fecha: '1990-05-17', acepto: true },
      pdf_available: true,
    });
    expect(got.body_sha256).toBe(createHash('sha256').update(body, 'utf8').digest('hex'));
    expect(shownSha).toBe(got.body_sha256);

    // The customer downloads the signed PDF from the page; its text is the signed body.
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#pdf')]);
    const stream = await download.createReadStream();
    const chunks: Buffer[] = [];
    for await (const c of stream) chunks.push(c as Buffer);
    const text = squash(pdfText(Buffer.concat(chunks)));
    expect(text).toContain(squash(htmlToText(body)));
    expect(text).toContain(got.body_sha256);

    // Replaying the used code (a form resubmitted from history) is refused.
    const replay = await request(`${contract.signing_url}/complete`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ code, action: 'decline' }).toString(),
    });
    expect(replay.statusCode).toBe(400);
    await replay.body.dump();
    expect((await s.api('GET', `/contracts/${contract.id}`)).body.status).toBe('signed');
    await page.close();
  }, 60_000);

  it('declining with a valid code records the reason', async () => {
    const contract = await newContract('pedro@example.com');
    const page = await browser.newPage();
    await page.goto(contract.signing_url);
    await page.click('#send-email');
    await page.waitForSelector('#notice');
    const code = codeIn((await mail.next()).raw)!;
    await page.fill('#code', code);
    await page.fill('#decline-reason', 'Prefiero otra fecha');
    await page.click('#decline');
    await page.waitForSelector('[data-status="declined"]');
    const got = (await s.api('GET', `/contracts/${contract.id}`)).body;
    expect(got).toMatchObject({ status: 'declined', decline_reason: 'Prefiero otra fecha', verified_channel: 'email', pdf_available: false });
    await page.close();
  }, 60_000);
});
