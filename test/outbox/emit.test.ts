import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { openDatabase, tx } from '../../src/db/database.js';
import { Outbox } from '../../src/outbox/events.js';

describe('Outbox.emit', () => {
  it('returns the event as stored: its payload is the JSON written, read back like a stored one', () => {
    const db = openDatabase(':memory:');
    try {
      const outbox = new Outbox(db, systemClock);
      const payload = { at: new Date(0), amount_in_cents: 1, gone: undefined, nested: { id: 'in_1' } };
      const ev = tx(db, () => outbox.emit({ type: 'intent.succeeded', accountId: 'ac_1', liveMode: false, objectId: 'in_1', payload }));
      // Not the object given: what JSON kept of it (a date as its string, no undefined field).
      expect(ev.payload).toEqual({ at: '1970-01-01T00:00:00.000Z', amount_in_cents: 1, nested: { id: 'in_1' } });
      expect(ev.payload).not.toBe(payload);
      expect(ev.payload).toBe(ev.payload);
      expect({ ...ev }).toEqual(outbox.get(ev.id));
      expect(ev).toMatchObject({ account_id: 'ac_1', live_mode: false, object_id: 'in_1', type: 'intent.succeeded' });
      // The same id again writes nothing and returns the first one.
      const again = tx(db, () => outbox.emit({ id: ev.id, type: 'intent.succeeded', accountId: 'ac_1', liveMode: false, payload: { other: true } }));
      expect(again).toEqual({ ...ev });
    } finally {
      db.close();
    }
  });
});
