import type { Migration } from '../migrate.js';

/** Nothing looks intents up by checkout: one less B-tree to update on every sale. */
export const moneyIndexes: Migration = {
  version: 11,
  name: 'money-indexes',
  up: `DROP INDEX IF EXISTS intents_checkout;`,
};
