import { createServer } from 'node:http';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { baselineFile } from './data-file.js';

/**
 * The raw limit for POST /api/transfers: node:http and better-sqlite3 (WAL, synchronous=FULL like
 * posd's default, or NORMAL when BASELINE_SYNCHRONOUS says so) doing what a transfer must do at least, in one IMMEDIATE transaction: read both running
 * balances, append the two ledger rows, the transfer, two events and a sync record; answer JSON.
 */
const db = new Database(baselineFile());
db.pragma('journal_mode = WAL');
db.pragma(`synchronous = ${process.env.BASELINE_SYNCHRONOUS === 'NORMAL' ? 'NORMAL' : 'FULL'}`);
db.exec(`
  CREATE TABLE ledger (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE, account_id TEXT, currency TEXT, amount INTEGER, balance_after INTEGER, source_id TEXT, created_at TEXT);
  CREATE INDEX ledger_acc ON ledger(account_id, currency, seq);
  CREATE TABLE transfers (id TEXT PRIMARY KEY, account_id TEXT, recipient TEXT, amount INTEGER, currency TEXT, debit TEXT, credit TEXT, created_at TEXT);
  CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE, account_id TEXT, type TEXT, payload TEXT, created_at TEXT);
  CREATE TABLE sync (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE, payload TEXT, created_at TEXT);
`);
const id = (p: string) => `${p}_${randomBytes(10).toString('hex').slice(0, 16)}`;
const last = db.prepare('SELECT balance_after FROM ledger WHERE account_id = ? AND currency = ? ORDER BY seq DESC LIMIT 1').pluck();
const insLedger = db.prepare('INSERT INTO ledger (id, account_id, currency, amount, balance_after, source_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)');
const insTransfer = db.prepare('INSERT INTO transfers VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
const insEvent = db.prepare('INSERT INTO events (id, account_id, type, payload, created_at) VALUES (?, ?, ?, ?, ?)');
const insSync = db.prepare('INSERT INTO sync (id, payload, created_at) VALUES (?, ?, ?)');
insLedger.run(id('txn'), 'sender', 'GTQ', 1e12, 1e12, 'funding', new Date().toISOString());

const transfer = db.transaction((amount: number, currency: string, recipient: string) => {
  const at = new Date().toISOString();
  const tid = id('tr');
  const before = (last.get('sender', currency) as number | undefined) ?? 0;
  if (before < amount) return null;
  const debit = id('txn');
  const credit = id('txn');
  insLedger.run(debit, 'sender', currency, -amount, before - amount, tid, at);
  insLedger.run(credit, recipient, currency, amount, ((last.get(recipient, currency) as number | undefined) ?? 0) + amount, tid, at);
  insTransfer.run(tid, 'sender', recipient, amount, currency, debit, credit, at);
  const view = { id: tid, amount_in_cents: amount, currency, sender: 'sender', recipient, debit, credit, created_at: at };
  insEvent.run(id('msg'), 'sender', 'transfer.sent', JSON.stringify(view), at);
  insEvent.run(id('msg'), recipient, 'transfer.received', JSON.stringify(view), at);
  insSync.run(id('sync'), JSON.stringify(view), at);
  return view;
});

const server = createServer((req, res) => {
  let body = '';
  req.on('data', (d) => (body += d));
  req.on('end', () => {
    const input = JSON.parse(body) as { amount_in_cents: number; currency: string; recipient_id: string };
    const view = transfer.immediate(input.amount_in_cents, input.currency, input.recipient_id);
    res.writeHead(view ? 201 : 422, { 'content-type': 'application/json' }).end(JSON.stringify(view ?? { code: 'insufficient_funds' }));
  });
});
server.listen(0, '127.0.0.1', () => {
  const addr = server.address();
  process.stdout.write(`port ${typeof addr === 'object' && addr ? addr.port : 0}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
