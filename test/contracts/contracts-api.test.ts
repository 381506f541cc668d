import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { contractsWorker, htmlToText } from '../../src/modules/contracts/index.js';
import { mailText, pdfText, squash, startMailbox, type Mailbox } from './helpers.js';

const clock = new ManualClock(Date.parse('2026-04-01T15:00:00.000Z'));
let s: TestServer;
let mail: Mailbox;
let templateId: string;

const form = async (url: string, fields: Record<string, string>) => {
  const res = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });
  return { status: res.statusCode, text: await res.body.text(), headers: res.headers };
};
const sandboxCode = (html: string) => /id="sandbox-code">[^<]*<strong>(\d{6})</.exec(html)?.[1];

beforeAll(async () => {
  mail = await startMailbox();
  s = await startTestServer({ clock, config: { contracts: { smtp: { host: '127.0.0.1', port: mail.port } } } });
  const t = await s.api('POST', '/contract_templates', {
    body: {
      name: 'Consentimiento de tratamiento',
      body: '<p>Yo, {nombre}, autorizo a {comercio} a realizar {servicio}.</p><p>Acepto los riesgos.</p>',
      signature_valid_for_months: 12,
      fields: [
        { key: 'dpi', label: 'DPI', kind: 'document', required: true },
        { key: 'alergias', label: 'Alergias', kind: 'text', required: false },
        { key: 'acepto', label: 'Acepto', kind: 'checkbox', required: true },
      ],
    },
  });
  expect(t.status, JSON.stringify(t.body)).toBe(201);
  templateId = t.body.id;
});
afterAll(async () => {
  await s.stop();
  await mail.close();
});

describe('contract templates and contracts (spec 2.3, 2.4, 4.8)', () => {
  it('templates: create, get, list', async () => {
    const got = await s.api('GET', `/contract_templates/${templateId}`);
    expect(got.body).toMatchObject({ id: templateId, signature_required_before: 'confirmation', signature_valid_for_months: 12, service_ids: [] });
    expect(got.body.fields).toHaveLength(3);
    expect((await s.api('GET', '/contract_templates')).body).toHaveLength(1);
    expect(
      (await s.api('POST', '/contract_templates', { body: { name: 'x', body: 'y', fields: [{ key: 'Bad Key', label: 'l', kind: 'text', required: true }] } }))
        .status,
    ).toBe(400);
  });

  it('422 service_name_required and invalid customer; nothing is created', async () => {
    const a = await s.api('POST', '/contracts', { body: { template_id: templateId, customer: { name: 'Ana', phone: '+50255550000' } } });
    expect(a.status).toBe(422);
    expect(a.body.code).toBe('service_name_required');
    const b = await s.api('POST', '/contracts', { body: { template_id: templateId, service_name: 'Botox', customer: { name: 'Ana' } } });
    expect(b.status).toBe(422);
    expect(b.body.code).toBe('invalid_customer');
    const c = await s.api('POST', '/contracts', { body: { template_id: templateId, service_name: 'Botox', customer_id: 'cus_nope' } });
    expect(c.body.code).toBe('invalid_customer');
    expect((await s.api('GET', '/contracts')).body).toEqual([]);
  });

  it('sends: contract.send, the link by e-mail; a charge that takes no payment before the signature', async () => {
    const r = await s.api('POST', '/contracts', {
      body: {
        template_id: templateId,
        service_name: 'Botox <3 zonas>',
        customer: { name: 'Ana Pérez', phone: '+50255550000', email: 'ana@example.com' },
        charge_amount_in_cents: 150000,
      },
    });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      status: 'sent',
      title: 'Consentimiento de tratamiento',
      pdf_available: false,
      body_sha256: null,
      customer: { name: 'Ana Pérez', email: 'ana@example.com' },
    });
    expect(r.body.signing_url).toMatch(new RegExp(`^${s.url}/sign/[0-9A-Za-z]{32}$`));
    const ev = s.daemon.ctx.db.prepare("SELECT count(*) AS n FROM events WHERE type = 'contract.send'").get() as any;
    expect(ev.n).toBe(1);
    const link = await mail.next();
    expect(link.to).toEqual(['ana@example.com']);
    expect(mailText(link.raw)).toContain(r.body.signing_url);
    const pay = await s.api('POST', `/test_helpers/checkouts/${r.body.checkout_id}/pay`, { body: { method: 'card', outcome: 'succeeded' } });
    expect(pay.status).toBe(422);
    expect(pay.body.code).toBe('contract_unsigned');
    expect((await s.api('GET', `/contracts/${r.body.id}/pdf`)).status).toBe(409);
  });

  it('sandbox code: forged, superseded and replayed codes refused; signing records sha256 and the PDF', async () => {
    const [contract] = (await s.api('GET', '/contracts')).body;
    const page = await request(contract.signing_url);
    const html = await page.body.text();
    expect(page.headers['content-security-policy']).toContain("default-src 'none'");
    expect(html).toContain('Botox &lt;3 zonas&gt;');
    expect((await s.api('GET', `/contracts/${contract.id}`)).body).toMatchObject({ status: 'viewed', viewed_at: '2026-04-01T15:00:00.000Z' });

    const first = sandboxCode((await form(`${contract.signing_url}/code`, { channel: 'sandbox' })).text)!;
    const second = sandboxCode((await form(`${contract.signing_url}/code`, { channel: 'sandbox' })).text)!;
    expect(first).toMatch(/^\d{6}$/);
    const fields = { field_dpi: '1234567890101', field_acepto: 'on' };
    const superseded = await form(`${contract.signing_url}/complete`, { code: first, action: 'sign', ...fields });
    expect(first === second ? 200 : superseded.status).toBe(first === second ? 200 : 400);
    const forged = await form(`${contract.signing_url}/complete`, {
      code: String((Number(second) + 1) % 1_000_000).padStart(6, '0'),
      action: 'sign',
      ...fields,
    });
    expect(forged.status).toBe(400);
    expect(forged.text).toContain('id="error"');
    const missing = await form(`${contract.signing_url}/complete`, { code: second, action: 'sign', field_dpi: '1234567890101' });
    expect(missing.status).toBe(400);
    expect(missing.text).toContain('Acepto');
    const signed = await form(`${contract.signing_url}/complete`, { code: second, action: 'sign', ...fields, field_alergias: 'Ninguna' });
    expect(signed.status).toBe(200);
    const replay = await form(`${contract.signing_url}/complete`, { code: second, action: 'decline' });
    expect(replay.status).toBe(400);

    const got = (await s.api('GET', `/contracts/${contract.id}`)).body;
    const row = s.daemon.ctx.db.prepare('SELECT body FROM contracts WHERE id = ?').get(contract.id) as { body: string };
    expect(got).toMatchObject({
      status: 'signed',
      verified_channel: 'sandbox',
      signed_at: '2026-04-01T15:00:00.000Z',
      valid_until: '2027-04-01T15:00:00.000Z',
      field_values: { dpi: '1234567890101', alergias: 'Ninguna', acepto: true },
      pdf_available: true,
      body_sha256: createHash('sha256').update(row.body).digest('hex'),
    });
    const pdf = await request(`${s.url}/api/contracts/${contract.id}/pdf`, { headers: { 'x-secret-key': s.installation.keys.test } });
    expect(pdf.statusCode).toBe(200);
    const bytes = Buffer.from(await pdf.body.arrayBuffer());
    expect(bytes.subarray(0, 5).toString()).toBe('%PDF-');
    const text = squash(pdfText(bytes));
    expect(text).toContain(squash(htmlToText(row.body)));
    expect(text).toContain(got.body_sha256);
    // Now the checkout takes its payment.
    const pay = await s.api('POST', `/test_helpers/checkouts/${contract.checkout_id}/pay`, { body: { method: 'card', outcome: 'succeeded' } });
    expect(pay.status).toBe(200);
  });

  it('a reminder 48 hours after sending if unsigned, once; expiry later', async () => {
    const r = await s.api('POST', '/contracts', {
      body: { template_id: templateId, service_name: 'Limpieza', customer: { name: 'Luis', phone: '+50255551111', email: 'luis@example.com' } },
    });
    await mail.next(); // the link
    clock.advance(47 * 3600_000);
    await contractsWorker(s.daemon.ctx).runDue();
    expect((await s.api('GET', `/contracts/${r.body.id}`)).body.reminder_sent_at).toBeNull();
    clock.advance(3600_000);
    await contractsWorker(s.daemon.ctx).runDue();
    await contractsWorker(s.daemon.ctx).runDue();
    const reminder = await mail.next();
    expect(mailText(reminder.raw)).toContain(r.body.signing_url);
    expect(reminder.raw).toMatch(/Subject: .*Recordatorio/);
    const sent = mail.messages.filter((m) => mailText(m.raw).includes(r.body.signing_url));
    expect(sent).toHaveLength(2);
    expect((await s.api('GET', `/contracts/${r.body.id}`)).body.reminder_sent_at).toBe(new Date(clock.now()).toISOString());
    clock.advance(30 * 86_400_000);
    await contractsWorker(s.daemon.ctx).runDue();
    expect((await s.api('GET', `/contracts/${r.body.id}`)).body.status).toBe('expired');
    const late = await form(`${r.body.signing_url}/code`, { channel: 'sandbox' });
    expect(late.status).toBe(400);
  });

  it('unknown links are 404; other environments cannot read a contract', async () => {
    const res = await request(`${s.url}/sign/${'x'.repeat(32)}`);
    expect(res.statusCode).toBe(404);
    await res.body.dump();
    const [c] = (await s.api('GET', '/contracts')).body;
    expect((await s.api('GET', `/contracts/${c.id}`, { key: s.installation.keys.live })).status).toBe(404);
  });
});
