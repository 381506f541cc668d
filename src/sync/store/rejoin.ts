import type { AppContext } from '../../context.js';
import type { Db } from '../../db/database.js';
import { tx } from '../../db/database.js';
import { groupCommit } from '../../db/group-commit.js';
import { storeSide, type OutboxRow } from './sync-store.js';
import { STATE } from '../shared/state.js';
import { resetAck } from './push.js';
import { recordHash, type ReceivedRecord } from '../shared/wire.js';
import type { CentralClient } from './transport.js';

/** Records asked for per request while rejoining. */
const PAGE = 1000;

/**
 * Kinds whose applier means something only at the central (a reconciliation report becomes an
 * event for central operations): taken back into the outbox, never applied at the store.
 */
const CENTRAL_ONLY = new Set(['reconciliation_report']);

/** What the central holds of this store past its acknowledged cursor. */
export interface CentralHoldings {
  /** The highest seq of this store the central has durably applied. */
  appliedSeq: number;
  /** Its records after the store's cursor, in seq order. */
  records: ReceivedRecord[];
}

/** What a rejoin did (or, for `planRejoin`, would do). */
export interface RejoinResult {
  centralAppliedSeq: number;
  /** Records the central holds that this box lacked, taken back (written to the outbox and applied here). */
  takenBack: number;
  /** Of those, the ones whose applier could not write them here (logged; the outbox holds them all the same). */
  notApplied: Array<{ id: string; kind: string; reason: string }>;
  /** This box's records the central never got, moved past the central's sequence to be pushed. */
  moved: number;
  /** The seq the next record of this box takes. */
  nextSeq: number;
  /** The central had applied less than this box thought (the central was restored): pushed again from there. */
  centralBehind: boolean;
}

/** Asks the central, page by page, for what it holds of this store after `after`. */
export async function centralHoldings(client: CentralClient, storeId: string, after: number, signal?: AbortSignal): Promise<CentralHoldings> {
  const records: ReceivedRecord[] = [];
  let appliedSeq = 0;
  let cursor = after;
  for (;;) {
    const page = await client.received(storeId, cursor, PAGE, signal);
    appliedSeq = Math.max(appliedSeq, page.applied_seq);
    records.push(...page.records);
    if (page.records.length < PAGE) return { appliedSeq, records };
    cursor = page.records[page.records.length - 1].seq;
  }
}

/** Questions asked at most while another process keeps moving this box's cursor (holdingsAtCursor). */
const CURSOR_TRIES = 5;

/**
 * `centralHoldings` after this box's acknowledged cursor as it is when the answer comes back. A
 * push by another process while the question is out (the daemon beside `posd sync now`, or the
 * reverse) moves the cursor and prunes the records it acknowledged: an answer for the old cursor
 * would name them as records this box lacks, a restore that never happened. Asked again then.
 */
export async function holdingsAtCursor(db: Db, client: CentralClient, storeId: string, signal?: AbortSignal): Promise<CentralHoldings> {
  const cursor = () => Number(storeSide(db).state(STATE.ackedSeq) ?? 0);
  let acked = cursor();
  for (let tries = 1; ; tries++) {
    const held = await centralHoldings(client, storeId, acked, signal);
    const now = cursor();
    if (now === acked || tries === CURSOR_TRIES) return held;
    acked = now;
  }
}

/**
 * What a rejoin would do on this database with what the central holds, without writing: the
 * records to take back, this box's records to move past the central's, and the next seq.
 */
export function planRejoin(db: Db, held: CentralHoldings): Omit<RejoinResult, 'notApplied'> & { rebuild: boolean } {
  const store = storeSide(db);
  const acked = Number(store.state(STATE.ackedSeq) ?? 0);
  if (held.appliedSeq < acked) {
    return { centralAppliedSeq: held.appliedSeq, takenBack: 0, moved: 0, nextSeq: store.outboxSequence() + 1, centralBehind: true, rebuild: false };
  }
  const local = store.outboxAfter(acked, Number.MAX_SAFE_INTEGER);
  const localById = new Map(local.map((l) => [l.id, l]));
  const centralIds = new Set(held.records.map((r) => r.id));
  const lacking = held.records.filter((r) => !localById.has(r.id)).length;
  const unsent = local.filter((l) => !centralIds.has(l.id));
  // Nothing to rebuild when every record the central holds sits here at its seq and this box's
  // own records all come after the central's: the ordinary start (at most an answer was lost).
  const rebuild = lacking > 0 || held.records.some((r) => localById.get(r.id)?.seq !== r.seq) || unsent.some((l) => l.seq <= held.appliedSeq);
  const high = Math.max(store.outboxSequence(), held.appliedSeq);
  return {
    centralAppliedSeq: held.appliedSeq,
    takenBack: lacking,
    moved: rebuild ? unsent.length : 0,
    nextSeq: high + (rebuild ? unsent.length : 0) + 1,
    centralBehind: false,
    rebuild,
  };
}

/**
 * Makes this box's outbox agree with what the central holds of it, before anything is pushed: run
 * at every start of a synced store (sync/store/client.ts), so a box restored from an older backup
 * rejoins by construction. In one transaction (the central's answer was read before it; this
 * store's own pushes wait for it, so the central's side cannot move meanwhile):
 * - records the central holds that this box lacks (made after the backup) are taken back at the
 *   central's seq and applied here through the owning module's applier, so the sales exist here again;
 * - this box's records the central never got (made after the restore, while the central could not
 *   be asked) move past the central's sequence, in their order: no seq is ever used twice;
 * - the cursor becomes the central's applied seq, so only what the central never got is pushed.
 * A central that applied less than this box thought (it was restored) moves the cursor back instead.
 */
export async function rejoin(ctx: AppContext, held: CentralHoldings, storeId: string): Promise<RejoinResult> {
  const { db } = ctx;
  const store = storeSide(db);
  return groupCommit(db, () => {
    const plan = planRejoin(db, held);
    const notApplied: RejoinResult['notApplied'] = [];
    if (plan.centralBehind) {
      resetAck(db, held.appliedSeq);
      return { ...plan, notApplied };
    }
    if (!plan.rebuild) {
      store.setState(STATE.ackedSeq, held.appliedSeq);
      return { ...plan, notApplied };
    }
    const acked = Number(store.state(STATE.ackedSeq) ?? 0);
    const local = store.outboxAfter(acked, Number.MAX_SAFE_INTEGER);
    const localById = new Map(local.map((l) => [l.id, l]));
    const centralIds = new Set(held.records.map((r) => r.id));
    store.deleteOutboxAfter(acked);
    for (const r of held.records) {
      const payload = JSON.stringify(r.payload);
      const mine = localById.get(r.id);
      if (mine && recordHash({ ...mine, live_mode: mine.live_mode === 1 }, mine.payload) !== r.hash) {
        ctx.log.warn({ record_id: r.id, seq: r.seq }, 'sync: rejoining, a record differs from the central copy under the same id; the central copy is kept');
      }
      if (!mine) {
        const failed = takeBack(ctx, r, storeId);
        if (failed) notApplied.push({ id: r.id, kind: r.kind, reason: failed });
      }
      store.insertOutboxAt({ seq: r.seq, id: r.id, account_id: r.account_id, live_mode: r.live_mode ? 1 : 0, kind: r.kind, payload, created_at: r.created_at });
    }
    // Past every seq used here and at the central: the autoincrement's high-water mark is above both now.
    const unsent: OutboxRow[] = local.filter((l) => !centralIds.has(l.id));
    let next = Math.max(store.outboxSequence(), held.appliedSeq) + 1;
    for (const l of unsent) store.insertOutboxAt({ ...l, seq: next++ });
    store.setState(STATE.ackedSeq, held.appliedSeq);
    return { ...plan, nextSeq: next, notApplied };
  });
}

/**
 * Applies one record this box made before its restore, as the central applied it, through the same
 * applier (in a savepoint): the box's own again (`restoring`), no row origin, no feed. Returns why it
 * could not be written, or null.
 */
function takeBack(ctx: AppContext, r: ReceivedRecord, storeId: string): string | null {
  if (CENTRAL_ONLY.has(r.kind)) return null;
  const apply = ctx.registry.sync.applier(r.kind);
  if (!apply) return `no applier for kind ${r.kind}`;
  try {
    tx(ctx.db, () => apply(ctx, { ...r, prev_seq: 0 }, { storeId, keyAccountId: r.account_id, restoring: true }));
    return null;
  } catch (err) {
    return (err as Error).message ?? String(err);
  }
}
