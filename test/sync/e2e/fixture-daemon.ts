/**
 * A posd daemon process for the end-to-end sync test: the real daemon (`startDaemon` with every
 * module) plus one fixture area, `POST /api/test_sales`, that records a sale the way the money
 * module records one (the row, its sync record and its event in one transaction) and, at the
 * central, the applier of that kind. It stands in for `POST /api/cash_sales` until the money branch
 * ships that route. Configured by POSD_* variables like `posd serve`; prints one JSON line when
 * listening.
 */
import { Type } from '@sinclair/typebox';
import { loadConfig } from '../../../src/config.js';
import { startDaemon } from '../../../src/daemon.js';
import { tx } from '../../../src/db/database.js';
import { MODULES } from '../../../src/modules/index.js';
import { requireAccount } from '../../../src/api/auth.js';
import { appendSyncRecord } from '../../../src/sync/outbox.js';
import { registerSyncApplier } from '../../../src/sync/appliers.js';
import type { PosdModule } from '../../../src/api/module.js';

const SALES_TABLE = `CREATE TABLE IF NOT EXISTS test_sales (id TEXT PRIMARY KEY, account_id TEXT NOT NULL, live_mode INTEGER NOT NULL,
  amount_in_cents INTEGER NOT NULL, currency TEXT NOT NULL, created_at TEXT NOT NULL) STRICT`;

registerSyncApplier('test_sale', (ctx, record) => {
  ctx.db.exec(SALES_TABLE);
  const p = record.payload as { id: string; amount_in_cents: number; currency: string };
  ctx.db
    .prepare('INSERT INTO test_sales (id, account_id, live_mode, amount_in_cents, currency, created_at) VALUES (?, ?, ?, ?, ?, ?)')
    .run(p.id, record.account_id, record.live_mode ? 1 : 0, p.amount_in_cents, p.currency, record.created_at);
});

const salesModule: PosdModule = {
  name: 'test-sales',
  api(app, ctx) {
    ctx.db.exec(SALES_TABLE);
    const insert = ctx.db.prepare(
      'INSERT INTO test_sales (id, account_id, live_mode, amount_in_cents, currency, created_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING',
    );
    app.post(
      '/test_sales',
      { schema: { body: Type.Object({ id: Type.String({ pattern: '^ts_[a-z0-9]+$' }), amount_in_cents: Type.Integer({ minimum: 1 }) }) } },
      async (req, reply) => {
        const account = requireAccount(req);
        const createdAt = new Date(ctx.clock.now()).toISOString();
        // The client's id is the natural key: a retry after a lost response records nothing twice.
        const created = tx(ctx.db, () => {
          const fresh = insert.run(req.body.id, account.id, account.live_mode ? 1 : 0, req.body.amount_in_cents, 'GTQ', createdAt).changes === 1;
          if (!fresh) return false;
          const payload = { id: req.body.id, amount_in_cents: req.body.amount_in_cents, currency: 'GTQ' };
          appendSyncRecord(ctx.db, { kind: 'test_sale', accountId: account.id, liveMode: account.live_mode, createdAt, payload });
          ctx.outbox.emit({ type: 'intent.succeeded', accountId: account.id, liveMode: account.live_mode, objectId: req.body.id, payload });
          return true;
        });
        return reply.code(created ? 201 : 200).send({ id: req.body.id, created });
      },
    );
  },
};

const config = loadConfig();
const daemon = await startDaemon({ config, modules: [...MODULES, salesModule] });
process.stdout.write(`${JSON.stringify({ listening: daemon.url })}\n`);
const stop = () => {
  daemon.stop().then(() => process.exit(0), () => process.exit(1));
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
