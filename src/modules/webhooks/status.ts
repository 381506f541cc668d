import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { provideStatus, type FailingEndpoint } from '../../system/status-sources.js';
import type { DeliveryWorker } from './worker.js';
import type { DeliveryRow, EndpointRow } from './store.js';

/**
 * The status page's webhooks panel: endpoints whose deliveries failed or are waiting to retry after
 * a failure, and the manager's "resend" button, which is the same retry as
 * `POST /webhook_endpoints/{id}/deliveries/{id}/retry`.
 */
export function provideWebhookStatus(ctx: AppContext, worker: DeliveryWorker): void {
  const failing = ctx.db.prepare(
    `SELECT d.*, e.url AS endpoint_url FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
     WHERE d.status = 'failed' OR (d.status = 'pending' AND d.attempts > 0)
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
          deliveries: [],
        });
      }
      for (const row of failing.all() as Array<DeliveryRow & { endpoint_url: EndpointRow['url'] }>) {
        let ep = byEndpoint.get(row.endpoint_id);
        if (!ep) {
          ep = { endpoint_id: row.endpoint_id, url: row.endpoint_url, account_id: row.account_id, deliveries: [] };
          byEndpoint.set(row.endpoint_id, ep);
        }
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
    async resendDelivery(deliveryId: string) {
      const row = await worker.sendNow(deliveryId);
      if (!row) return { ok: false, message: `no delivery ${deliveryId} can be sent (unknown, or its endpoint is disabled)` };
      return row.status === 'succeeded'
        ? { ok: true, message: `delivered ${row.event_type} (${row.last_response_code})` }
        : { ok: false, message: `the endpoint answered ${row.last_response_code ?? row.last_error ?? 'nothing'}; it stays scheduled` };
    },
  });
}
