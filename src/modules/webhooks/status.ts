import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { provideStatus, type FailingEndpoint } from '../../system/status-sources.js';
import type { DeliveryWorker } from './worker.js';
import type { DeliveryRow, EndpointRow } from './store.js';
import type { WebhooksService } from './service.js';

/**
 * The status page's webhooks panel: endpoints whose deliveries failed or are waiting to retry after
 * a failure, the manager's "resend" button, which is the same retry as
 * `POST /webhook_endpoints/{id}/deliveries/{id}/retry`, and its "replay failures since …", which is
 * the same bulk replay as `POST /webhook_endpoints/{id}/replays` with `statuses: ["failed"]`.
 */
export function provideWebhookStatus(ctx: AppContext, worker: DeliveryWorker, service: WebhooksService): void {
  // Deliveries that failed: given up, or waiting to retry after a failure. One line per endpoint
  // on the page, however many: counted, not listed.
  const failingRows = ctx.db.prepare(
    `SELECT d.*, e.url AS endpoint_url, e.failing_since_ms AS endpoint_failing_since_ms, e.disabled AS endpoint_disabled
     FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
     WHERE d.status = 'failed' OR (d.status = 'pending' AND d.attempts > 0)`,
  );
  // Only a replay makes a second delivery of an event to an endpoint (a manual retry sends the same
  // row again), and a replay records its rows' seq range: an event's newest delivery among the
  // endpoint's replays since its oldest failure reads those replays' rows only, not its history.
  // A failure whose event was delivered again since (a replay, the page's button) is settled.
  const replayedEvents = ctx.db.prepare(
    `SELECT d.event_seq, max(d.seq) AS seq FROM webhook_replays r
     JOIN webhook_deliveries d ON d.seq BETWEEN r.first_seq AND r.last_seq AND d.endpoint_id = r.endpoint_id
     WHERE r.endpoint_id = ? AND r.last_seq > ? AND d.event_seq IS NOT NULL GROUP BY d.event_seq`,
  );
  // Endpoints failing for an hour or more, and those disabled after failing: one line each, even
  // when no delivery of theirs is still listed (an auto-disable cancels the pending ones).
  const longFailing = ctx.db.prepare(
    `SELECT id, url, account_id, failing_since_ms, disabled, disabled_reason FROM webhook_endpoints
     WHERE failing_since_ms IS NOT NULL AND (failing_since_ms <= ? OR disabled = 1) ORDER BY failing_since_ms LIMIT 100`,
  );
  provideStatus(ctx, {
    failingWebhooks(): FailingEndpoint[] {
      const byEndpoint = new Map<string, FailingEndpoint>();
      const rows = longFailing.all(ctx.clock.now() - ctx.config.webhooks.failing_notice_ms) as Array<
        Pick<EndpointRow, 'id' | 'url' | 'account_id' | 'disabled' | 'disabled_reason'> & { failing_since_ms: number }
      >;
      for (const ep of rows) {
        byEndpoint.set(ep.id, {
          endpoint_id: ep.id,
          url: ep.url,
          account_id: ep.account_id,
          failing_since: isoTime(ep.failing_since_ms),
          disabled_reason: ep.disabled ? ep.disabled_reason : null,
          // A disabled endpoint is not replayed to (enable it with replay_missed instead).
          replay_since: ep.disabled ? null : isoTime(ep.failing_since_ms),
          failed: 0,
          retrying: 0,
          last: null,
          recovered: false,
        });
      }
      type Failing = DeliveryRow & { endpoint_url: string; endpoint_failing_since_ms: number | null; endpoint_disabled: number };
      const perEndpoint = new Map<string, Failing[]>();
      for (const row of failingRows.all() as Failing[]) perEndpoint.set(row.endpoint_id, [...(perEndpoint.get(row.endpoint_id) ?? []), row]);
      for (const [endpointId, all] of perEndpoint) {
        const minSeq = Math.min(...all.map((r) => r.seq));
        const newest = new Map((replayedEvents.all(endpointId, minSeq) as Array<{ event_seq: number; seq: number }>).map((r) => [r.event_seq, r.seq]));
        const rows = all.filter((r) => r.event_seq === null || (newest.get(r.event_seq) ?? r.seq) <= r.seq);
        if (rows.length === 0) continue;
        const first = rows[0];
        const ep: FailingEndpoint = byEndpoint.get(endpointId) ?? {
          endpoint_id: endpointId,
          url: first.endpoint_url,
          account_id: first.account_id,
          replay_since: first.endpoint_disabled ? null : first.endpoint_failing_since_ms !== null ? isoTime(first.endpoint_failing_since_ms) : first.created_at,
          failed: 0,
          retrying: 0,
          last: null,
          recovered: false,
        };
        byEndpoint.set(endpointId, ep);
        // A replay filters on when deliveries were made: the button's start covers the whole streak
        // and every failed delivery (one made before the streak may have failed in it).
        const oldest = rows.reduce((a, r) => (r.created_at < a ? r.created_at : a), rows[0].created_at);
        if (ep.replay_since && oldest < ep.replay_since) ep.replay_since = oldest;
        ep.failed = rows.filter((r) => r.status === 'failed').length;
        ep.retrying = rows.length - ep.failed;
        // A success since the failures ends the endpoint's streak: it answers again.
        ep.recovered = first.endpoint_failing_since_ms === null && !first.endpoint_disabled;
        const last = rows.reduce((a, r) => (r.updated_at > a.updated_at || (r.updated_at === a.updated_at && r.seq > a.seq) ? r : a));
        ep.last = {
          delivery_id: worker.deliveryId(last),
          event_type: last.event_type,
          attempts: last.attempts,
          last_response_code: last.last_response_code,
          last_error: last.last_error,
          updated_at: last.updated_at,
        };
      }
      return [...byEndpoint.values()];
    },
    async replayFailures(endpointId: string, sinceIso: string) {
      if (Date.parse(sinceIso) >= ctx.clock.now()) return { ok: false, message: `${sinceIso} is in the future: nothing has failed since then.` };
      const { endpoint, replay } = await service.replayAsManager(endpointId, { since: sinceIso, statuses: ['failed'] });
      if (replay.total === 0)
        return {
          ok: true,
          message: `No failed delivery to ${endpoint.url} made since ${replay.filters.since} (those still being retried keep their schedule).`,
        };
      return {
        ok: true,
        message: `Replaying ${replay.total} failed ${replay.total === 1 ? 'delivery' : 'deliveries'} to ${endpoint.url} made since ${replay.filters.since} (replay ${replay.id}).`,
      };
    },
    async resendDelivery(deliveryId: string) {
      const row = await worker.sendNow(deliveryId);
      if (!row) return { ok: false, message: `no delivery ${deliveryId} can be sent (unknown, or its endpoint is disabled)` };
      return row.status === 'succeeded'
        ? { ok: true, message: `delivered ${row.event_type} (${row.last_response_code})` }
        : { ok: false, message: `the endpoint answered ${row.last_response_code ?? row.last_error ?? 'nothing'}; it stays scheduled` };
    },
  });
}
