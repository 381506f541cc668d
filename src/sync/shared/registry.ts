import type { TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { AppContext } from '../../context.js';
import type { Db } from '../../db/database.js';
import type { FeedChange, PushRecord, SummaryRow } from './wire.js';

/** Where a record came from, for appliers that need it (the store box, the account whose key pushed). */
export interface SyncOrigin {
  storeId: string;
  keyAccountId: string;
  /**
   * The box that made the record is taking it back after a restore from an older backup
   * (sync/store/rejoin.ts): the applier runs at that store, so what it writes is the box's own (no
   * `origin_store_id`: the box runs the object's lifecycle itself), not a central's replica.
   */
  restoring?: boolean;
}

/**
 * Thrown by an applier when the central refuses one fact on its merits (say, a slot booked online
 * while the store was offline). The record is kept as rejected, the stream goes on, and the store
 * learns the decision through its feed. Any other error rolls the whole batch back.
 */
export class SyncRejection extends Error {
  /**
   * `code` (optional) names the decision for the store's rejection handler (say `slot_unavailable`:
   * the store cancels its booking); it travels in the feed's `record_rejected` change. The codes
   * are listed in docs/sync-protocol.md ("Refusals of one record").
   */
  constructor(
    readonly reason: string,
    readonly code: string | null = null,
  ) {
    super(reason);
    this.name = 'SyncRejection';
  }
}

/**
 * Applies one fact at the central, inside the batch's transaction. It must be a pure function of
 * the record (the record id is the idempotency key: it is called once per id) and must not emit
 * events of its own for the fact: the store's events arrive as `event` records and keep their ids.
 */
export type SyncApplier = (ctx: AppContext, record: PushRecord, origin: SyncOrigin) => void;

/** What a fact of a kind weighs in reconciliation: its currency and amount (null: counted only). */
export type SyncTotals = (payload: Record<string, unknown>) => { currency: string; amount_in_cents: number } | null;

/**
 * One amount a record carries, as the kind declares it (`PushKind.money`): checked at receipt as the
 * API checks an amount (an integer from 1 to 100,000,000 cents, or, `signed`, a ledger row's
 * movement of at most that much either way; `zero` allows 0), its currency among the account's, and
 * `net = amount + fee` (fees are signed in the ledger) where the record carries a net.
 */
export interface MoneyField {
  /** The field's path in the payload, named in the refusal (`sale.amount_in_cents`). */
  field: string;
  amount: unknown;
  currency?: unknown;
  fee?: unknown;
  net?: unknown;
  signed?: boolean;
  zero?: boolean;
}

/** An applier's answer: nothing (applied), or the central's refusal (a reason, or a reason and its code). */
export type Refusal = string | { reason: string; code: string | null } | null | undefined | void;

/**
 * One kind of fact a store pushes, declared by the module that owns it (`sync.push` in its index.ts).
 * The payload is checked against `payload` (the fields the applier relies on) and `consistent`
 * (rules between fields a schema cannot state) before `apply` runs; a payload failing either is
 * refused with `malformed` and no code (the store changes nothing on such a refusal).
 */
// biome-ignore lint/suspicious/noExplicitAny: a registry holds kinds of every payload type; each module's declaration is typed.
export interface PushKind<P = any> {
  payload?: TSchema;
  consistent?(payload: P): boolean;
  malformed?: string;
  apply(ctx: AppContext, record: Omit<PushRecord, 'payload'> & { payload: P }, origin: SyncOrigin): Refusal;
  /** Default: a top-level `currency` and `amount_in_cents`, as most facts carry. */
  totals?: SyncTotals;
  /**
   * The record itself moves money (posts ledger rows, or reports a sale or refund the central's
   * reports count): only such records are weighed by the review thresholds
   * (sync/central/checks/review.ts). A record that describes money another record moves (a stored
   * card payment, whose `terminal_payment` carries the amount) is counted in reconciliation only.
   */
  movesMoney?: boolean;
  /** The amounts the record carries, checked at receipt (docs/sync.md, "A central that trusts no box"). */
  money?(payload: P): MoneyField[];
  /**
   * What the central's state must allow, decided at projection before `apply` (the referenced
   * objects exist in the pushing key's scope, the object's machine allows the step): a refusal with
   * the field it concerns, or nothing. Must read only the central's state, so every core decides alike.
   */
  check?(ctx: AppContext, record: Omit<PushRecord, 'payload'> & { payload: P }, origin: SyncOrigin): { code: string; field: string; reason: string } | null;
  /**
   * Applies a run of this kind's records (consecutive in one store's stream, each of a valid
   * payload) with set statements, with the same effect as `apply` on each in order. Only for a kind
   * whose `apply` never refuses a valid payload and that has no `check` and does not move money (so
   * no record's outcome depends on another's effect): the central's projector then applies a slice's
   * runs of it as sets (sync/central/set-apply.ts), each record alone only when a set fails.
   */
  applySet?(ctx: AppContext, records: ReadonlyArray<Omit<PushRecord, 'payload'> & { payload: P }>, origin: SyncOrigin): void;
}

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

/**
 * Rows a module wrote per origin (`rowOrigin`: null for this box's own) for [from, until), as
 * reconciliation measures (ledger rows and intents: see sync/shared/row-totals.ts).
 */
export type OriginTotals = (db: Db, from: string, until: string, origin: string | null) => SummaryRow[];

/** What one module declares to sync (`PosdModule.sync`): its push kinds, feed kinds, rejection handlers and totals. */
export interface SyncDeclarations {
  push?: Record<string, PushKind>;
  feed?: Record<string, FeedApplier>;
  rejections?: Record<string, RejectionHandler>;
  totals?: OriginTotals;
}

function topLevelTotals(p: Record<string, unknown>): { currency: string; amount_in_cents: number } | null {
  return typeof p.currency === 'string' && typeof p.amount_in_cents === 'number' ? { currency: p.currency, amount_in_cents: p.amount_in_cents } : null;
}

/** Turns a push kind into the applier the engine runs: the payload checked, a refusal thrown as the central's decision. */
function applierOf(kind: PushKind): SyncApplier {
  return (ctx, record, origin) => {
    if ((kind.payload && !Value.Check(kind.payload, record.payload)) || kind.consistent?.(record.payload) === false) {
      throw new SyncRejection(kind.malformed ?? 'malformed record');
    }
    const refusal = kind.apply(ctx, record, origin);
    if (!refusal) return;
    if (typeof refusal === 'string') throw new SyncRejection(refusal);
    throw new SyncRejection(refusal.reason, refusal.code);
  };
}

/**
 * Every kind this daemon's modules declared, built once per daemon (no import-time registration),
 * so sync routes records to the owning module without naming any. One kind is one entry in one
 * module: a kind declared twice is a startup error.
 */
export class SyncRegistry {
  private readonly appliers = new Map<string, SyncApplier>();
  private readonly kinds_ = new Map<string, PushKind>();
  private readonly totals = new Map<string, SyncTotals>();
  private readonly feed = new Map<string, FeedApplier>();
  private readonly rejections = new Map<string, RejectionHandler>();
  private readonly origins: OriginTotals[] = [];

  constructor(modules: ReadonlyArray<{ name: string; sync?: SyncDeclarations }>) {
    const claim = <T>(map: Map<string, T>, what: string, kind: string, value: T, owner: string) => {
      if (map.has(kind)) throw new Error(`${owner} declares a ${what} for ${kind}, which another module already declared`);
      map.set(kind, value);
    };
    for (const m of modules) {
      const s = m.sync;
      if (!s) continue;
      for (const [kind, k] of Object.entries(s.push ?? {})) {
        claim(this.appliers, 'sync applier', kind, applierOf(k), m.name);
        this.kinds_.set(kind, k);
        if (k.totals) this.totals.set(kind, k.totals);
      }
      for (const [kind, fn] of Object.entries(s.feed ?? {})) claim(this.feed, 'feed applier', kind, fn, m.name);
      for (const [kind, fn] of Object.entries(s.rejections ?? {})) claim(this.rejections, 'rejection handler', kind, fn, m.name);
      if (s.totals) this.origins.push(s.totals);
    }
  }

  applier(kind: string): SyncApplier | undefined {
    return this.appliers.get(kind);
  }

  /** A kind's declaration, for the central's checks (sync/central/checks). */
  pushKind(kind: string): PushKind | undefined {
    return this.kinds_.get(kind);
  }

  /**
   * Whether a record of this kind may join a set (`PushKind.applySet`): the kind declares one, has
   * no check and moves no money, and the payload is one its applier takes (else the record goes
   * alone, to the refusal `apply` would give).
   */
  settable(kind: string, payload: Record<string, unknown>): PushKind | undefined {
    const k = this.kinds_.get(kind);
    if (!k?.applySet || k.check || k.movesMoney) return undefined;
    if ((k.payload && !Value.Check(k.payload, payload)) || k.consistent?.(payload) === false) return undefined;
    return k;
  }

  kinds(): string[] {
    return [...this.appliers.keys()].sort();
  }

  totalsOf(kind: string, payload: Record<string, unknown>): { currency: string; amount_in_cents: number } | null {
    return (this.totals.get(kind) ?? topLevelTotals)(payload);
  }

  /** What a record weighs for the review thresholds: its totals when its kind moves money, else null. */
  weightOf(kind: string, payload: Record<string, unknown>): { currency: string; amount_in_cents: number } | null {
    return this.kinds_.get(kind)?.movesMoney ? this.totalsOf(kind, payload) : null;
  }

  feedApplier(kind: string): FeedApplier | undefined {
    return this.feed.get(kind);
  }

  rejectionHandler(kind: string): RejectionHandler | undefined {
    return this.rejections.get(kind);
  }

  /** The modules' row totals (ledger, intents), in module order. */
  rowTotals(): readonly OriginTotals[] {
    return this.origins;
  }
}
