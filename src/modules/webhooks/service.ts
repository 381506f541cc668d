import type { AppContext } from '../../context.js';
import { tx } from '../../db/database.js';
import { newId } from '../../ids.js';
import { isoTime } from '../../clock.js';
import { ApiError, invalid, notFound } from '../../errors.js';
import { catalogueEntry, examplePayload, EVENT_TYPES } from '../../events/catalogue.js';
import { newSigningSecret } from '../../system/standard-webhooks.js';
import type { SecretBox } from '../../system/secret-box.js';
import type { UrlGuard } from '../../system/url-guard.js';
import type { DeliveryWorker } from './worker.js';
import { webhooksStore, type AttemptRow, type DeliveryRow, type EndpointRow, type ReplayFilter, type WebhooksStore } from './store.js';
import { replayDeliveries, replayMissed, replayView, type ReplayView } from './replay.js';
import { endpointHistoryStore, type HistoryRow } from './history.js';
import { checkedTypes } from './known-types.js';

/** How long a rotated-out secret keeps signing when the request names no overlap (Svix's default). */
export const DEFAULT_ROTATION_OVERLAP_S = 24 * 3600;

export interface EndpointView {
  id: string;
  account_id: string;
  live_mode: boolean;
  url: string;
  description: string | null;
  disabled: boolean;
  disabled_reason: string | null;
  /** The event types it receives; null: all. */
  filter_types: string[] | null;
  rate_limit: number | null;
  max_in_flight: number | null;
  /** First-in-first-out: one delivery at a time, the next after the earlier one succeeded or was given up. */
  fifo: boolean;
  /** Since when its deliveries have failed without a success between (null: not failing). */
  failing_since: string | null;
  /** Until when deliveries are also signed with the secret a rotation replaced (null: no overlap). */
  previous_secret_expires_at: string | null;
  metadata: Record<string, string>;
  created_at: string;
  updated_at: string;
  /** The hosted (Svix) names of the two times. */
  createdAt: string;
  updatedAt: string;
}

export interface DeliveryView {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  account_id: string;
  connected: boolean;
  test: boolean;
  status: DeliveryRow['status'];
  attempt_count: number;
  response_code: number | null;
  last_error: string | null;
  next_attempt_at: string | null;
  created_at: string;
  updated_at: string;
  attempts: Array<{
    attempt: number;
    manual: boolean;
    attempted_at: string;
    webhook_timestamp: number;
    duration_ms: number;
    response_code: number | null;
    /** The first 1,024 bytes of the answer's body (UTF-8); null without one. */
    response_body: string | null;
    error: string | null;
  }>;
}

export function endpointView(row: EndpointRow): EndpointView {
  return {
    id: row.id,
    account_id: row.account_id,
    live_mode: row.live_mode === 1,
    url: row.url,
    description: row.description,
    disabled: row.disabled === 1,
    disabled_reason: row.disabled_reason,
    filter_types: row.filter_types === null ? null : (JSON.parse(row.filter_types) as string[]),
    rate_limit: row.rate_limit,
    max_in_flight: row.max_in_flight,
    fifo: row.fifo === 1,
    failing_since: row.failing_since_ms === null ? null : isoTime(row.failing_since_ms),
    previous_secret_expires_at: row.previous_secret_expires_ms === null ? null : isoTime(row.previous_secret_expires_ms),
    metadata: JSON.parse(row.metadata ?? '{}') as Record<string, string>,
    created_at: row.created_at,
    updated_at: row.updated_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function deliveryView(row: DeliveryRow, attempts: AttemptRow[]): DeliveryView {
  return {
    id: row.id,
    endpoint_id: row.endpoint_id,
    event_id: row.event_id,
    event_type: row.event_type,
    account_id: row.event_account_id,
    connected: row.event_account_id !== row.account_id,
    test: row.payload !== null,
    status: row.status,
    attempt_count: row.attempts,
    response_code: row.last_response_code,
    last_error: row.last_error,
    next_attempt_at: row.status === 'pending' && row.next_attempt_ms !== null ? isoTime(row.next_attempt_ms) : null,
    created_at: row.created_at,
    updated_at: row.updated_at,
    attempts: attempts.map((a) => ({
      attempt: a.attempt,
      manual: a.manual === 1,
      attempted_at: a.attempted_at,
      webhook_timestamp: a.webhook_timestamp,
      duration_ms: a.duration_ms,
      response_code: a.response_code,
      response_body: a.response_body,
      error: a.error,
    })),
  };
}

export interface ReplayInput {
  since?: string;
  until?: string;
  event_types?: string[] | null;
  statuses?: Array<DeliveryRow['status']> | null;
}

export interface Scope {
  accountId: string;
  liveMode: boolean;
}

/** Endpoint rules. Endpoints belong to one account and environment; anything else answers 404. */
export class WebhooksService {
  private readonly store: WebhooksStore;
  private readonly history: ReturnType<typeof endpointHistoryStore>;

  constructor(
    private readonly ctx: AppContext,
    private readonly guard: UrlGuard,
    private readonly box: SecretBox,
    private readonly worker: DeliveryWorker,
  ) {
    this.store = webhooksStore(ctx.db);
    this.history = endpointHistoryStore(ctx.db);
  }

  /** A user-given URL through the one outbound guard (creation and a PATCH that moves the endpoint). */
  private async checkedUrl(url: string): Promise<string> {
    const refused = await this.guard.check(url);
    if (refused.length > 0) throw new ApiError('webhook_url_refused', { errors: { url: refused } });
    return url;
  }

  private now(): string {
    return isoTime(this.ctx.clock.now());
  }

  async create(
    scope: Scope,
    input: {
      url: string;
      description?: string | null;
      filter_types?: string[] | null;
      rate_limit?: number | null;
      max_in_flight?: number | null;
      fifo?: boolean;
      metadata?: Record<string, string>;
    },
  ): Promise<EndpointView & { signingSecret: string }> {
    await this.checkedUrl(input.url);
    const filterTypes = checkedTypes('filter_types', input.filter_types);
    const secret = newSigningSecret();
    const now = this.now();
    const id = newId('ep');
    tx(this.ctx.db, () => {
      this.store.insertEndpoint({
        id,
        account_id: scope.accountId,
        live_mode: scope.liveMode ? 1 : 0,
        url: input.url,
        description: input.description ?? null,
        secret: this.box.seal(secret),
        // Events already written are not sent to an endpoint registered after them.
        from_seq: this.store.maxEventSeq(),
        filter_types: filterTypes === null ? null : JSON.stringify(filterTypes),
        metadata: JSON.stringify(input.metadata ?? {}),
        created_at: now,
        updated_at: now,
      });
      if (input.rate_limit != null || input.max_in_flight != null) this.store.setGates(id, input.rate_limit ?? null, input.max_in_flight ?? null, now);
      if (input.fifo) this.store.setFifo(id, true, this.ctx.clock.now(), now);
    });
    if (input.rate_limit != null || input.max_in_flight != null || input.fifo) this.worker.forgetTarget(id);
    return { ...endpointView(this.store.endpoint(id)!), signingSecret: secret };
  }

  /** The endpoint if it belongs to one of the accounts of the scope. */
  find(accountIds: string[], liveMode: boolean, id: string): EndpointRow {
    const row = this.store.endpoint(id);
    if (!row || !accountIds.includes(row.account_id) || (row.live_mode === 1) !== liveMode) throw notFound('webhook endpoint', id);
    return row;
  }

  list(accountIds: string[], liveMode: boolean, limit: number, offset: number): { rows: EndpointView[]; total: number } {
    const page = this.store.endpointsPage(accountIds, liveMode, limit, offset);
    return { rows: page.rows.map(endpointView), total: page.total };
  }

  async update(
    scope: Scope,
    id: string,
    patch: {
      url?: string;
      description?: string | null;
      disabled?: boolean;
      filter_types?: string[] | null;
      rate_limit?: number | null;
      max_in_flight?: number | null;
      fifo?: boolean;
      metadata?: Record<string, string>;
      replay_missed?: boolean;
    },
    /** Who asked (the API key's id), kept in the endpoint's history with a URL change. */
    actor: string | null = null,
  ): Promise<EndpointView & { replay?: ReplayView }> {
    const filterTypes = patch.filter_types === undefined ? undefined : checkedTypes('filter_types', patch.filter_types);
    const url = patch.url === undefined ? undefined : await this.checkedUrl(patch.url);
    return tx(this.ctx.db, () => {
      const row = this.find([scope.accountId], scope.liveMode, id);
      const now = this.now();
      const disabled = patch.disabled === undefined ? row.disabled === 1 : patch.disabled;
      if (patch.replay_missed && !(row.disabled === 1 && !disabled)) {
        throw invalid({ replay_missed: 'only when enabling a disabled endpoint (with disabled: false)' });
      }
      this.store.updateEndpoint({
        id,
        description: patch.description === undefined ? row.description : patch.description,
        disabled: disabled ? 1 : 0,
        disabled_reason: disabled ? (row.disabled === 1 ? row.disabled_reason : 'Disabled through the API.') : null,
        updated_at: now,
      });
      // A moved receiver keeps the endpoint's id, secret, filters and deliveries; the move is audited.
      if (url !== undefined && url !== row.url) {
        this.history.moveUrl(row, url, actor, now);
        this.worker.forgetTarget(id);
      }
      if (filterTypes !== undefined) this.store.setFilterTypes(id, filterTypes, now);
      // The map as given replaces the one kept, as checkouts' and customers' metadata do.
      if (patch.metadata !== undefined) this.store.setMetadata(id, JSON.stringify(patch.metadata), now);
      if (patch.rate_limit !== undefined || patch.max_in_flight !== undefined) {
        this.store.setGates(
          id,
          patch.rate_limit === undefined ? row.rate_limit : patch.rate_limit,
          patch.max_in_flight === undefined ? row.max_in_flight : patch.max_in_flight,
          now,
        );
        this.worker.forgetTarget(id);
      }
      if (patch.fifo !== undefined && patch.fifo !== (row.fifo === 1)) {
        this.store.setFifo(id, patch.fifo, this.ctx.clock.now(), now);
        this.worker.forgetTarget(id);
        // Rows read ahead carry the schedules FIFO just changed.
        this.worker.forgetReadAhead();
        this.worker.wake();
      }
      let replay: ReplayView | undefined;
      if (disabled && row.disabled === 0) {
        this.store.cancelPending(id, 'endpoint_disabled: disabled through the API', now);
        this.store.markDisabled(id, this.ctx.clock.now(), this.store.cursor());
        this.worker.forgetReadAhead();
      } else if (!disabled && row.disabled === 1) {
        // The filters set in this same request apply to what is replayed.
        if (patch.replay_missed) replay = replayMissed(this.store, this.ctx.clock, this.store.endpoint(id)!, (a) => this.worker.parentOf(a));
        this.store.markDisabled(id, null, null);
        this.worker.endFailing(id);
        this.worker.wake();
      }
      const view = endpointView(this.store.endpoint(id)!);
      return replay ? { ...view, replay } : view;
    });
  }

  /**
   * A new signing secret (returned only here); the one it replaces keeps signing every delivery
   * beside it for `overlapSeconds` (both signatures in `webhook-signature`), then stops.
   */
  rotateSecret(scope: Scope, id: string, overlapSeconds = DEFAULT_ROTATION_OVERLAP_S): EndpointView & { signingSecret: string } {
    const secret = newSigningSecret();
    const view = tx(this.ctx.db, () => {
      this.find([scope.accountId], scope.liveMode, id);
      this.store.rotateSecret({ id, secret: this.box.seal(secret), expires_ms: this.ctx.clock.now() + overlapSeconds * 1000, updated_at: this.now() });
      return endpointView(this.store.endpoint(id)!);
    });
    this.worker.forgetTarget(id);
    return { ...view, signingSecret: secret };
  }

  /** A bulk replay of the endpoint's deliveries (replay.ts). */
  replay(scope: Scope, id: string, input: ReplayInput): Promise<ReplayView> {
    return this.replayEndpoint(this.find([scope.accountId], scope.liveMode, id), input);
  }

  /**
   * The same bulk replay for the box's manager (the status page's button): any endpoint of the box,
   * which the manager looks after whatever account it belongs to.
   */
  async replayAsManager(endpointId: string, input: ReplayInput): Promise<{ endpoint: EndpointRow; replay: ReplayView }> {
    const endpoint = this.store.endpoint(endpointId);
    if (!endpoint) throw notFound('webhook endpoint', endpointId);
    return { endpoint, replay: await this.replayEndpoint(endpoint, input) };
  }

  private async replayEndpoint(endpoint: EndpointRow, input: ReplayInput): Promise<ReplayView> {
    if (endpoint.disabled) throw new ApiError('webhook_endpoint_disabled');
    const filter: ReplayFilter = {
      since: input.since === undefined ? isoTime(0) : isoTime(Date.parse(input.since)),
      until: input.until === undefined ? isoTime(this.ctx.clock.now() + 1) : isoTime(Date.parse(input.until)),
      event_types: checkedTypes('event_types', input.event_types),
      statuses: input.statuses ?? null,
    };
    if (filter.since >= filter.until) throw invalid({ until: 'must be after since' });
    // The worker starts on the first slice while the next ones are made.
    const view = await replayDeliveries(this.ctx.db, this.store, this.ctx.clock, endpoint, filter, { onSlice: () => this.worker.wake() });
    this.worker.wake();
    return view;
  }

  replayStatus(accountIds: string[], liveMode: boolean, endpointId: string, replayId: string): ReplayView {
    const endpoint = this.find(accountIds, liveMode, endpointId);
    const r = this.store.replayById(replayId);
    if (!r || r.endpoint_id !== endpoint.id) throw notFound('replay', replayId);
    return replayView(this.store, r);
  }

  remove(scope: Scope, id: string): EndpointView {
    return tx(this.ctx.db, () => {
      const row = this.find([scope.accountId], scope.liveMode, id);
      this.store.deleteEndpoint(id);
      this.worker.forgetReadAhead();
      return endpointView(row);
    });
  }

  /** The endpoint's audited changes, newest first. */
  historyOf(endpoint: EndpointRow, limit: number, offset: number): { rows: HistoryRow[]; total: number } {
    return this.history.page(endpoint.id, limit, offset);
  }

  deliveries(endpoint: EndpointRow, limit: number, offset: number): { rows: DeliveryView[]; total: number } {
    const page = this.store.deliveriesPage(endpoint.id, limit, offset);
    return { rows: page.rows.map((d) => deliveryView(d, this.store.attemptsOf(d.seq))), total: page.total };
  }

  async retry(scope: Scope, endpointId: string, deliveryId: string): Promise<DeliveryView> {
    const endpoint = this.find([scope.accountId], scope.liveMode, endpointId);
    const delivery = this.store.delivery(deliveryId);
    if (!delivery || delivery.endpoint_id !== endpoint.id) throw notFound('delivery', deliveryId);
    if (endpoint.disabled) throw new ApiError('webhook_endpoint_disabled');
    const after = await this.worker.sendNow(deliveryId);
    if (!after) throw notFound('delivery', deliveryId);
    return deliveryView(after, this.store.attemptsOf(after.seq));
  }

  /** Spec 6.6's testing tab: an example of any catalogue event, sent now, not retried on its own. */
  async sendTest(scope: Scope, endpointId: string, eventType: string): Promise<DeliveryView> {
    const endpoint = this.find([scope.accountId], scope.liveMode, endpointId);
    const entry = catalogueEntry(eventType);
    if (!entry) throw invalid({ event_type: `must be one of the catalogue's events (${EVENT_TYPES.length}; see docs/events.md)` });
    if (endpoint.disabled) throw new ApiError('webhook_endpoint_disabled');
    const now = this.now();
    const payload = examplePayload(entry.type, { accountId: endpoint.account_id, liveMode: endpoint.live_mode === 1, createdAt: now }, this.ctx)!;
    const id = newId('whd');
    tx(this.ctx.db, () =>
      this.store.insertDelivery({
        id,
        account_id: endpoint.account_id,
        live_mode: endpoint.live_mode,
        endpoint_id: endpoint.id,
        event_id: newId('msg'),
        event_seq: null,
        event_type: entry.type,
        event_account_id: endpoint.account_id,
        payload: JSON.stringify(payload),
        // Not due on its own: only this request sends it (and later manual retries).
        next_attempt_ms: null,
        created_at: now,
      }),
    );
    const after = await this.worker.sendNow(id);
    return deliveryView(after!, this.store.attemptsOf(after!.seq));
  }
}

// Read without the module running, by doctor, the status page's verdict and backups.
export { sealedSecretSample, endpointCount, webhookHealth } from './store.js';
