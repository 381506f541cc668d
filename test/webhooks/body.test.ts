import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deliveryBody, namesTypeAndVersion } from '../../src/modules/webhooks/body.js';
import { webhookBody } from '../../src/events/catalogue.js';

// The body of a delivery skips parsing when the stored payload already is the body; the scan that
// decides it must agree with parsing on every JSON text JSON.stringify can write.
const keyish = fc.oneof(fc.constantFrom('event_type', 'api_version', 'id', 'event_type"', 'api_version\\', 'data'), fc.string());
const value = fc.letrec((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    fc.constantFrom(null, true, 1.5, 'x', 'event_type', '"api_version":', '{"event_type":1}', '\\"'),
    fc.array(tie('v'), { maxLength: 3 }),
    fc.dictionary(keyish, tie('v'), { maxKeys: 4 }),
  ),
})).v;
const payload = fc.dictionary(keyish, value, { maxKeys: 6 });

describe('delivery body', () => {
  it('finds event_type and api_version at the top level exactly when parsing does', () => {
    fc.assert(
      fc.property(payload, (p) => {
        const text = JSON.stringify(p);
        const parsed = JSON.parse(text) as Record<string, unknown>;
        expect(namesTypeAndVersion(text)).toBe(Object.hasOwn(parsed, 'event_type') && Object.hasOwn(parsed, 'api_version'));
      }),
      { numRuns: 2000 },
    );
  });

  it('is the body webhookBody makes, and the stored text itself when that already is the body', () => {
    fc.assert(
      fc.property(payload, fc.boolean(), (p, connected) => {
        const text = JSON.stringify(p);
        const row = { event_type: 'intent.succeeded', event_account_id: 'ac_child', account_id: connected ? 'ac_platform' : 'ac_child' };
        const body = deliveryBody(row, text);
        expect(JSON.parse(body)).toEqual(webhookBody({ type: row.event_type, payload: JSON.parse(text), account_id: row.event_account_id }, { connected }));
        if (!connected && namesTypeAndVersion(text)) expect(body).toBe(text);
      }),
      { numRuns: 1000 },
    );
  });

  it('finds keys only in the payload, not in nested objects or string values', () => {
    expect(namesTypeAndVersion('{"event_type":"a","api_version":"b"}')).toBe(true);
    expect(namesTypeAndVersion('{"data":{"event_type":"a","api_version":"b"}}')).toBe(false);
    expect(namesTypeAndVersion('{"event_type":"\\"api_version\\":1"}')).toBe(false);
    expect(namesTypeAndVersion('{"x":["event_type","api_version"],"event_type":1}')).toBe(false);
  });
});
