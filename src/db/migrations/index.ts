import type { Migration } from '../migrate.js';

/**
 * Schema changes made after the baseline (`../baseline.sql`, version 100), in order: 101, 102, ...
 * Empty until the first release; from then on the list only grows. A new migration takes the next
 * number above the highest (the runner applies only versions above the database's), and a
 * released migration is never edited. Before the first release, change `baseline.sql` instead.
 */
export const MIGRATIONS: readonly Migration[] = [];
