import { afterEach, describe, expect, it } from 'vitest';
import { AccountsService } from '../../src/accounts/service.js';
import { syncStatus } from '../../src/sync/status.js';
import { http, pairStoreAndCentral, until, type TestStore, appliedAtCentral } from './helpers.js';
import { replayAtCentral, tableRows } from './replay.js';

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const synced = (store: TestStore) => appliedAtCentral(store);
const identity = { number: '1234567890101', expires_on: '2030-01-01', file_url: 'https://docs.example/dpi.pdf' };
const goodTax = { nit: '1234567-9', legal_name: 'Salón Bella, S.A.', file_url: 'https://docs.example/rtu.pdf' };
const badTax = { nit: '12345670', legal_name: 'Salón Bella, S.A.', file_url: 'https://docs.example/rtu.pdf' };
const proof = () => ({
  address: '6a avenida 10-20 zona 1',
  issued_on: new Date(Date.now() - 5 * 86_400_000).toISOString().slice(0, 10),
  file_url: 'https://docs.example/luz.pdf',
});

describe('connected accounts made at the store', () => {
  it('exist at the central with both environments’ ids under the platform, with the verification decided at the store; a replay creates nothing twice', async () => {
    const { central, store, acct } = await pairStoreAndCentral(cleanup);
    const made = await http('POST', `${store.url}/api/connected_accounts`, acct.key, {
      email: 'bella@example.com',
      name: 'Salón Bella',
      documents: { identity_document: identity, tax_registration: badTax, proof_of_address: proof() },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expect(made.body.verification.status).toBe('rejected');
    const verified = await http('POST', `${store.url}/api/connected_accounts`, acct.key, {
      email: 'bella@example.com',
      documents: { tax_registration: goodTax },
    });
    expect(verified.body.verification.status).toBe('verified');
    await synced(store);
    expect(syncStatus(store.daemon.ctx.config, store.daemon.ctx.db).rejected_records).toBe(0);

    const childId = made.body.id;
    const atStore = await http('GET', `${store.url}/api/connected_accounts/${childId}`, acct.key);
    const atCentral = await http('GET', `${central.url}/api/connected_accounts/${childId}`, acct.key);
    expect(atCentral.status).toBe(200);
    expect(atCentral.body).toEqual(atStore.body);
    expect(atCentral.body).toMatchObject({ name: 'Salón Bella', tax_id: '12345679', parent_account_id: acct.accountId });
    const verification = await http('GET', `${central.url}/api/connected_accounts/${childId}/verification`, acct.key);
    expect(verification.body).toEqual((await http('GET', `${store.url}/api/connected_accounts/${childId}/verification`, acct.key)).body);
    expect(verification.body).toMatchObject({ status: 'verified', requirements: [], document_errors: {} });
    expect(tableRows(central, 'SELECT email FROM connected_profiles WHERE account_id = ?', childId)).toEqual([{ email: 'bella@example.com' }]);
    const sandboxAt = (box: typeof central | TestStore) => new AccountsService(box.daemon.ctx.db, box.daemon.ctx.clock).sandboxOf(childId);
    expect(sandboxAt(central)).toEqual(sandboxAt(store));
    expect(sandboxAt(central)!.parent_account_id).toBe(acct.sandboxId);
    // No event of the central's own: the store's arrive under their ids.
    const q = "SELECT id FROM events WHERE type IN ('account_connection.create', 'verification.rejected', 'verification.completed') ORDER BY id";
    expect(tableRows(store, q)).toHaveLength(3);
    await until('the store’s events reach the central', () => JSON.stringify(tableRows(central, q)) === JSON.stringify(tableRows(store, q)));

    const tables = ['accounts', 'connected_profiles'];
    const before = tables.map((t) => tableRows(central, `SELECT * FROM ${t} ORDER BY rowid`));
    const replayed = await replayAtCentral(central, store, acct.key, ['connected_account', 'connected_account_verification'], { reverse: true });
    expect(replayed.rejected).toEqual([]);
    expect(tables.map((t) => tableRows(central, `SELECT * FROM ${t} ORDER BY rowid`))).toEqual(before);
  });
});
