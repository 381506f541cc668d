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
  const failing = ctx.db.prepare(
    `SELECT d.*, e.url AS endpoint_url, e.failing_since_ms AS endpoint_failing_since_ms, e.disabled AS endpoint_disabled
     FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
     WHERE (d.status = 'failed' OR (d.status = 'pending' AND d.attempts > 0))
       -- A failure a later replay of the same event delivered is no longer a problem.
       AND NOT EXISTS (SELECT 1 FROM webhook_deliveries r INDEXED BY webhook_deliveries_replayed
         WHERE r.replay_id IS NOT NULL AND r.endpoint_id = d.endpoint_id AND r.event_seq = d.event_seq AND r.seq > d.seq AND r.status = 'succeeded')
     ORDER BY d.updated_at DESC LIMIT 200`,
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
          deliveries: [],
        });
      }
      const deliveries = failing.all() as Array<DeliveryRow & { endpoint_url: string; endpoint_failing_since_ms: number | null; endpoint_disabled: number }>;
      for (const row of deliveries) {
        let ep = byEndpoint.get(row.endpoint_id);
        if (!ep) {
          ep = {
            endpoint_id: row.endpoint_id,
            url: row.endpoint_url,
            account_id: row.account_id,
            replay_since: row.endpoint_disabled ? null : row.endpoint_failing_since_ms !== null ? isoTime(row.endpoint_failing_since_ms) : row.created_at,
            deliveries: [],
          };
          byEndpoint.set(row.endpoint_id, ep);
        }
        // A replay filters on when deliveries were made: the field starts early enough to cover the
        // whole streak and every delivery listed (one made before the streak may have failed in it).
        if (ep.replay_since && row.created_at < ep.replay_since) ep.replay_since = row.created_at;
        ep.deliveries.push({
          delivery_id: worker.deliveryId(row),
          event_type: row.event_type,
          attempts: row.attempts,
          last_response_code: row.last_response_code,
          last_error: row.last_error,
          updated_at: row.updated_at,
        });
      }
      return [...byEndpoint.values()];
    },
    async replayFailures(endpointId: string, sinceIso: string) {
      if (Date.parse(sinceIso) >= ctx.clock.now()) return { ok: false, message: `${sinceIso} is in the future: nothing has failed since then.` };
      const { endpoint, replay } = await service.replayAsManager(endpointId, { since: sinceIso, statuses: ['failed'] });
      if (replay.total === 0) return { ok: true, message: `No failed delivery to ${endpoint.url} made since ${replay.filters.since} (those still being retried keep their schedule).` };
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
