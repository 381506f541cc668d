import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { reportWorker } from '../../src/modules/reports/index.js';
import { listBalanceTransactions } from '../../src/modules/ledger/service.js';
import { parseCsv, postRows } from './helpers.js';

let s: TestServer;
const clock = new ManualClock(Date.parse('2026-02-01T12:00:00.000Z'));
const sha = (t: string) => createHash('sha256').update(t).digest('hex');

beforeAll(async () => {
  s = await startTestServer({ clock });
  const ctx = s.daemon.ctx;
  const acct = s.installation.sandbox_id;
  postRows(ctx, acct, 3, { description: 'enero' });
  clock.set(Date.parse('2026-02-10T12:00:00.000Z'));
  postRows(ctx, acct, 10, { description: '=HYPERLINK("x"), "quoted"' });
  postRows(ctx, acct, 4, { currency: 'USD' });
  clock.set(Date.parse('2026-03-05T12:00:00.000Z'));
  postRows(ctx, acct, 2, { description: 'marzo' });
});
afterAll(() => s.stop());

describe('report runs (spec 4.11)', () => {
  it('generates the statement in the background; download is 409 until then', async () => {
    const created = await s.api('POST', '/report_runs', { body: { from_time: '2026-02-05', until_time: '2026-02-28' } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      id: expect.stringMatching(/^rr_/),
      report_type: 'balance_transactions',
      status: 'pending',
      result: null,
      parameters: { from_time: '2026-02-05T00:00:00.000Z', until_time: '2026-02-28T23:59:59.999Z', currency: null, type: null },
    });
    const early = await s.api('GET', `/report_runs/${created.body.id}/download`);
    expect(early.status).toBe(409);
    expect(early.body.code).toBe('report_not_ready');

    await reportWorker(s.daemon.ctx).idle();
    const run = await s.api('GET', `/report_runs/${created.body.id}`);
    expect(run.body.status).toBe('succeeded');
    expect(run.body.result).toMatchObject({ content_type: 'text/csv', row_count: 14, url: `${s.url}/api/report_runs/${created.body.id}/download` });

    const dl = await s.api('GET', `/report_runs/${created.body.id}/download`);
    expect(dl.status).toBe(200);
    expect(dl.headers['content-type']).toMatch(/^text\/csv/);
    expect(sha(dl.text)).toBe(run.body.result.sha256);
    expect(Buffer.byteLength(dl.text)).toBe(run.body.result.size_bytes);
    const [header, ...lines] = parseCsv(dl.text);
    expect(header).toEqual([
      'Id',
      'Created',
      'Type',
      'Description',
      'Currency',
      'Amount',
      'Fee',
      'Commission',
      'VAT withheld',
      'Net',
      'Balance',
      'Source id',
      'Source type',
      'Account id',
    ]);
    expect(lines).toHaveLength(14);

    // Every line is the ledger row with that id; Balance is balance_after_in_cents.
    const ledger = listBalanceTransactions(s.daemon.ctx, { accountIds: [s.installation.sandbox_id], liveMode: false }, 100, 0).rows;
    const byId = new Map(ledger.map((t) => [t.id, t]));
    const col = (name: string) => header.indexOf(name);
    for (const l of lines) {
      const t = byId.get(l[col('Id')])!;
      expect(Number(l[col('Balance')])).toBe(t.balance_after_in_cents);
      expect(Number(l[col('Amount')])).toBe(t.amount_in_cents);
      expect(Number(l[col('Fee')])).toBe(t.fee_in_cents);
      expect(Number(l[col('Net')])).toBe(t.net_amount_in_cents);
      expect(Number(l[col('Commission')])).toBe(t.fee_details.commission_in_cents);
      expect(l[col('Currency')]).toBe(t.currency);
      expect(l[col('Created')] >= '2026-02-05' && l[col('Created')] < '2026-03').toBe(true);
    }
    // Oldest first, and a formula-looking description is defused, quotes kept.
    expect(lines[0][col('Created')] <= lines[13][col('Created')]).toBe(true);
    expect(lines[0][col('Description')]).toBe(`'=HYPERLINK("x"), "quoted"`);
    // Consecutive rows of one currency chain their balances.
    const gtq = lines.filter((l) => l[col('Currency')] === 'GTQ');
    for (let i = 1; i < gtq.length; i++) {
      expect(Number(gtq[i][col('Balance')])).toBe(Number(gtq[i - 1][col('Balance')]) + Number(gtq[i][col('Net')]));
    }
  });

  it('filters by currency and type; an empty period still has its header', async () => {
    const usd = await s.api('POST', '/report_runs', { body: { from_time: '2026-01-01T00:00:00Z', until_time: '2026-12-31T00:00:00-06:00', currency: 'USD' } });
    const refunds = await s.api('POST', '/report_runs', { body: { from_time: '2026-01-01', until_time: '2026-12-31', type: 'refund' } });
    const empty = await s.api('POST', '/report_runs', { body: { from_time: '2025-01-01', until_time: '2025-01-31' } });
    await reportWorker(s.daemon.ctx).idle();
    const usdRows = parseCsv((await s.api('GET', `/report_runs/${usd.body.id}/download`)).text).slice(1);
    expect(usdRows).toHaveLength(4);
    expect(new Set(usdRows.map((r) => r[4]))).toEqual(new Set(['USD']));
    const refundRows = parseCsv((await s.api('GET', `/report_runs/${refunds.body.id}/download`)).text).slice(1);
    expect(refundRows.map((r) => r[2])).toEqual(['refund', 'refund']);
    const e = await s.api('GET', `/report_runs/${empty.body.id}/download`);
    expect(e.status).toBe(200);
    expect(e.text.startsWith('Id,Created,Type')).toBe(true);
    expect(parseCsv(e.text)).toHaveLength(1);
  });

  it.each([
    [{ from_time: '2026-01-01' }, 'until_time'],
    [{ from_time: 'yesterday', until_time: '2026-01-01' }, 'from_time'],
    [{ from_time: '2026-02-30T00:00:00', until_time: '2026-03-01' }, 'from_time'],
    [{ from_time: '2026-03-01', until_time: '2026-02-01' }, 'until_time'],
    [{ from_time: '2026-01-01', until_time: '2026-02-01', currency: 'EUR' }, 'currency'],
    [{ from_time: '2026-01-01', until_time: '2026-02-01', report_type: 'payouts' }, 'report_type'],
  ])('400 for %j, creating nothing', async (body, field) => {
    const before = (await s.api('GET', '/report_runs?items=100')).body.length;
    const r = await s.api('POST', '/report_runs', { body });
    expect(r.status).toBe(400);
    expect(r.body.errors[field]).toBeDefined();
    expect((await s.api('GET', '/report_runs?items=100')).body.length).toBe(before);
  });

  it('another account or environment cannot see or download a run', async () => {
    const run = (await s.api('GET', '/report_runs')).body[0];
    expect((await s.api('GET', `/report_runs/${run.id}`, { key: s.installation.keys.live })).status).toBe(404);
    expect((await s.api('GET', `/report_runs/${run.id}/download`, { key: s.installation.keys.live })).status).toBe(404);
    expect((await s.api('GET', '/report_runs/rr_nope/download')).status).toBe(404);
  });
});
