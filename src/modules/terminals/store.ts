import type { Db } from '../../db/database.js';
import { perDb } from '../../db/per-db.js';
import { preparedOnUse } from '../../db/statements.js';

export interface TerminalRow {
  id: string;
  account_id: string;
  live_mode: number;
  name: string;
  transport: 'websocket' | 'serial' | 'nexo';
  serial_path: string | null;
  baud_rate: number | null;
  nexo_address: string | null;
  nexo_port: number | null;
  nexo_poiid: string | null;
  nexo_key_identifier: string | null;
  nexo_key_version: number | null;
  nexo_passphrase_sealed: string | null;
  token_hash: string;
  availability: 'available' | 'unavailable';
  last_seen_at: string | null;
  model: string | null;
  firmware: string | null;
  created_at: string;
  retired_at: string | null;
}

/** Every SQL statement of the terminal registry, prepared once per database. */
export const terminalsStore = perDb(makeStore);

function makeStore(db: Db) {
  const insert = db.prepare(
    `INSERT INTO terminals (id, account_id, live_mode, name, transport, serial_path, baud_rate, nexo_address, nexo_port, nexo_poiid,
       nexo_key_identifier, nexo_key_version, nexo_passphrase_sealed, token_hash, availability, created_at)
     VALUES (@id, @account_id, @live_mode, @name, @transport, @serial_path, @baud_rate, @nexo_address, @nexo_port, @nexo_poiid,
       @nexo_key_identifier, @nexo_key_version, @nexo_passphrase_sealed, @token_hash, 'unavailable', @created_at)`,
  );
  const byId = db.prepare('SELECT * FROM terminals WHERE id = ?');
  const list = db.prepare(
    `SELECT * FROM terminals WHERE account_id IN (SELECT value FROM json_each(?)) AND live_mode = ? AND retired_at IS NULL
     ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`,
  );
  const count = db.prepare(`SELECT COUNT(*) AS n FROM terminals WHERE account_id IN (SELECT value FROM json_each(?)) AND live_mode = ? AND retired_at IS NULL`);
  const serial = db.prepare(`SELECT * FROM terminals WHERE transport = 'serial' AND retired_at IS NULL ORDER BY created_at`);
  // Read at start and then every few seconds by the nexo keeper; prepared at first use, so a start pays nothing.
  const lazy = preparedOnUse({
    nexo: () => db.prepare(`SELECT * FROM terminals WHERE transport = 'nexo' AND retired_at IS NULL ORDER BY created_at`),
    nexoCount: () => db.prepare(`SELECT COUNT(*) AS n FROM terminals WHERE transport = 'nexo' AND retired_at IS NULL`),
  });
  const retire = db.prepare(`UPDATE terminals SET retired_at = ?, availability = 'unavailable' WHERE id = ? AND retired_at IS NULL`);
  const hello = db.prepare(`UPDATE terminals SET model = ?, firmware = ?, availability = 'available', last_seen_at = ? WHERE id = ?`);
  const seen = db.prepare('UPDATE terminals SET last_seen_at = ? WHERE id = ?');
  const availability = db.prepare('UPDATE terminals SET availability = ?, last_seen_at = COALESCE(?, last_seen_at) WHERE id = ?');
  const allUnavailable = db.prepare(`UPDATE terminals SET availability = 'unavailable' WHERE availability = 'available'`);
  return {
    insert: (row: Omit<TerminalRow, 'availability' | 'last_seen_at' | 'model' | 'firmware' | 'retired_at'>) => insert.run(row),
    nexoTerminals: () => lazy.nexo.all() as TerminalRow[],
    nexoCount: () => (lazy.nexoCount.get() as { n: number }).n,
    byId: (id: string) => byId.get(id) as TerminalRow | undefined,
    list: (accountIds: string[], liveMode: boolean, limit: number, offset: number) =>
      list.all(JSON.stringify(accountIds), liveMode ? 1 : 0, limit, offset) as TerminalRow[],
    count: (accountIds: string[], liveMode: boolean) => (count.get(JSON.stringify(accountIds), liveMode ? 1 : 0) as { n: number }).n,
    serialTerminals: () => serial.all() as TerminalRow[],
    retire: (id: string, at: string) => retire.run(at, id).changes > 0,
    hello: (id: string, model: string, firmware: string, at: string) => hello.run(model, firmware, at, id),
    seen: (id: string, at: string) => seen.run(at, id),
    setAvailability: (id: string, value: 'available' | 'unavailable', lastSeenAt: string | null) => availability.run(value, lastSeenAt, id),
    allUnavailable: () => allUnavailable.run(),
  };
}
