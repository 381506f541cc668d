import { describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { newSigningSecret, sign, signedHeaders, verify } from '../../src/system/standard-webhooks.js';

// The Standard Webhooks specification's published test vector (github.com/standard-webhooks/
// standard-webhooks, the libraries' signature tests). The installed package ships no tests, so the
// vector is written here and the package's own `sign` is checked against it too.
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};

describe('signatures (spec 6.5)', () => {
  it('reproduces the Standard Webhooks test vector', () => {
    expect(sign(VECTOR.secret, VECTOR.id, VECTOR.timestamp, VECTOR.body)).toBe(VECTOR.signature);
    expect(new Webhook(VECTOR.secret).sign(VECTOR.id, new Date(VECTOR.timestamp * 1000), VECTOR.body)).toBe(VECTOR.signature);
  });

  it('signs what the standardwebhooks package verifies, and nothing else', () => {
    const secret = newSigningSecret();
    const body = JSON.stringify({ event_type: 'intent.succeeded', amount_in_cents: 10000 });
    const now = Math.floor(Date.now() / 1000);
    const headers = signedHeaders(secret, 'msg_abc', now, body);
    expect(new Webhook(secret).verify(body, { ...headers })).toEqual(JSON.parse(body));
    expect(verify(secret, headers, body)).toBe(true);
    // Re-serialized JSON (spaces) is a different body: verification must fail.
    const reserialized = JSON.stringify(JSON.parse(body), null, 1);
    expect(() => new Webhook(secret).verify(reserialized, { ...headers })).toThrow();
    expect(verify(secret, headers, reserialized)).toBe(false);
    expect(verify(newSigningSecret(), headers, body)).toBe(false);
  });

  it('makes secrets of whsec_ and base64 of 32 random bytes', () => {
    const a = newSigningSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(a.slice(6), 'base64')).toHaveLength(32);
    expect(newSigningSecret()).not.toBe(a);
  });
});
