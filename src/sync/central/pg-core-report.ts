import { logHeld } from '../../db/log-hold.js';
import type pg from 'pg';
import type { AppContext } from '../../context.js';
import { centralSide, type StoreRow } from './sync-store.js';
import { coreStore, type DecidedRow } from './core-store.js';
import { outcomesOf, publishTotals } from './pg-core-publish.js';
import { dayOf, markApplied, storeOf, undecidedSeqs, type PgStoreRow } from '../pg/index.js';

/** Records whose outcomes go to PostgreSQL per `markApplied`. */
export const REPORT_BATCH = 2000;
/**
 * A store still catching up reports its outcomes and day totals at most this often: PostgreSQL's
 * applied figure trails the core's by about this plus one report's round trips.
 */
export const REPORT_EVERY_MS = 250;

type Reported = Pick<PgStoreRow, 'applied_seq' | 'held_count' | 'rejected_count' | 'parked_count' | 'skipped_count'> & Partial<Pick<PgStoreRow, 'zone'>>;

/**
 * The reporting half of the PostgreSQL core (src/sync/central/pg-core.ts): what the projector
 * decided in the core's SQLite goes back to PostgreSQL, store by store, so the fronts, the stores'
 * reconciliation and the lag metric read it there.
 */
export class CoreReporter {
  /** PostgreSQL's figures per store as last reported (or read). */
  readonly reported = new Map<string, Reported>();
  /** SQLite stores PostgreSQL does not know (pushed to this core directly), not asked again until a full look. */
  readonly unknown = new Set<string>();
  private readonly lastReport = new Map<string, number>();
  /** The SQLite counters a store's held/parked/skipped outcomes were last aligned for. */
  private readonly alignedFor = new Map<string, string>();

  constructor(
    private readonly ctx: AppContext,
    private readonly pool: pg.Pool,
    private readonly state: { pgReceived: Map<string, number>; reported: number },
    private readonly isActive: () => boolean,
  ) {}

  private wanted = false;
  private running: Promise<void> | undefined;

  /**
   * Asks for a report, run on its own chain beside the ingest: a report waiting behind the
   * ingest's round trips left PostgreSQL's applied figure seconds behind the core's
   * (docs/decisions/0232-apply-on-the-core-measured.md). One report at a time; asked during one, it
   * runs again after it. A failed report waits for the next ask (a slice, or the core's tick).
   */
  ask(): void {
    this.wanted = true;
    if (this.running || !this.isActive()) return;
    this.running = (async () => {
      while (this.wanted && this.isActive()) {
        this.wanted = false;
        try {
          await this.report();
        } catch (err) {
          if (this.isActive()) this.ctx.log.error({ err }, 'sync: the core could not report to PostgreSQL; the next slice or tick tries again');
          this.wanted = false;
          return;
        }
      }
    })().finally(() => {
      this.running = undefined;
      // Asked between the loop's last look and here: that ask found this chain still running.
      if (this.wanted && this.isActive()) this.ask();
    });
  }

  /** Resolves once the report in flight (if any) ended. */
  async settled(): Promise<void> {
    await this.running;
  }

  /** A new leadership starts from what PostgreSQL says. */
  reset(): void {
    this.reported.clear();
    this.alignedFor.clear();
  }

  /**
   * Reports what the projector decided since the last report, store by store: the day totals of the
   * days its records fall on, then the outcomes and `applied_seq` (`markApplied`). A store still
   * catching up reports at most once per tick; one caught up at once. Outcomes an operator changed
   * later (retry, skip; a held record applied after an upgrade) show as SQLite counters that differ
   * from PostgreSQL's: then that store's held, parked and skipped records are aligned.
   */
  private async report(): Promise<void> {
    const { ctx, pool } = this;
    const now = Date.now();
    for (const s of centralSide(ctx.db).stores()) {
      if (!this.isActive()) return;
      let r = this.reported.get(s.store_id);
      if (!r) {
        if (this.unknown.has(s.store_id)) continue;
        const row = await storeOf(pool, s.store_id);
        // A store PostgreSQL does not know pushed to this core directly: nothing to report there.
        if (!row) {
          this.unknown.add(s.store_id);
          continue;
        }
        this.reported.set(s.store_id, (r = row));
      }
      const counters = `${s.held_count}/${s.rejected_count}/${s.parked_count}/${s.skipped_count}`;
      const differ = counters !== `${r.held_count}/${r.rejected_count}/${r.parked_count}/${r.skipped_count}` && this.alignedFor.get(s.store_id) !== counters;
      const advanced = s.applied_seq > r.applied_seq;
      if (!differ && !advanced) continue;
      if (advanced && !differ && s.applied_seq < s.received_seq && now - (this.lastReport.get(s.store_id) ?? 0) < REPORT_EVERY_MS) continue;
      this.lastReport.set(s.store_id, now);
      if (advanced) await this.reportRange(s, r.applied_seq, r.zone ?? 'UTC');
      let fresh = (await storeOf(pool, s.store_id))!;
      if (`${fresh.held_count}/${fresh.rejected_count}/${fresh.parked_count}/${fresh.skipped_count}` !== counters) {
        await this.align(s, fresh.zone ?? 'UTC');
        fresh = (await storeOf(pool, s.store_id))!;
        this.alignedFor.set(s.store_id, counters);
      }
      this.reported.set(s.store_id, fresh);
      this.state.pgReceived.set(s.store_id, fresh.received_seq);
    }
  }

  /** `zone`: the store's, whose days the fronts totalled its records by at receipt; the core's measures take the same days. */
  private async reportRange(s: StoreRow, from: number, zone: string): Promise<void> {
    const cs = coreStore(this.ctx.db);
    const published = new Set<string>();
    while (from < s.applied_seq) {
      const rows = cs.decidedRange(s.store_id, from, s.applied_seq, REPORT_BATCH);
      // The outcomes just read go out once the central's log holds them (src/db/log-hold.ts).
      const held = logHeld(this.ctx.db);
      held?.catch(() => undefined);
      const upTo = rows.length < REPORT_BATCH ? s.applied_seq : rows[rows.length - 1].seq;
      const days = [...new Set(rows.map((x) => dayOf(x.created_at, zone)))].filter((d) => !published.has(d));
      // Totals first: a crash before the outcomes only repeats both.
      await publishTotals(this.ctx, this.pool, s.store_id, days, zone);
      for (const d of days) published.add(d);
      await held;
      await markApplied(this.pool, s.store_id, upTo, outcomesOf(rows));
      this.state.reported += rows.length;
      from = upTo;
    }
  }

  /** Aligns PostgreSQL's outcomes with the core's for the records either side has held, parked or skipped. */
  private async align(s: StoreRow, zone: string): Promise<void> {
    const cs = coreStore(this.ctx.db);
    const seqs = new Set([...(await undecidedSeqs(this.pool, s.store_id)), ...cs.undecidedSeqs(s.store_id)]);
    const rows = [...seqs]
      .filter((q) => q <= s.applied_seq)
      .sort((a, b) => a - b)
      .map((q) => cs.decidedAt(s.store_id, q))
      .filter((x): x is DecidedRow => x !== undefined);
    if (!rows.length) return;
    await logHeld(this.ctx.db);
    await publishTotals(this.ctx, this.pool, s.store_id, [...new Set(rows.map((x) => dayOf(x.created_at, zone)))], zone);
    await markApplied(this.pool, s.store_id, s.applied_seq, outcomesOf(rows));
    this.ctx.log.info({ store_id: s.store_id, records: rows.length }, 'sync: outcomes changed at the core (retry, skip, held applied) reported to PostgreSQL');
  }
}
