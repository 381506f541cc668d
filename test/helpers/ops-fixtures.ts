import { request } from 'undici';
import type { PosdModule } from '../../src/api/module.js';
import { tx } from '../../src/db/database.js';
import { provideStatus } from '../../src/system/status-sources.js';

/**
 * Stands in for the webhooks area on the status page until that area lands in this branch: a real
 * table of failed deliveries and a resend function that really POSTs to `receiverUrl` and records
 * the outcome. What is under test is the page's side: listing, the CSRF-protected button, the call.
 */
export function fixtureWebhooksModule(receiverUrl: () => string): PosdModule {
  return {
    name: 'fixture-webhooks',
    api(_app, ctx) {
      ctx.db.exec(`CREATE TABLE IF NOT EXISTS fixture_deliveries (
        id TEXT PRIMARY KEY, url TEXT NOT NULL, event_type TEXT NOT NULL, status TEXT NOT NULL,
        attempts INTEGER NOT NULL, last_code INTEGER, updated_at TEXT NOT NULL)`);
      provideStatus(ctx, {
        failingWebhooks: () => {
          const rows = ctx.db.prepare("SELECT * FROM fixture_deliveries WHERE status = 'failed' ORDER BY id").all() as Array<{
            id: string;
            url: string;
            event_type: string;
            attempts: number;
            last_code: number | null;
            updated_at: string;
          }>;
          return rows.length === 0
            ? []
            : [
                {
                  endpoint_id: 'we_fixture',
                  url: rows[0].url,
                  account_id: 'ac_fixture',
                  deliveries: rows.map((r) => ({
                    delivery_id: r.id,
                    event_type: r.event_type,
                    attempts: r.attempts,
                    last_response_code: r.last_code,
                    last_error: null,
                    updated_at: r.updated_at,
                  })),
                },
              ];
        },
        resendDelivery: async (id) => {
          const res = await request(receiverUrl(), { method: 'POST', body: JSON.stringify({ delivery: id }) });
          await res.body.dump();
          const ok = res.statusCode >= 200 && res.statusCode < 300;
          tx(ctx.db, () =>
            ctx.db
              .prepare('UPDATE fixture_deliveries SET status = ?, attempts = attempts + 1, last_code = ? WHERE id = ?')
              .run(ok ? 'succeeded' : 'failed', res.statusCode, id),
          );
          return { ok, message: ok ? `Delivery ${id} sent again: answered ${res.statusCode}.` : `Delivery ${id} failed again (${res.statusCode}).` };
        },
      });
    },
  };
}
