import type { Db } from '../../db/database.js';
import { perDb } from '../../db/per-db.js';

export interface FeedRow {
  id: string;
  account_id: string;
  live_mode: number;
  resource_id: string;
  label: string;
  url: string;
  last_synced_at: string | null;
  last_error: string | null;
  next_sync_at: string;
  created_at: string;
}

export interface BlockInput {
  startOn: string;
  endOn: string;
  uid: string | null;
  summary: string | null;
}

/** All SQL of calendar feeds and the nights they block. */
export function feedsStore(db: Db) {
  const s = {
    insert: db.prepare(
      `INSERT INTO sched_ical_feeds (id, account_id, live_mode, resource_id, label, url, last_synced_at, last_error, next_sync_at, created_at)
       VALUES (@id, @account_id, @live_mode, @resource_id, @label, @url, @last_synced_at, @last_error, @next_sync_at, @created_at)`,
    ),
    get: db.prepare('SELECT * FROM sched_ical_feeds WHERE id = ?'),
    ofResource: db.prepare('SELECT * FROM sched_ical_feeds WHERE resource_id = ? ORDER BY created_at, id'),
    due: db.prepare('SELECT * FROM sched_ical_feeds WHERE next_sync_at <= ? ORDER BY next_sync_at LIMIT ?'),
    succeeded: db.prepare('UPDATE sched_ical_feeds SET last_synced_at = ?, last_error = NULL, next_sync_at = ? WHERE id = ?'),
    failed: db.prepare('UPDATE sched_ical_feeds SET last_error = ?, next_sync_at = ? WHERE id = ?'),
    clearBlocks: db.prepare('DELETE FROM sched_feed_blocks WHERE feed_id = ?'),
    insertBlock: db.prepare('INSERT INTO sched_feed_blocks (feed_id, resource_id, start_on, end_on, uid, summary) VALUES (?, ?, ?, ?, ?, ?)'),
    overlap: db.prepare('SELECT feed_id FROM sched_feed_blocks WHERE resource_id = ? AND start_on < ? AND end_on > ? LIMIT 1'),
    blocksOf: db.prepare('SELECT start_on, end_on, uid, summary FROM sched_feed_blocks WHERE feed_id = ? ORDER BY start_on'),
  };
  return {
    insert: (row: FeedRow) => s.insert.run(row),
    get: (id: string) => s.get.get(id) as FeedRow | undefined,
    ofResource: (resourceId: string) => s.ofResource.all(resourceId) as FeedRow[],
    due: (now: string, limit: number) => s.due.all(now, limit) as FeedRow[],
    succeeded: (id: string, at: string, next: string) => s.succeeded.run(at, next, id),
    failed: (id: string, error: string, next: string) => s.failed.run(error, next, id),
    replaceBlocks(feed: FeedRow, blocks: BlockInput[]): void {
      s.clearBlocks.run(feed.id);
      for (const b of blocks) s.insertBlock.run(feed.id, feed.resource_id, b.startOn, b.endOn, b.uid, b.summary);
    },
    /** Whether any feed blocks a night of [fromOn, toOn) on the unit. */
    overlaps: (resourceId: string, fromOn: string, toOn: string) => s.overlap.get(resourceId, toOn, fromOn) !== undefined,
    blocksOf: (feedId: string) => s.blocksOf.all(feedId) as Array<{ start_on: string; end_on: string; uid: string | null; summary: string | null }>,
  };
}
export type FeedsStore = ReturnType<typeof feedsStore>;

export const feedsStoreOf = perDb(feedsStore);
