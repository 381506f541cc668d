import type { Migration } from '../migrate.js';
import { foundation } from './001-foundation.js';
import { syncOutbox } from './002-sync-outbox.js';
import { money } from './010-money.js';
import { moneyIndexes } from './011-money-indexes.js';
import { bankAccounts } from './015-bank-accounts.js';
import { transfers } from './016-transfers.js';
import { activitiesIndex } from './017-activities-index.js';
import { sync } from './040-sync.js';
import { webhooks } from './030-webhooks.js';
import { terminals } from './020-terminals.js';
import { scheduling } from './050-scheduling.js';
import { storeShipping } from './060-store-shipping.js';
import { coupons } from './061-coupons.js';
import { checkoutCoupons } from './062-checkout-coupons.js';
import { reportRuns } from './063-report-runs.js';
import { connectedAccounts } from './064-connected-accounts.js';
import { subscriptions } from './065-subscriptions.js';
import { contracts } from './066-contracts.js';
import { subscriptionTrials } from './067-subscription-trials.js';
import { subscriptionItems } from './068-subscription-items.js';
import { operations } from './070-operations.js';
import { storeOwned } from './080-store-owned.js';
import { syncFeedOrigin } from './085-sync-feed-origin.js';
import { webhookSequentialKeys } from './090-webhook-sequential-keys.js';
import { webhookDerivedIds } from './096-webhook-derived-ids.js';
import { occupancyByEnd } from './098-occupancy-by-end.js';
import { eventsRedundantIndex } from './099-events-redundant-index.js';
import { webhookOperations } from './100-webhook-operations.js';
import { rowOrigins } from './095-row-origins.js';

/**
 * Every schema change, in order. Versions are grouped by area so that work on different areas does
 * not collide: 1-9 foundation, 10-19 money, 20-29 terminals, 30-39 events and webhooks, 40-49 sync,
 * 50-59 scheduling, 60-69 contracts, coupons, subscriptions and the rest, 70-79 operations,
 * 80-89 sync's second pass (store appliers, the central's feed), 90 and 96 webhook bookkeeping keys,
 * 95 row origins for reconciliation, 98 occupancy by end, 99 a redundant events index. From 96 on,
 * a new migration takes the next number above the highest: the runner applies only versions above
 * the database's, so a lower number added later would be skipped on every database already past it.
 * A released migration is never edited.
 */
export const MIGRATIONS: readonly Migration[] = [
  foundation,
  syncOutbox,
  money,
  moneyIndexes,
  bankAccounts,
  transfers,
  activitiesIndex,
  terminals,
  webhooks,
  sync,
  scheduling,
  storeShipping,
  coupons,
  checkoutCoupons,
  reportRuns,
  connectedAccounts,
  subscriptions,
  contracts,
  subscriptionTrials,
  subscriptionItems,
  operations,
  storeOwned,
  syncFeedOrigin,
  webhookSequentialKeys,
  rowOrigins,
  webhookDerivedIds,
  occupancyByEnd,
  eventsRedundantIndex,
  webhookOperations,
];
