import type { AppContext } from '../context.js';
import { tx } from '../db/database.js';
import { AccountsService } from '../accounts/service.js';
import type { KeyRow } from '../accounts/store.js';
import { syncStore } from './store.js';
import { actingOnOwnDecision, applyingFeed } from '../outbox/sync-records.js';
import { STATE } from './status.js';
import type { FeedChange, FeedResponse } from './wire.js';

/** The store's context: appliers and rejection handlers write through their module's own service functions, which take it. */
export type FeedApplyContext = AppContext;

/**
 * Applies one change of the central's feed at the store, inside the transaction that moves the
 * cursor. It upserts the object by id to the change's state (a change seen twice changes nothing),
 * skips an object of an account the box does not hold, appends no sync record (the central has the
 * change already: `appendSyncRecord` refuses inside a feed page) and emits no events unless the
 * kind's documentation says so (docs/sync-protocol.md).
 */
export type FeedApplier = (ctx: FeedApplyContext, change: FeedChange) => void;

const feedAppliers = new Map<string, FeedApplier>();

/** Registers how the store applies one kind of feed change (the owning module registers its own kinds). */
export function registerFeedApplier(kind: string, fn: FeedApplier): void {
  if (feedAppliers.has(kind) && feedAppliers.get(kind) !== fn) throw new Error(`a feed applier for ${kind} is already registered`);
  feedAppliers.set(kind, fn);
}

// Keys are made at the central; the store holds their hashes so the same key works at the box, and
// a revocation stops it here at the next pull.
registerFeedApplier('api_key', (ctx, change) => {
  const k = change.payload as unknown as KeyRow;
  const accounts = new AccountsService(ctx.db, ctx.clock);
  if (k.account_id && !accounts.account(k.account_id)) return; // an account this box does not serve
  if (!k.account_id && !accounts.organization(k.organization_id)) return;
  accounts.upsertKeyHash({
    id: k.id,
    prefix: k.prefix,
    hash: k.hash,
    kind: k.kind,
    environment: k.environment,
    account_id: k.account_id,
    organization_id: k.organization_id,
    live_mode: k.live_mode,
    created_at: k.created_at,
    revoked_at: k.revoked_at,
  });
});

/** What the central refused: the store's own record (read back from its outbox) and the decision. */
export interface Rejection {
  recordId: string;
  kind: string;
  reason: string;
  /** The central's machine-readable decision (`slot_unavailable`, ...), null when it gave none. */
  code: string | null;
  accountId: string;
  liveMode: boolean;
  decidedAt: string;
  /** The payload this box pushed, or null when its outbox no longer holds the record. */
  payload: Record<string, unknown> | null;
}

/**
 * Applies the central's refusal of one record of a kind, inside the transaction that moves the feed
 * cursor: the owning module undoes or changes its object through its own lifecycle and emits the
 * events that change implies, so the decision and its effects commit together with the cursor.
 */
export type RejectionHandler = (ctx: FeedApplyContext, rejection: Rejection) => void;

const rejectionHandlers = new Map<string, RejectionHandler>();

/** Registers how the owning module applies the central's refusal of its kind (sync knows no module). */
export function registerRejectionHandler(kind: string, fn: RejectionHandler): void {
  if (rejectionHandlers.has(kind) && rejectionHandlers.get(kind) !== fn) throw new Error(`a rejection handler for ${kind} is already registered`);
  rejectionHandlers.set(kind, fn);
}

// Central decides: a refused record is kept where the status shows it, logged for the manager, and
// handed to its module's rejection handler, if any, to apply the decision.
registerFeedApplier('record_rejected', (ctx, change) => {
  const p = change.payload as { record_id: string; kind: string; reason: string; code?: string | null };
  const store = syncStore(ctx.db);
  store.insertDecision({
    record_id: p.record_id,
    account_id: change.account_id ?? '',
    live_mode: change.live_mode ? 1 : 0,
    kind: p.kind,
    reason: p.reason,
    decided_at: change.created_at,
  });
  ctx.log.warn({ record_id: p.record_id, kind: p.kind, reason: p.reason }, 'the central refused a record this store pushed');
  const handler = rejectionHandlers.get(p.kind);
  if (!handler) return;
  const own = store.outboxRecord(p.record_id);
  // The reaction (a cancellation, say) is this box's own change: it goes up like any other.
  actingOnOwnDecision(ctx.db, () => handler(ctx, {
    recordId: p.record_id,
    kind: p.kind,
    reason: p.reason,
    code: p.code ?? null,
    accountId: change.account_id ?? '',
    liveMode: change.live_mode,
    decidedAt: change.created_at,
    payload: own ? (JSON.parse(own.payload) as Record<string, unknown>) : null,
  }));
});

/**
 * Applies one feed page and stores the new cursor in the same transaction: a crash between the two
 * is impossible, so a change is applied exactly once. Kinds this version does not know are skipped
 * with a warning (a newer central may publish more than an older box understands).
 */
export function applyFeedPage(ctx: FeedApplyContext, page: FeedResponse): number {
  const store = syncStore(ctx.db);
  return tx(ctx.db, () => applyingFeed(ctx.db, () => {
    const current = Number(store.state(STATE.feedCursor) ?? 0);
    let applied = 0;
    for (const change of page.changes) {
      if (change.seq <= current) continue;
      const fn = feedAppliers.get(change.kind);
      if (!fn) {
        ctx.log.warn({ kind: change.kind, seq: change.seq }, 'skipping a feed change of a kind this posd does not know');
        continue;
      }
      try {
        tx(ctx.db, () => fn(ctx, change)); // a savepoint: a skipped change leaves nothing half-written
      } catch (err) {
        // An object naming one this box never learnt (a service made before it joined) cannot be
        // held here; stopping the whole feed for it would stop every later change too.
        if ((err as { code?: string }).code !== 'SQLITE_CONSTRAINT_FOREIGNKEY') throw err;
        ctx.log.warn({ kind: change.kind, seq: change.seq, object_id: change.object_id }, 'sync: a feed change names an object this box does not hold; skipped');
        continue;
      }
      applied++;
    }
    if (page.cursor > current) store.setState(STATE.feedCursor, page.cursor);
    return applied;
  }));
}
