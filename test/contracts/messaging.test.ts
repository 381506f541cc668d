import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
let gateway: Server;
let gatewayStatus = 200;
const received: Array<{ auth: string | undefined; body: { to: string; text: string } }> = [];
const waiting: Array<() => void> = [];
const nextMessage = async (n: number) => {
  while (received.length < n) await new Promise<void>((r) => waiting.push(r));
  return received[n - 1];
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
  // A real HTTP messaging gateway on port 0.
  gateway = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (gatewayStatus === 200) {
        received.push({ auth: req.headers.authorization, body: JSON.parse(body) });
        for (const w of waiting.splice(0)) w();
      }
      res.writeHead(gatewayStatus).end();
    });
  });
  await new Promise<void>((r) => gateway.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}/send`;
  s = await startTestServer({ config: { contracts: { messaging: { url, api_key: 'gw-key' } } } });
});
afterAll(async () => {
  await s.stop();
  gateway.close();
});

describe('contracts over the messaging gateway', () => {
  it('sends the link and the code by messaging; the code signs', async () => {
    const t = await s.api('POST', '/contract_templates', { body: { name: 'Reglamento', body: '<p>{nombre} acepta el reglamento de {comercio}.</p>' } });
    const c = await s.api('POST', '/contracts', { body: { template_id: t.body.id, customer: { name: 'Rosa', phone: '+50255553333' } } });
    expect(c.status).toBe(201);
    expect(c.body.sent_via).toBe('messaging');
    const link = await nextMessage(1);
    expect(link).toMatchObject({ auth: 'Bearer gw-key', body: { to: '+50255553333' } });
    expect(link.body.text).toContain(c.body.signing_url);

    await (await request(c.body.signing_url)).body.dump();
    const sent = await form(`${c.body.signing_url}/code`, { channel: 'messaging' });
    expect(sent.status).toBe(200);
    const code = /es (\d{6})\./.exec((await nextMessage(2)).body.text)![1];
    const signed = await form(`${c.body.signing_url}/complete`, { code, action: 'sign' });
    expect(signed.status).toBe(200);
    expect((await s.api('GET', `/contracts/${c.body.id}`)).body).toMatchObject({ status: 'signed', verified_channel: 'messaging' });
  });

  it('a gateway that fails: the page says so; e-mail is not offered without SMTP', async () => {
    const t = await s.api('POST', '/contract_templates', { body: { name: 'Otro', body: '<p>{nombre}</p>' } });
    const c = await s.api('POST', '/contracts', {
      body: { template_id: t.body.id, customer: { name: 'Juan', phone: '+50255554444', email: 'juan@example.com' } },
    });
    await nextMessage(3);
    const page = await (await request(c.body.signing_url)).body.text();
    expect(page).toContain('id="send-messaging"');
    expect(page).toContain('id="send-sandbox"');
    expect(page).not.toContain('id="send-email"');
    gatewayStatus = 503;
    const r = await form(`${c.body.signing_url}/code`, { channel: 'messaging' });
    expect(r.status).toBe(400);
    expect(r.text).toContain('id="error"');
    gatewayStatus = 200;
    expect((await form(`${c.body.signing_url}/code`, { channel: 'email' })).status).toBe(400);
  });
});
