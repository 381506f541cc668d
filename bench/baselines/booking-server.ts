import { createServer } from 'node:http';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { baselineFile } from './data-file.js';

/**
 * The raw limit for POST /api/bookings: plain node:http and better-sqlite3 reading a JSON body, then
 * in one IMMEDIATE transaction checking the staff member's time for an overlap and inserting the
 * booking and its occupancy, with posd's `synchronous` setting (BASELINE_SYNCHRONOUS, FULL by
 * default). No keys, no validation library, no customers, no sync record.
 */
const db = new Database(baselineFile());
db.pragma('journal_mode = WAL');
db.pragma(`synchronous = ${process.env.BASELINE_SYNCHRONOUS ?? 'FULL'}`);
db.exec(`CREATE TABLE bookings (id TEXT PRIMARY KEY, staff TEXT NOT NULL, starts_at TEXT NOT NULL, ends_at TEXT NOT NULL) STRICT;
         CREATE TABLE occupancy (owner TEXT NOT NULL, subject TEXT NOT NULL, starts_at TEXT NOT NULL, ends_at TEXT NOT NULL) STRICT;
         CREATE INDEX occupancy_subject ON occupancy(subject, starts_at);`);
const conflict = db.prepare('SELECT owner FROM occupancy WHERE subject = ? AND starts_at < ? AND ends_at > ? LIMIT 1');
const insert = db.prepare('INSERT INTO bookings VALUES (?, ?, ?, ?)');
const occupy = db.prepare('INSERT INTO occupancy VALUES (?, ?, ?, ?)');
const book = db.transaction((staff: string, startsAt: string, endsAt: string) => {
  if (conflict.get(`staff:${staff}`, endsAt, startsAt)) return null;
  const id = `bk_${randomBytes(8).toString('hex')}`;
  insert.run(id, staff, startsAt, endsAt);
  occupy.run(id, `staff:${staff}`, startsAt, endsAt);
  return id;
});

const server = createServer((req, res) => {
  let text = '';
  req.on('data', (d) => (text += d));
  req.on('end', () => {
    const body = JSON.parse(text) as { starts_at: string; staff_member_id: string };
    const start = Date.parse(body.starts_at);
    const id = book.immediate(body.staff_member_id, new Date(start).toISOString(), new Date(start + 3_600_000).toISOString());
    if (!id) {
      res.writeHead(422, { 'content-type': 'application/json' }).end('{"code":"slot_unavailable"}');
      return;
    }
    res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ id, status: 'confirmed', starts_at: body.starts_at }));
  });
});
server.listen(0, '127.0.0.1', () => {
  const addr = server.address();
  process.stdout.write(`port ${typeof addr === 'object' && addr ? addr.port : 0}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
