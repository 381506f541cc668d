import type { AppContext } from '../context.js';
import type { StoredEvent } from '../outbox/events.js';

export interface ForeignEvent {
  /** The `msg_...` id the event got where it was first emitted (a store): its webhook-id for life. */
  id: string;
  type: string;
  accountId: string;
  liveMode: boolean;
  payload: Record<string, unknown>;
  objectId?: string | null;
  createdAt: string;
}

/**
 * For the sync engine at the central: writes an event that was born at a store, keeping its id and
 * creation time, so the central's endpoints receive it with the store's `webhook-id`. Call it inside
 * the transaction that applies the store's records. Applying the same event twice is harmless:
 * `events.id` is unique (the second write is ignored) and deliveries are keyed by event id and
 * endpoint, so each endpoint gets the event once. Returns the stored event (the first one written).
 */
export function reemitEvent(ctx: Pick<AppContext, 'outbox'>, event: ForeignEvent): StoredEvent {
  return ctx.outbox.emit({
    id: event.id,
    type: event.type,
    accountId: event.accountId,
    liveMode: event.liveMode,
    payload: event.payload,
    objectId: event.objectId ?? null,
    createdAt: event.createdAt,
  });
}
