import type { Migration } from '../migrate.js';

/** Spec 6.4 price fields `free_trial_interval(_count)`; a subscription started in a trial keeps when it ends. */
export const subscriptionTrials: Migration = {
  version: 67,
  name: 'subscription-trials',
  up: `
    ALTER TABLE prices ADD COLUMN free_trial_interval TEXT CHECK (free_trial_interval IN ('day', 'week', 'month', 'year'));
    ALTER TABLE prices ADD COLUMN free_trial_interval_count INTEGER;
    -- Set while the subscription is in its free trial (no charge made yet); cleared by the first successful charge.
    ALTER TABLE subscriptions ADD COLUMN trial_end TEXT;
    ALTER TABLE subscriptions ADD COLUMN setup_intent_id TEXT;
  `,
};
