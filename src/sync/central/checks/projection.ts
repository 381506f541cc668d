import type { AppContext } from '../../../context.js';
import type { SyncOrigin } from '../../shared/registry.js';
import type { PushRecord } from '../../shared/wire.js';
import type { RecordRefusal } from './receipt.js';

/**
 * The checks of one pushed record that need the central's state (issue 32), made by a projector
 * just before the kind's applier, inside the transaction that applies it: the kind's own `check`
 * (the objects it names exist in the pushing key's scope, their machine allows the step, a refund
 * is no larger than what is left of its payment). It reads only the central's state as the log has
 * built it so far, so every core projecting the same log decides alike. The one interface a
 * projector calls (the SQLite projector, and the PostgreSQL core's).
 */
export function checkAtProjection(
  ctx: AppContext,
  record: Pick<PushRecord, 'id' | 'kind' | 'account_id' | 'live_mode' | 'payload' | 'created_at' | 'seq' | 'prev_seq'>,
  origin: SyncOrigin,
): RecordRefusal | null {
  const kind = ctx.registry.sync.pushKind(record.kind);
  if (!kind?.check) return null;
  return kind.check(ctx, record as PushRecord, origin);
}
