import { createServer } from 'node:http';
import { createHash } from 'node:crypto';
import Database from 'better-sqlite3';
import { baselineFile } from './data-file.js';

/**
 * The raw limit for POST /api/store_shipping: node:http and better-sqlite3 doing the least a quote
 * needs (hash the key, find the account, read its catalogue, parse the body, pick the options priced
 * in the currency, apply a regional rate found in a map and the free threshold, answer JSON).
 */
const db = new Database(baselineFile());
db.pragma('journal_mode = WAL');
db.exec(`CREATE TABLE keys (hash TEXT PRIMARY KEY, account_id TEXT NOT NULL);
         CREATE TABLE shipping (account_id TEXT PRIMARY KEY, catalogue TEXT NOT NULL);`);
const key = process.env.BASELINE_KEY ?? 'sk_test_baselinebaselinebaselinebase';
db.prepare('INSERT INTO keys VALUES (?, ?)').run(createHash('sha256').update(key).digest('hex'), 'sbx_baseline');
db.prepare('INSERT INTO shipping VALUES (?, ?)').run('sbx_baseline', process.env.BASELINE_CATALOGUE ?? '[]');
const byHash = db.prepare('SELECT account_id FROM keys WHERE hash = ?');
const catalogue = db.prepare('SELECT catalogue FROM shipping WHERE account_id = ?');
const regions = new Map([
  ['sacatepequez', 'GT-03'],
  ['gt03', 'GT-03'],
  ['guatemala', 'GT-01'],
]);

const server = createServer((req, res) => {
  const k = req.headers['x-secret-key'];
  const row = typeof k === 'string' ? (byHash.get(createHash('sha256').update(k).digest('hex')) as { account_id: string } | undefined) : undefined;
  if (!row) {
    res.writeHead(401).end();
    return;
  }
  let text = '';
  req.on('data', (c) => (text += c));
  req.on('end', () => {
    const q = JSON.parse(text);
    const region = regions.get(
      String(q.region)
        .normalize('NFD')
        .replace(/\p{M}/gu, '')
        .toLowerCase()
        .replace(/[^a-z0-9]/g, ''),
    );
    const dest = (JSON.parse((catalogue.get(row.account_id) as { catalogue: string }).catalogue) as any[]).find((d) => d.code === q.country);
    const options = (dest?.options ?? [])
      .filter((o: any) => o.currency === q.currency)
      .map((o: any) => {
        const regional = o.region_amounts?.find((r: any) => r.regions.includes(region));
        const amount =
          o.free_from_amount_in_cents !== null && q.subtotal_in_cents >= o.free_from_amount_in_cents ? 0 : (regional?.amount_in_cents ?? o.amount_in_cents);
        return { id: o.id, name: o.name, kind: o.kind, amount_in_cents: amount, currency: o.currency };
      });
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ options }));
  });
});
server.listen(0, '127.0.0.1', () => {
  const addr = server.address();
  process.stdout.write(`port ${typeof addr === 'object' && addr ? addr.port : 0}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
