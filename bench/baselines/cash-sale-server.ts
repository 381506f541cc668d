import { createServer } from 'node:http';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { baselineFile } from './data-file.js';

/**
 * The raw limit for POST /api/cash_sales: plain node:http and better-sqlite3 reading a JSON body and
 * committing one row per request in its own transaction, with posd's `synchronous` setting
 * (BASELINE_SYNCHRONOUS, FULL by default). No keys, no validation library, no events.
 */
const db = new Database(baselineFile());
db.pragma('journal_mode = WAL');
db.pragma(`synchronous = ${process.env.BASELINE_SYNCHRONOUS ?? 'FULL'}`);
db.exec('CREATE TABLE sales (id TEXT PRIMARY KEY, amount_in_cents INTEGER NOT NULL, currency TEXT NOT NULL, created_at TEXT NOT NULL) STRICT');
const insert = db.prepare('INSERT INTO sales VALUES (?, ?, ?, ?)');
const record = db.transaction((id: string, amount: number, currency: string, at: string) => insert.run(id, amount, currency, at));

const server = createServer((req, res) => {
  let text = '';
  req.on('data', (d) => (text += d));
  req.on('end', () => {
    const body = JSON.parse(text) as { amount_in_cents: number; currency?: string };
    const id = `in_${randomBytes(10).toString('hex')}`;
    const at = new Date().toISOString();
    record(id, body.amount_in_cents, body.currency ?? 'GTQ', at);
    res
      .writeHead(201, { 'content-type': 'application/json' })
      .end(JSON.stringify({ id, amount_in_cents: body.amount_in_cents, currency: body.currency ?? 'GTQ', created_at: at }));
  });
});
server.listen(0, '127.0.0.1', () => {
  const addr = server.address();
  process.stdout.write(`port ${typeof addr === 'object' && addr ? addr.port : 0}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
