import { EventEmitter } from 'node:events';
import { Type } from '@sinclair/typebox';
import type { PosdModule } from '../../src/api/module.js';
import { requireAccount } from '../../src/api/auth.js';
import { tx } from '../../src/db/database.js';
import { MODULES } from '../../src/modules/index.js';

/** Tells a test that a fixture request has reached its handler (so it is truly in flight). */
export const fixtureEvents = new EventEmitter();

/**
 * A fixture area for testing the API's common rules on a write: POST /fixture_notes stores a row,
 * optionally after a delay (to hold a request in flight).
 */
export const fixtureModule: PosdModule = {
  name: 'fixture',
  api(app, ctx) {
    ctx.db.exec('CREATE TABLE IF NOT EXISTS fixture_notes (id INTEGER PRIMARY KEY, account_id TEXT, live_mode INTEGER, text TEXT, amount INTEGER)');
    const insert = ctx.db.prepare('INSERT INTO fixture_notes (account_id, live_mode, text, amount) VALUES (?, ?, ?, ?)');
    app.post(
      '/fixture_notes',
      {
        schema: {
          body: Type.Object({
            text: Type.String({ minLength: 1 }),
            amount_in_cents: Type.Integer({ minimum: 1, maximum: 100_000_000 }),
            delay_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 5000 })),
          }),
        },
      },
      async (req, reply) => {
        const account = requireAccount(req);
        fixtureEvents.emit('handling', req.body.text);
        if (req.body.delay_ms) await new Promise((r) => setTimeout(r, req.body.delay_ms));
        const id = tx(ctx.db, () => insert.run(account.id, account.live_mode ? 1 : 0, req.body.text, req.body.amount_in_cents).lastInsertRowid);
        return reply.code(201).send({ id: Number(id), text: req.body.text, amount_in_cents: req.body.amount_in_cents });
      },
    );
    app.get('/fixture_notes/count', async () => ({ count: (ctx.db.prepare('SELECT count(*) n FROM fixture_notes').get() as { n: number }).n }));
  },
};

export const MODULES_WITH_FIXTURE = [...MODULES, fixtureModule];
