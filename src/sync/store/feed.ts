import { tx } from '../../db/database.js';
import { accountsOf } from '../../accounts/service.js';
import type { KeyRow } from '../../accounts/store.js';
import { storeSide } from './sync-store.js';
import { actingOnOwnDecision, applyingFeed } from '../../outbox/sync-records.js';
import { STATE } from '../shared/state.js';
import type { FeedResponse } from '../shared/wire.js';
import type { FeedApplier, FeedApplyContext } from '../shared/registry.js';

// Keys are made at the central; the store holds their hashes so the same key works at the box, and
// a revocation stops it here at the next pull.
export const applyApiKey: FeedApplier = (ctx, change) => {
  const k = change.payload as unknown as KeyRow;
  const accounts = accountsOf(ctx);
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
};

// Central decides: a refused record is kept where the status shows it, logged for the manager, and
// handed to its module's rejection handler, if any, to apply the decision.
export const applyRecordRejected: FeedApplier = (ctx, change) => {
  const p = change.payload as { record_id: string; kind: string; reason: string; code?: string | null };
  const store = storeSide(ctx.db);
  store.insertDecision({
    record_id: p.record_id,
    account_id: change.account_id ?? '',
    live_mode: change.live_mode ? 1 : 0,
    kind: p.kind,
    reason: p.reason,
    decided_at: change.created_at,
  });
  ctx.log.warn({ record_id: p.record_id, kind: p.kind, reason: p.reason }, 'the central refused a record this store pushed');
  const handler = ctx.registry.sync.rejectionHandler(p.kind);
  if (!handler) return;
  const own = store.outboxRecord(p.record_id);
  // The reaction (a cancellation, say) is this box's own change: it goes up like any other.
  actingOnOwnDecision(ctx.db, () =>
    handler(ctx, {
      recordId: p.record_id,
      kind: p.kind,
      reason: p.reason,
      code: p.code ?? null,
      accountId: change.account_id ?? '',
      liveMode: change.live_mode,
      decidedAt: change.created_at,
      payload: own ? (JSON.parse(own.payload) as Record<string, unknown>) : null,
    }),
  );
};

/**
 * Applies one feed page and stores the new cursor in the same transaction: a crash between the two
 * is impossible, so a change is applied exactly once. Kinds this version does not know are skipped
 * with a warning (a newer central may publish more than an older box understands).
 */
export function applyFeedPage(ctx: FeedApplyContext, page: FeedResponse): number {
  const store = storeSide(ctx.db);
  return tx(ctx.db, () =>
    applyingFeed(ctx.db, () => {
      const current = Number(store.state(STATE.feedCursor) ?? 0);
      let applied = 0;
      for (const change of page.changes) {
        if (change.seq <= current) continue;
        const fn = ctx.registry.sync.feedApplier(change.kind);
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
          ctx.log.warn(
            { kind: change.kind, seq: change.seq, object_id: change.object_id },
            'sync: a feed change names an object this box does not hold; skipped',
          );
          continue;
        }
        applied++;
      }
      if (page.cursor > current) store.setState(STATE.feedCursor, page.cursor);
      return applied;
    }),
  );
}
