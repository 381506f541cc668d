import type { Db } from '../../db/database.js';
import type { FeedRow } from '../central/sync-store.js';

/** Where the relay reads the core's feed rows from: rows after a seq, in seq order. */
export type CoreFeedSource = (afterSeq: number, limit: number) => FeedRow[];

/**
 * The core's SQLite `sync_feed` read by seq, for the relay (src/sync/pg/feed.ts). The core has one
 * writer, so seq order is commit order: a row below a seq read is never committed later.
 * (This one statement lives here while step 4 reshapes src/sync/central/sync-store.ts; it moves there after.)
 */
export function coreFeedSource(db: Db): CoreFeedSource {
  const stmt = db.prepare('SELECT * FROM sync_feed WHERE seq > ? ORDER BY seq LIMIT ?');
  return (afterSeq, limit) => stmt.all(afterSeq, limit) as FeedRow[];
}
