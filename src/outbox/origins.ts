import type { Db } from '../db/database.js';
import { feedOrigin } from './feed-changes.js';
import { isApplyingFeed } from './sync-records.js';

/** The origin of a row a store wrote from the central's feed. */
export const FEED_ORIGIN = 'central';

/**
 * The `origin` a ledger row or intent written now gets, so that reconciliation compares the same
 * rows on both sides whatever else each side holds: NULL for a row this box made itself; at the
 * central, the store whose pushed record is being applied (`feedOrigin`: the central's own decisions
 * inside an applier, such as a fee adjustment, run with no origin and are the central's); at a
 * store, `FEED_ORIGIN` while a page of the central's feed is applied.
 */
export function rowOrigin(db: Db): string | null {
  return isApplyingFeed(db) ? FEED_ORIGIN : feedOrigin(db);
}
