import { createHash } from 'node:crypto';
import { Type, type Static } from '@sinclair/typebox';

/** Version 1 of the wire protocol (docs/sync-protocol.md). */
export const SYNC_PROTOCOL = 1;

const Id = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9_.:-]+$' });
const Seq = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });

export const PushRecord = Type.Object({
  seq: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
  /** The seq of the record before this one in the store's outbox (0 for the first): gaps are detected, not guessed. */
  prev_seq: Seq,
  id: Id,
  kind: Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-z][a-z0-9_.]*$' }),
  account_id: Id,
  live_mode: Type.Boolean(),
  payload: Type.Record(Type.String(), Type.Unknown()),
  created_at: Type.String({ minLength: 20, maxLength: 40 }),
});
export type PushRecord = Static<typeof PushRecord>;

/** An IANA time zone name as a box's Intl resolves it ("America/Guatemala", "UTC"). */
export const ZoneName = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_+\\-/]+$' });

export const PushBody = Type.Object({
  protocol: Type.Literal(SYNC_PROTOCOL),
  store_id: Id,
  records: Type.Array(PushRecord, { maxItems: 5000 }),
  /**
   * What the box still holds after this batch: how many records and the oldest one's time (for the
   * central's stores panel; a box's backlog is otherwise invisible to the central). Optional: a box
   * that does not send them shows "not said".
   */
  waiting: Type.Optional(Type.Integer({ minimum: 0 })),
  waiting_since: Type.Optional(Type.Union([Type.String({ maxLength: 40 }), Type.Null()])),
  /** The box's time zone, whose days reconciliation compares: a central that totals at receipt (PostgreSQL) sums the records by it. */
  zone: Type.Optional(ZoneName),
});
export type PushBody = Static<typeof PushBody>;

export const PushResponse = Type.Object({
  /**
   * The highest seq of this store the central has durably *received*: the box's cursor. The
   * central applies received records later, in order (its projector); reconciliation's
   * `applied_seq` says how far that went.
   */
  applied_seq: Seq,
  /** Records new to the central in this push (the others were duplicates). */
  applied: Type.Integer(),
  duplicates: Type.Integer(),
  /**
   * Always 0 / empty since the central answers on receipt: outcomes are decided when the records
   * are applied (a refusal reaches the box in its feed as `record_rejected`; held and parked
   * records show in `GET /sync/stores`). Kept so an older box's reading of the answer is unchanged.
   */
  held: Type.Integer(),
  parked: Type.Optional(Type.Integer()),
  /** Records refused at receipt (issue 32): kept as rejected, never applied; the stream goes on past them. */
  rejected: Type.Array(Type.Object({ id: Type.String(), reason: Type.String(), code: Type.Optional(Type.String()), field: Type.Optional(Type.String()) })),
  server_time: Type.String(),
});
export type PushResponse = Static<typeof PushResponse>;

export const FeedQuery = Type.Object({
  after: Type.Integer({ minimum: 0, default: 0 }),
  wait_ms: Type.Integer({ minimum: 0, maximum: 120_000, default: 0 }),
  limit: Type.Integer({ minimum: 1, maximum: 5000, default: 500 }),
  /** The asking box: changes its own pushes caused are left out (no echo). */
  store_id: Type.Optional(Id),
});

export const FeedChange = Type.Object({
  seq: Type.Integer(),
  kind: Type.String(),
  account_id: Type.Union([Type.String(), Type.Null()]),
  organization_id: Type.String(),
  live_mode: Type.Boolean(),
  object_id: Type.Union([Type.String(), Type.Null()]),
  payload: Type.Record(Type.String(), Type.Unknown()),
  created_at: Type.String(),
});
export type FeedChange = Static<typeof FeedChange>;

export const FeedResponse = Type.Object({
  changes: Type.Array(FeedChange),
  cursor: Type.Integer(),
  server_time: Type.String(),
});
export type FeedResponse = Static<typeof FeedResponse>;

const KeySnapshot = Type.Object({
  id: Type.String(),
  prefix: Type.String(),
  hash: Type.String(),
  kind: Type.Union([Type.Literal('account'), Type.Literal('organization')]),
  environment: Type.Union([Type.Literal('live'), Type.Literal('test')]),
  account_id: Type.Union([Type.String(), Type.Null()]),
  organization_id: Type.String(),
  live_mode: Type.Integer(),
  created_at: Type.String(),
  revoked_at: Type.Union([Type.String(), Type.Null()]),
});
export type KeySnapshot = Static<typeof KeySnapshot>;

const AccountSnapshot = Type.Object({
  id: Type.String(),
  live_mode: Type.Boolean(),
  name: Type.String(),
  sandbox_of: Type.Union([Type.String(), Type.Null()]),
  parent_account_id: Type.Union([Type.String(), Type.Null()]),
  tax_id: Type.Union([Type.String(), Type.Null()]),
  tax_name: Type.Union([Type.String(), Type.Null()]),
  country: Type.String(),
  default_currency: Type.String(),
  event_format: Type.Union([Type.Literal('unified'), Type.Literal('both')]),
  created_at: Type.String(),
});
export type AccountSnapshot = Static<typeof AccountSnapshot>;

export const BootstrapResponse = Type.Object({
  protocol: Type.Literal(SYNC_PROTOCOL),
  organization: Type.Object({ id: Type.String(), name: Type.String(), created_at: Type.String() }),
  accounts: Type.Array(AccountSnapshot),
  keys: Type.Array(KeySnapshot),
  feed_cursor: Type.Integer(),
  server_time: Type.String(),
});
export type BootstrapResponse = Static<typeof BootstrapResponse>;

export const ReconcileQuery = Type.Object({
  store_id: Id,
  day: Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$' }),
  /**
   * The store's time zone: `day` is that zone's date, midnight to midnight. Absent (a box before
   * this field), the UTC day.
   */
  zone: Type.Optional(ZoneName),
});

export const SummaryRow = Type.Object({
  account_id: Type.String(),
  live_mode: Type.Boolean(),
  currency: Type.String(),
  measure: Type.String(),
  count: Type.Integer(),
  sum: Type.Integer(),
});
export type SummaryRow = Static<typeof SummaryRow>;

export const ReconcileResponse = Type.Object({
  day: Type.String(),
  /**
   * The span the central summed, [from, until) in UTC, and the zone it took `day` in. Absent (a
   * central before these fields), the UTC day: the store then sums that span too.
   */
  from: Type.Optional(Type.String()),
  until: Type.Optional(Type.String()),
  zone: Type.Optional(Type.String()),
  applied_seq: Seq,
  rows: Type.Array(SummaryRow),
  server_time: Type.String(),
});
export type ReconcileResponse = Static<typeof ReconcileResponse>;

/**
 * What identifies a record's content: everything but its place in the stream. The payload is hashed
 * as serialised (`payloadJson`, the text the central also stores), so the hash costs one
 * serialisation; a store resends a record with the payload it stored, keys in the same order.
 * (A canonical, key-sorted form cost three times as much per record at the central.)
 */
export function recordHash(r: Pick<PushRecord, 'id' | 'kind' | 'account_id' | 'live_mode' | 'created_at'>, payloadJson: string): string {
  return createHash('sha256')
    .update(JSON.stringify([r.id, r.kind, r.account_id, r.live_mode, r.created_at]))
    .update('\n')
    .update(payloadJson)
    .digest('hex');
}

/** `GET /sync/received`: what the central holds of one store's records, after a seq (a restored store rejoining). */
export const ReceivedQuery = Type.Object({
  store_id: Id,
  after: Type.Integer({ minimum: 0, default: 0 }),
  limit: Type.Integer({ minimum: 1, maximum: 5000, default: 1000 }),
});

export const ReceivedRecord = Type.Object({
  seq: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
  id: Type.String(),
  kind: Type.String(),
  account_id: Type.String(),
  live_mode: Type.Boolean(),
  payload: Type.Record(Type.String(), Type.Unknown()),
  created_at: Type.String(),
  /** `recordHash` of the record as the central received it. */
  hash: Type.String(),
});
export type ReceivedRecord = Static<typeof ReceivedRecord>;

export const ReceivedResponse = Type.Object({
  store_id: Type.String(),
  /** The highest seq of this store the central has durably received (0: it never heard of the store). */
  applied_seq: Seq,
  records: Type.Array(ReceivedRecord),
  server_time: Type.String(),
});
export type ReceivedResponse = Static<typeof ReceivedResponse>;
