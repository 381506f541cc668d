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
          if (rows.length === 0) return [];
          const last = rows.reduce((a, b) => (b.updated_at > a.updated_at ? b : a));
          return [
            {
              endpoint_id: 'we_fixture',
              url: rows[0].url,
              account_id: 'ac_fixture',
              replay_since: '2000-01-01T00:00:00.000Z',
              failed: rows.length,
              retrying: 0,
              last: {
                delivery_id: last.id,
                event_type: last.event_type,
                attempts: last.attempts,
                last_response_code: last.last_code,
                last_error: null,
                updated_at: last.updated_at,
              },
              recovered: false,
            },
          ];
        },
        /** The page's one button per endpoint: every failed delivery sent again, one after the other. */
        replayFailures: async () => {
          const ids = (ctx.db.prepare("SELECT id FROM fixture_deliveries WHERE status = 'failed' ORDER BY id").all() as Array<{ id: string }>).map((r) => r.id);
          const results = [];
          for (const id of ids) results.push(await resend(id));
          const sent = results.filter((r) => r.ok).length;
          return { ok: sent === ids.length, message: `Resent ${ids.length}: ${sent} answered 2xx.` };
        },
        resendDelivery: (id) => resend(id),
      });
      async function resend(id: string) {
        const res = await request(receiverUrl(), { method: 'POST', body: JSON.stringify({ delivery: id }) });
        await res.body.dump();
        const ok = res.statusCode >= 200 && res.statusCode < 300;
        tx(ctx.db, () =>
          ctx.db
            .prepare('UPDATE fixture_deliveries SET status = ?, attempts = attempts + 1, last_code = ? WHERE id = ?')
            .run(ok ? 'succeeded' : 'failed', res.statusCode, id),
        );
        return { ok, message: ok ? `Delivery ${id} sent again: answered ${res.statusCode}.` : `Delivery ${id} failed again (${res.statusCode}).` };
      }
    },
  };
}
