import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import type { Account } from '../../accounts/service.js';
import { Authenticator } from '../../api/auth.js';
import { accountsOf } from '../../accounts/service.js';
import { ApiError } from '../../errors.js';
import { isoTime } from '../../clock.js';
import { errorBodies } from '../../api/schemas.js';
import { storeKeyAccount } from './routes.js';
import { centralSide } from './sync-store.js';
import { ReceivedQuery, ReceivedResponse } from '../shared/wire.js';

/**
 * What the central holds of one store's records after `after`, in the store's order, with the
 * highest seq it applied: a store restored from an older backup asks this before it pushes again
 * (sync/store/rejoin.ts), takes back what its backup lacks and continues its sequence after the
 * central's. Read only; kept apart from the push path so changes there do not meet this one.
 */
export function receivedOf(ctx: AppContext, keyAccount: Account, storeId: string, after: number, limit: number): ReceivedResponse {
  const store = centralSide(ctx.db);
  // One snapshot: the applied seq and the rows agree even while a push of this store commits.
  return ctx.db.transaction(() => {
    const row = store.storeRow(storeId);
    if (row && row.account_id !== keyAccount.id) {
      throw new ApiError('sync_store_mismatch', { message: `Store ${storeId} belongs to another account; this key cannot read its records.` });
    }
    const records = row
      ? store.receivedAfter(storeId, after, limit).map((r) => ({
          seq: r.seq,
          id: r.id,
          kind: r.kind,
          account_id: r.account_id,
          live_mode: r.live_mode === 1,
          payload: JSON.parse(r.payload) as Record<string, unknown>,
          created_at: r.created_at,
          hash: r.hash,
        }))
      : [];
    // What the central holds durably is what it received (the projector may not have applied it yet).
    return { store_id: storeId, applied_seq: row?.received_seq ?? 0, records, server_time: isoTime(ctx.clock.now()) };
  })();
}

/** `GET /sync/received` (docs/sync-protocol.md), authenticated with the store account's key like the other sync routes. */
export function centralRecordRoutes(app: ApiApp, ctx: AppContext): void {
  const authenticator = new Authenticator(accountsOf(ctx));
  app.get(
    '/sync/received',
    { schema: { hide: true, querystring: ReceivedQuery, response: { 200: ReceivedResponse, ...errorBodies(400, 401, 403) } } },
    async (req) => receivedOf(ctx, storeKeyAccount(authenticator, req), req.query.store_id, req.query.after, req.query.limit),
  );
}
