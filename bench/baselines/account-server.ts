import { createServer } from 'node:http';
import { createHash } from 'node:crypto';
import Database from 'better-sqlite3';
import { baselineFile } from './data-file.js';

/**
 * The raw limit for GET /api/account: plain node:http and better-sqlite3 doing what posd must do
 * at least (hash the key, look it up, read the account, answer JSON), and nothing else.
 */
const db = new Database(baselineFile());
db.pragma('journal_mode = WAL');
db.exec(`CREATE TABLE keys (hash TEXT PRIMARY KEY, account_id TEXT NOT NULL);
         CREATE TABLE accounts (id TEXT PRIMARY KEY, name TEXT, country TEXT, default_currency TEXT, created_at TEXT);`);
const key = process.env.BASELINE_KEY ?? 'sk_test_baselinebaselinebaselinebase';
db.prepare('INSERT INTO accounts VALUES (?, ?, ?, ?, ?)').run('sbx_baseline', 'My store', 'GT', 'GTQ', new Date().toISOString());
db.prepare('INSERT INTO keys VALUES (?, ?)').run(createHash('sha256').update(key).digest('hex'), 'sbx_baseline');
const byHash = db.prepare('SELECT account_id FROM keys WHERE hash = ?');
const account = db.prepare('SELECT * FROM accounts WHERE id = ?');

const server = createServer((req, res) => {
  const k = req.headers['x-secret-key'];
  const row = typeof k === 'string' ? (byHash.get(createHash('sha256').update(k).digest('hex')) as { account_id: string } | undefined) : undefined;
  if (!row) {
    res.writeHead(401, { 'content-type': 'application/json' }).end('{"message":"unauthorized"}');
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(account.get(row.account_id)));
});
server.listen(0, '127.0.0.1', () => {
  const addr = server.address();
  process.stdout.write(`port ${typeof addr === 'object' && addr ? addr.port : 0}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
