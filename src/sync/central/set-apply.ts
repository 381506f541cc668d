import type { AppContext } from '../../context.js';
import { tx } from '../../db/database.js';
import { withFeedOrigin } from '../../outbox/feed-changes.js';
import type { PushKind, SyncOrigin } from '../shared/registry.js';
import type { PushRecord } from '../shared/wire.js';

/** A record as the projector applies it (its payload parsed). */
export type SliceRecord = Pick<PushRecord, 'id' | 'kind' | 'account_id' | 'live_mode' | 'payload' | 'created_at' | 'seq' | 'prev_seq'>;

/** The most records a run holds before it is applied: its statements' size, and how far a slice's clock can lag its work. */
export const SET_RUN_RECORDS = 100;

/**
 * The set-based apply of a slice (docs/central.md, "Set-based apply"): consecutive records of one
 * kind that declares `applySet`, each already decided `applied` by the same checks the record
 * alone would meet (the kind has no check, moves no money, its payload is valid: `settable`), are
 * kept here and applied together with the kind's set statements, in one savepoint, before any
 * other record of the slice runs (so what a later record's checks read is as the per-record path
 * leaves it). When the set statement fails on the records themselves, its savepoint is rolled back
 * and each record goes the per-record way (`alone`), to the outcome that gives it; a transient
 * database error propagates and the slice is rolled back whole, as in the per-record path.
 */
export class SetRun {
  private kind: PushKind | undefined;
  private kindName = '';
  private records: SliceRecord[] = [];
  /** Runs applied as sets, and records that went alone after a set failed (for tests and the bench). */
  static readonly counts = { sets: 0, fallbacks: 0 };

  constructor(
    private readonly ctx: AppContext,
    private readonly origin: SyncOrigin,
    /** The per-record path: decides one record and records its outcome. */
    private readonly alone: (r: SliceRecord) => void,
    /** Whether the database error is transient (the slice is rolled back and tried again). */
    private readonly transient: (err: unknown) => boolean,
  ) {}

  /** Takes the record into the run when it may join one (applying the run first if it is of another kind); false: apply it alone. */
  add(r: SliceRecord): boolean {
    const kind = this.ctx.registry.sync.settable(r.kind, r.payload);
    if (!kind) return false;
    if (this.records.length && (this.kindName !== r.kind || this.records.length >= SET_RUN_RECORDS)) this.flush();
    this.kind = kind;
    this.kindName = r.kind;
    this.records.push(r);
    return true;
  }

  /** Applies the run held so far (before a record that goes alone, and at the slice's end). */
  flush(): void {
    const records = this.records;
    const kind = this.kind;
    if (!records.length || !kind?.applySet) return;
    this.records = [];
    const ctx = this.ctx;
    const origin = this.origin;
    try {
      withFeedOrigin(ctx.db, origin.storeId, () => tx(ctx.db, () => kind.applySet?.(ctx, records as PushRecord[], origin)));
      SetRun.counts.sets++;
    } catch (err) {
      if (this.transient(err)) throw Object.assign(err as Error, { syncRecordId: records[0].id });
      SetRun.counts.fallbacks += records.length;
      for (const r of records) this.alone(r);
    }
  }
}
