/**
 * The sync tables on PostgreSQL (issue 19 step 5; docs/central.md, "Sync tables on PostgreSQL"):
 * schema and migration, the push receipt, the feed relay and long-poll doorbell, and the
 * projector's source and lease, and what the core reads and writes there (core.ts; the core's loop
 * itself is src/sync/central/pg-core.ts). Nothing here touches the domain: that stays in the core's SQLite.
 */
export { migrate, SCHEMA, SYNC_TABLES } from './schema.js';
export { createClient, createPool, inTransaction } from './pool.js';
export { receivePush, dayOf, type Receipt, type ReceiptScope } from './receipt.js';
export { ChannelListener } from './listen.js';
export { FeedRelay, FeedWaiter, feedAfter, pollFeed, notifyPayloads, FEED_CHANNEL, type FeedScope } from './feed.js';
export { coreFeedSource, type CoreFeedSource } from './core-feed.js';
export { readReceived, markApplied, storesBehind, ProjectorLease, PROJECTOR_LOCK, type OutcomeOf, type ReceivedRecordRow } from './projector.js';
export { publishAccounts, publishKeys, publishOrganizations, keyByHash, scopeOf, type SyncAccountRow } from './read-models.js';
export {
  RECEIVED_CHANNEL,
  allStores,
  behindStores,
  storeOf,
  undecidedSeqs,
  projectorLag,
  feedMaxPosition,
  relayGuard,
  publishDayTotals,
  type PgStoreRow,
} from './core.js';
export { frontRoutes, frontNotFound, databaseUnavailable, type FrontDeps } from './front-routes.js';
export { authenticateFront, storeKeyOf, type FrontCaller } from './front-auth.js';
