import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { AccountsService } from '../../src/accounts/service.js';

let s: TestServer;
// Monday 2026-06-01 09:00 in Guatemala.
const clock = new ManualClock(Date.parse('2026-06-01T15:00:00.000Z'));
const HOUR = 3600_000;

const identity = { number: '1234567890101', expires_on: '2030-01-01', file_url: 'https://docs.example/dpi.pdf' };
const goodTax = { nit: '1234567-9', legal_name: 'Salón Bella, S.A.', file_url: 'https://docs.example/rtu.pdf' };
const badTax = { nit: '12345670', legal_name: 'Salón Bella, S.A.', file_url: 'https://docs.example/rtu.pdf' };
const proof = { address: '6a avenida 10-20 zona 1', issued_on: '2026-05-20', file_url: 'https://docs.example/luz.pdf' };

function events(type: string): Array<{ account_id: string; payload: any }> {
  return (s.daemon.ctx.db.prepare('SELECT account_id, payload FROM events WHERE type = ? ORDER BY seq').all(type) as any[]).map((e) => ({
    account_id: e.account_id,
    payload: JSON.parse(e.payload),
  }));
}

beforeAll(async () => {
  s = await startTestServer({ clock });
});
afterAll(() => s.stop());

describe('POST /connected_accounts (spec 4.11)', () => {
  let childId: string;

  it('connects a new child and tells the platform once', async () => {
    const r = await s.api('POST', '/connected_accounts', { body: { email: 'Bella@Example.com', name: 'Salón Bella' } });
    expect(r.status).toBe(201);
    childId = r.body.id;
    expect(r.body).toMatchObject({
      name: 'Salón Bella',
      email: 'bella@example.com',
      live_mode: false,
      parent_account_id: s.installation.sandbox_id,
      verification: { status: 'unverified', requirements: ['identity_document', 'tax_registration', 'proof_of_address'], document_errors: {} },
    });
    const ev = events('account_connection.create');
    expect(ev).toHaveLength(1);
    expect(ev[0].account_id).toBe(s.installation.sandbox_id);
    expect(ev[0].payload).toMatchObject({ account_id: childId, connected: true, account: { id: childId } });
    const list = await s.api('GET', '/connected_accounts');
    expect(list.body.map((a: any) => a.id)).toEqual([childId]);
    // The live platform has its own child, whose platform heard nothing from a sandbox call.
    const live = await s.api('GET', '/connected_accounts', { key: s.installation.keys.live });
    expect(live.body).toHaveLength(1);
  });

  it('partial documents: incomplete, no event', async () => {
    const r = await s.api('POST', '/connected_accounts', { body: { email: 'bella@example.com', documents: { identity_document: identity } } });
    expect(r.status).toBe(200);
    expect(r.body.id).toBe(childId);
    expect(r.body.verification).toMatchObject({ status: 'incomplete', requirements: ['tax_registration', 'proof_of_address'] });
    expect(events('verification.rejected')).toHaveLength(0);
    expect(events('verification.completed')).toHaveLength(0);
  });

  it('a rejected resubmission emits verification.rejected with document_errors, once', async () => {
    const r = await s.api('POST', '/connected_accounts', {
      body: { email: 'bella@example.com', documents: { tax_registration: badTax, proof_of_address: proof } },
    });
    expect(r.body.verification).toMatchObject({
      status: 'rejected',
      document_errors: { tax_registration: ['nit has a wrong check digit'] },
      documents: { identity_document: { status: 'accepted' }, tax_registration: { status: 'rejected' }, proof_of_address: { status: 'accepted' } },
    });
    const again = await s.api('POST', '/connected_accounts', { body: { email: 'bella@example.com', documents: { tax_registration: badTax } } });
    expect(again.body.verification.status).toBe('rejected');
    const ev = events('verification.rejected');
    expect(ev).toHaveLength(1);
    expect(ev[0].account_id).toBe(s.installation.sandbox_id);
    expect(ev[0].payload).toMatchObject({ account_id: childId, connected: true, document_errors: { tax_registration: ['nit has a wrong check digit'] } });
  });

  it('no documents leaves verification untouched', async () => {
    const before = (await s.api('GET', `/connected_accounts/${childId}/verification`)).body;
    clock.advance(HOUR);
    const r = await s.api('POST', '/connected_accounts', { body: { email: 'bella@example.com' } });
    expect(r.status).toBe(200);
    expect(r.body.verification).toEqual(before);
    const empty = await s.api('POST', '/connected_accounts', { body: { email: 'bella@example.com', documents: {} } });
    expect(empty.body.verification).toEqual(before);
  });

  it('acceptance emits verification.completed once, keeps omitted documents, and sets the tax fields', async () => {
    const before = (await s.api('GET', `/connected_accounts/${childId}/verification`)).body;
    const r = await s.api('POST', '/connected_accounts', { body: { email: 'bella@example.com', documents: { tax_registration: goodTax } } });
    expect(r.body.verification).toMatchObject({ status: 'verified', document_errors: {}, requirements: [] });
    // Identity and proof were not sent again: kept as they were.
    expect(r.body.verification.documents.identity_document).toEqual(before.documents.identity_document);
    expect(r.body.verification.documents.proof_of_address).toEqual(before.documents.proof_of_address);
    expect(events('verification.completed')).toHaveLength(1);
    expect(events('verification.completed')[0].payload).toMatchObject({ account_id: childId, connected: true, status: 'verified' });
    const account = await s.api('GET', '/account', { headers: { 'x-account-id': childId } });
    expect(account.body).toMatchObject({ tax_id: '12345679', tax_name: 'Salón Bella, S.A.' });
    // Saved again without a state change: no new event.
    await s.api('POST', '/connected_accounts', { body: { email: 'bella@example.com', documents: { proof_of_address: proof } } });
    expect(events('verification.completed')).toHaveLength(1);
  });

  it('bad input is 400 and creates nothing', async () => {
    const before = (await s.api('GET', '/connected_accounts')).body.length;
    for (const body of [{}, { email: 'not-an-email' }, { email: 'x@y.com', documents: { identity_document: { number: 1 } } }]) {
      const r = await s.api('POST', '/connected_accounts', { body });
      expect(r.status).toBe(400);
    }
    expect((await s.api('GET', '/connected_accounts')).body.length).toBe(before);
  });

  it('the tax invoicing state is public only; enabling emits tax_invoice_settings.enabled once', async () => {
    const off = await s.api('GET', `/connected_accounts/${childId}/tax_invoicing`);
    expect(off.body).toMatchObject({ enabled: false, status: 'inactive', provider: null });
    const body = { provider: 'infile', establishment_code: '1', username: 'bella-user', api_key: 'SECRET-KEY-123' };
    const on = await s.api('PUT', `/connected_accounts/${childId}/tax_invoicing`, { body });
    expect(on.body).toMatchObject({ enabled: true, status: 'active', provider: 'infile', establishment_code: '1', tax_id: '12345679' });
    await s.api('PUT', `/connected_accounts/${childId}/tax_invoicing`, { body: { ...body, api_key: 'OTHER' } });
    const ev = events('tax_invoice_settings.enabled');
    expect(ev).toHaveLength(1);
    expect(ev[0].payload).toMatchObject({ account_id: childId, connected: true, tax_invoicing: { status: 'active' } });
    const got = await s.api('GET', `/connected_accounts/${childId}/tax_invoicing`);
    for (const text of [got.text, on.text, JSON.stringify(ev)]) {
      expect(text).not.toContain('SECRET-KEY-123');
      expect(text).not.toContain('bella-user');
    }
  });

  it('unknown, foreign or other-environment children are 404', async () => {
    const accounts = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
    const grandchild = accounts.createAccount({ name: 'Nieto', parentId: accounts.account(childId)!.sandbox_of ?? undefined });
    for (const id of ['ac_nope', grandchild.sandbox.id, s.installation.sandbox_id]) {
      expect((await s.api('GET', `/connected_accounts/${id}/commission_invoicing`)).status).toBe(404);
      expect((await s.api('GET', `/connected_accounts/${id}/tax_invoicing`)).status).toBe(404);
    }
    expect((await s.api('GET', `/connected_accounts/${childId}/commission_invoicing`, { key: s.installation.keys.live })).status).toBe(404);
  });
});
