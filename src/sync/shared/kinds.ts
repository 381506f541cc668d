import { Type } from '@sinclair/typebox';
import { reemitEvent, type ForeignEvent } from '../../events/reemit.js';
import type { PushKind } from './registry.js';
import type { PushRecord } from './wire.js';

const EventPayload = Type.Object({ id: Type.String(), type: Type.String(), payload: Type.Object({}) });

type EventFields = { id: string; type: string; object_id?: unknown; payload: Record<string, unknown>; created_at?: unknown };
type EventRecord = Omit<PushRecord, 'payload'> & { payload: EventFields };

/** The store's event as the central writes it again: its id, type, object and time kept. */
function foreignEvent(record: EventRecord): ForeignEvent {
  const p = record.payload;
  return {
    id: p.id,
    type: p.type,
    accountId: record.account_id,
    liveMode: record.live_mode,
    objectId: typeof p.object_id === 'string' ? p.object_id : null,
    payload: p.payload,
    createdAt: typeof p.created_at === 'string' ? p.created_at : record.created_at,
  };
}

/**
 * An event made at the store: re-emitted at the central with the same id, so central operations'
 * endpoints (which deduplicate by webhook-id) see it once however often it is pushed.
 */
export const eventPush: PushKind<EventFields> = {
  payload: EventPayload,
  malformed: 'event record without id, type or payload',
  apply(ctx, record) {
    reemitEvent(ctx, foreignEvent(record));
  },
  // A run of them is one multi-row insert per hundred (the same rows, seqs and skipped ids).
  applySet(ctx, records) {
    ctx.outbox.emitMany(records.map(foreignEvent));
  },
};

/** A store found its totals differ from the central's: central operations hear it as an event. */
export const reconciliationReportPush: PushKind<Record<string, unknown>> = {
  apply(ctx, record, origin) {
    ctx.outbox.emit({
      type: 'sync.reconciliation_difference',
      accountId: record.account_id,
      liveMode: record.live_mode,
      objectId: origin.storeId,
      payload: { store_id: origin.storeId, ...record.payload },
      createdAt: record.created_at,
    });
  },
};
