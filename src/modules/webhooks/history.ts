import type { Db } from '../../db/database.js';
import { preparedOnUse } from '../../db/statements.js';

/** One audited change of an endpoint (`webhook_endpoint_history`). */
export interface HistoryRow {
  seq: number;
  endpoint_id: string;
  account_id: string;
  field: string;
  old_value: string | null;
  new_value: string | null;
  actor: string | null;
  changed_at: string;
}

/**
 * An endpoint's URL change and its audit row. Kept beside store.ts (which holds the rest of the
 * endpoint's SQL) so a move of the receiver is one place: the row keeps its id, secret, filters and
 * deliveries, and the history says who moved it, from where, to where.
 */
export function endpointHistoryStore(db: Db) {
  const s = preparedOnUse({
    setUrl: () => db.prepare('UPDATE webhook_endpoints SET url = ?, updated_at = ? WHERE id = ?'),
    insert: () =>
      db.prepare('INSERT INTO webhook_endpoint_history (endpoint_id, account_id, field, old_value, new_value, actor, changed_at) VALUES (?, ?, ?, ?, ?, ?, ?)'),
    page: () => db.prepare('SELECT * FROM webhook_endpoint_history WHERE endpoint_id = ? ORDER BY seq DESC LIMIT ? OFFSET ?'),
    count: () => db.prepare('SELECT COUNT(*) FROM webhook_endpoint_history WHERE endpoint_id = ?').pluck(),
  });
  return {
    /** Moves the endpoint to `url` and records the move (inside the caller's transaction). */
    moveUrl(e: { id: string; account_id: string; url: string }, url: string, actor: string | null, at: string): void {
      s.setUrl.run(url, at, e.id);
      s.insert.run(e.id, e.account_id, 'url', e.url, url, actor, at);
    },
    page(endpointId: string, limit: number, offset: number): { rows: HistoryRow[]; total: number } {
      return { rows: s.page.all(endpointId, limit, offset) as HistoryRow[], total: s.count.get(endpointId) as number };
    },
  };
}
