import { EventEmitter } from 'node:events';
import type pg from 'pg';
import type { FeedChange } from '../shared/wire.js';
import type { FeedRow } from '../central/sync-store.js';
import type { CoreFeedSource } from './core-feed.js';
import { inTransaction } from './pool.js';
import { ChannelListener } from './listen.js';

/** The channel the relay rings and every front listens on (design 4.5). */
export const FEED_CHANNEL = 'posd_feed';
/** NOTIFY payloads must stay under 8,000 bytes: a batch naming more organizations rings several times. */
const NOTIFY_MAX_BYTES = 7_900;

/** Organization ids joined by commas into payloads under the NOTIFY limit (ids carry no commas). */
export function notifyPayloads(organizationIds: Iterable<string>, maxBytes = NOTIFY_MAX_BYTES): string[] {
  const out: string[] = [];
  let cur = '';
  for (const id of organizationIds) {
    const next = cur ? `${cur},${id}` : id;
    if (cur && Buffer.byteLength(next) > maxBytes) {
      out.push(cur);
      cur = id;
    } else cur = next;
  }
  if (cur) out.push(cur);
  return out;
}

/**
 * Copies the core's feed rows (its SQLite `sync_feed`, the transactional outbox) into PostgreSQL's
 * `sync_feed` by seq: one `unnest` insert `ON CONFLICT (position) DO NOTHING` per batch and, in the
 * same short transaction, one `pg_notify` per payload of the batch's organizations, so fronts are
 * rung exactly when the rows are visible (a notification is delivered at commit) and never by a hot
 * domain transaction. Runs on the core that holds the projector's lease (one relay: positions are
 * the core's seqs, committed in order). A failed batch is copied again by the next run.
 */
export class FeedRelay {
  private position = -1;
  private running: Promise<number> | null = null;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  readonly stats = { batches: 0, rows: 0, notifications: 0 };

  constructor(
    private readonly pool: pg.Pool,
    private readonly source: CoreFeedSource,
    private readonly batch = 1000,
    /**
     * Called with each batch before it is copied (the core publishes the read models its account
     * and key rows announce first, so a front never sees a key's feed row before the key itself).
     * A throw fails the batch, which the next run copies again.
     */
    private readonly opts: {
      beforeBatch?: (rows: readonly FeedRow[]) => Promise<void>;
      /**
       * Run first inside each batch's transaction; a throw rolls the batch back. The core checks it
       * still holds the projector's lease there, so a relay outliving its leadership inserts nothing.
       */
      guard?: (client: pg.PoolClient) => Promise<void>;
    } = {},
  ) {}

  /** Copies every row past what PostgreSQL holds; resolves with how many were copied. Calls coalesce. */
  poke(): Promise<number> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    const run = async (): Promise<number> => {
      let n = 0;
      do {
        this.again = false;
        n += await this.copy();
      } while (this.again);
      return n;
    };
    this.running = run().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  /** A slow timer beside the pokes (a missed poke costs `intervalMs` at most). */
  start(intervalMs = 1000): void {
    this.timer ??= setInterval(() => void this.poke().catch(() => undefined), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private async copy(): Promise<number> {
    if (this.position < 0) {
      this.position = (await this.pool.query<{ m: number }>('SELECT coalesce(max(position), 0) AS m FROM sync_feed')).rows[0].m;
    }
    let copied = 0;
    for (;;) {
      const rows = this.source(this.position, this.batch);
      if (!rows.length) return copied;
      if (this.opts.beforeBatch) await this.opts.beforeBatch(rows);
      await inTransaction(this.pool, async (c) => {
        if (this.opts.guard) await this.opts.guard(c);
        const ins = await c.query<{ organization_id: string }>(
          `INSERT INTO sync_feed (position, organization_id, account_id, live_mode, kind, object_id, payload, created_at, origin_store_id, to_store_id)
           SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::boolean[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[])
           ON CONFLICT (position) DO NOTHING RETURNING organization_id`,
          [
            rows.map((r) => r.seq),
            rows.map((r) => r.organization_id),
            rows.map((r) => r.account_id),
            rows.map((r) => r.live_mode === 1),
            rows.map((r) => r.kind),
            rows.map((r) => r.object_id),
            rows.map((r) => r.payload),
            rows.map((r) => r.created_at),
            rows.map((r) => r.origin_store_id ?? null),
            rows.map((r) => r.to_store_id ?? null),
          ],
        );
        const payloads = notifyPayloads(new Set(ins.rows.map((r) => r.organization_id)));
        if (payloads.length) await c.query('SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p', [FEED_CHANNEL, payloads]);
        this.stats.notifications += payloads.length;
      });
      this.position = rows[rows.length - 1].seq;
      this.stats.batches++;
      this.stats.rows += rows.length;
      copied += rows.length;
      if (rows.length < this.batch) return copied;
    }
  }
}

interface Waiter {
  organizations: ReadonlySet<string>;
  wake: (woken: boolean) => void;
}

/**
 * The per-process doorbell of the fronts' long-polls (design 4.5): one `LISTEN posd_feed`
 * connection; waiting polls kept by organization; a notification wakes the polls of the
 * organizations it names (each re-reads the feed once). Fallbacks: a slow timer wakes every waiter
 * (a lost notification costs `fallbackMs`, never a change) and so does every reconnection of the
 * LISTEN connection (notifications sent while it was down are lost).
 *
 * `mark()` before a read and `wait(..., mark)` after it close the gap between the two: a
 * notification that came in between wakes the wait at once.
 *
 * Events (for metrics and tests): `waiting` (a poll began to wait), `reconnected` (the LISTEN
 * connection is back and everyone was woken).
 */
export class FeedWaiter extends EventEmitter {
  private readonly listener: ChannelListener;
  private readonly byOrg = new Map<string, Set<Waiter>>();
  private readonly all = new Set<Waiter>();
  /** Bumped per organization notified, and `epoch` for everyone (reconnect, fallback). */
  private readonly versions = new Map<string, number>();
  private epoch = 0;
  private fallback: NodeJS.Timeout | undefined;
  private stopped = false;
  readonly stats = { notifications: 0, wakes: 0, fallbacks: 0, reconnects: 0 };

  constructor(
    config: pg.ClientConfig,
    private readonly opts: { fallbackMs?: number; maxBackoffMs?: number } = {},
  ) {
    super();
    this.listener = new ChannelListener(config, FEED_CHANNEL, { maxBackoffMs: opts.maxBackoffMs, applicationName: 'posd-feed-listen' });
    this.listener.on('notify', (payload: string) => {
      this.stats.notifications++;
      this.wakeOrganizations(payload.split(','));
    });
    this.listener.on('reconnected', () => {
      this.stats.reconnects++;
      // What was notified while the connection was down is lost: everyone re-reads.
      this.wakeAll();
      this.emit('reconnected');
    });
  }

  /** Connects and listens; resolves once LISTEN is in force. */
  async start(): Promise<void> {
    this.stopped = false;
    await this.listener.start();
    this.fallback = setInterval(() => {
      if (!this.all.size) return;
      this.stats.fallbacks++;
      this.wakeAll();
    }, this.opts.fallbackMs ?? 5000);
    this.fallback.unref();
  }

  /** The LISTEN session's backend pid (tests cut it with pg_terminate_backend). */
  pid(): Promise<number | null> {
    return this.listener.pid();
  }

  /** How many long-polls wait now. */
  get waiting(): number {
    return this.all.size;
  }

  /** A mark to pass to `wait`, taken before the read the wait follows. */
  mark(organizations: ReadonlySet<string>): number {
    let v = this.epoch;
    for (const o of organizations) v += this.versions.get(o) ?? 0;
    return v;
  }

  /**
   * Resolves true when a notification names one of these organizations (or everyone is woken)
   * after `mark` was taken, false after `timeoutMs` or on `signal`.
   */
  wait(organizations: ReadonlySet<string>, mark: number, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    if (this.mark(organizations) !== mark) return Promise.resolve(true);
    if (signal?.aborted || this.stopped) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const waiter: Waiter = {
        organizations,
        wake: (woken) => {
          if (!this.all.delete(waiter)) return;
          for (const o of organizations) {
            const set = this.byOrg.get(o);
            set?.delete(waiter);
            if (set && !set.size) this.byOrg.delete(o);
          }
          clearTimeout(timer);
          signal?.removeEventListener('abort', aborted);
          if (woken) this.stats.wakes++;
          resolve(woken);
        },
      };
      const aborted = () => waiter.wake(false);
      const timer = setTimeout(aborted, Math.max(0, timeoutMs));
      timer.unref();
      signal?.addEventListener('abort', aborted, { once: true });
      this.all.add(waiter);
      for (const o of organizations) {
        let set = this.byOrg.get(o);
        if (!set) this.byOrg.set(o, (set = new Set()));
        set.add(waiter);
      }
      this.emit('waiting', organizations);
    });
  }

  private wakeOrganizations(orgs: string[]): void {
    for (const o of orgs) {
      if (!o) continue;
      this.versions.set(o, (this.versions.get(o) ?? 0) + 1);
      for (const w of [...(this.byOrg.get(o) ?? [])]) w.wake(true);
    }
  }

  private wakeAll(): void {
    this.epoch++;
    for (const w of [...this.all]) w.wake(true);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.fallback);
    for (const w of [...this.all]) w.wake(false);
    await this.listener.stop();
  }
}

/** Whose feed a long-poll reads: the key's accounts, its organization's account-less rows, minus its own box's echoes. */
export interface FeedScope {
  accountIds: readonly string[];
  organizationId: string;
  /** The asking box ('' for an older box: every row). */
  storeId: string;
}

interface PgFeedRow {
  max: number;
  position: number | null;
  organization_id: string;
  account_id: string | null;
  live_mode: boolean;
  kind: string;
  object_id: string | null;
  payload: string;
  created_at: string;
}

/**
 * One read of the feed after `position` for a scope, and the cursor to answer: the last row's
 * position on a full page, otherwise the feed's highest position (read in the same statement, so
 * the same snapshot: the relay commits positions in order, so nothing below it can appear later).
 */
export async function feedAfter(
  pool: pg.Pool | pg.PoolClient,
  scope: FeedScope,
  position: number,
  limit: number,
): Promise<{ changes: FeedChange[]; cursor: number }> {
  const res = await pool.query<PgFeedRow>(
    `SELECT m.max, f.* FROM (SELECT coalesce(max(position), 0) AS max FROM sync_feed) m
     LEFT JOIN LATERAL (
       SELECT position, organization_id, account_id, live_mode, kind, object_id, payload, created_at FROM sync_feed
       WHERE position > $1 AND (account_id = ANY($2::text[]) OR (account_id IS NULL AND organization_id = $3))
         AND (origin_store_id IS NULL OR origin_store_id <> $4) AND (to_store_id IS NULL OR $4 = '' OR to_store_id = $4)
       ORDER BY position LIMIT $5
     ) f ON true`,
    [position, scope.accountIds, scope.organizationId, scope.storeId, limit],
  );
  const rows = res.rows.filter((r) => r.position !== null);
  const changes = rows.map(
    (r): FeedChange => ({
      seq: r.position!,
      kind: r.kind,
      account_id: r.account_id,
      organization_id: r.organization_id,
      live_mode: r.live_mode,
      object_id: r.object_id,
      payload: JSON.parse(r.payload),
      created_at: r.created_at,
    }),
  );
  const max = res.rows[0]?.max ?? 0;
  const cursor = changes.length === limit ? changes[changes.length - 1].seq : Math.max(position, max);
  return { changes, cursor };
}

/**
 * `GET /sync/feed` at a front: read; if nothing is there and the box may wait, wait for the
 * doorbell of its organization (or the fallback), read again, until `waitMs` has passed.
 */
export async function pollFeed(
  pool: pg.Pool,
  waiter: FeedWaiter,
  scope: FeedScope,
  position: number,
  limit: number,
  waitMs: number,
  signal?: AbortSignal,
): Promise<{ changes: FeedChange[]; cursor: number }> {
  const orgs = new Set([scope.organizationId]);
  const deadline = performance.now() + waitMs;
  for (;;) {
    const mark = waiter.mark(orgs);
    const page = await feedAfter(pool, scope, position, limit);
    const left = deadline - performance.now();
    if (page.changes.length || left <= 0 || signal?.aborted) return page;
    // The cursor may pass rows of other accounts meanwhile; the next read starts from it.
    position = page.cursor;
    if (!(await waiter.wait(orgs, mark, left, signal))) return page;
  }
}
