import type { Migration } from '../migrate.js';

/**
 * The overlap check reads a subject's occupancy by where it ENDS (docs/scheduling.md, "Measured").
 * Keyed by (subject, starts_at), `starts_at < :to AND ends_at > :from` walked every row of the
 * subject that starts before the new slot: all of a stylist's past, growing with every booking
 * kept (completed ones keep their time). Keyed by (subject, ends_at), it walks only the rows that
 * end after the new slot starts: the subject's future from that point, which a calendar bounds.
 * `starts_at` and `owner_id` are in the key so the walk never reads the table. The old index served
 * nothing else (the nights of a unit read `ends_at > ?` too) and is dropped: one b-tree less per row.
 */
export const occupancyByEnd: Migration = {
  version: 98,
  name: 'occupancy-by-end',
  up: `
    CREATE INDEX sched_occupancy_subject_end ON sched_occupancy(subject, ends_at, starts_at, owner_id);
    DROP INDEX sched_occupancy_subject;
  `,
};
