import { describe, expect, it } from 'vitest';
import { decodeMessage, parseServerMessage, parseTerminalMessage } from '../../devices/index.js';

const charge = {
  type: 'charge',
  command_id: 'c-1',
  amount_in_cents: 1250,
  currency: 'EUR',
  installments: 1,
  description: 'coffee',
  print_receipt: true,
  show_post_payment_screens: false,
  tax_id: null,
};
const hello = {
  type: 'hello',
  terminal_id: 'T-1',
  token: 't',
  model: 'm',
  firmware: 'f',
  protocol: 1,
  current_command_id: null,
  unacknowledged_results: [
    { command_id: 'c-0', outcome: 'approved', authorization_code: '123456', card: { network: 'visa', last4: '4242' }, processor_reference: 'p', reason: null },
  ],
};

describe('parseServerMessage', () => {
  it('accepts every server message in its documented shape', () => {
    for (const m of [
      charge,
      { type: 'welcome', server_time: '2026-01-01T00:00:00.000Z' },
      { type: 'error', code: 'unauthorized' },
      { type: 'cancel', command_id: 'c' },
      { type: 'result_ack', command_id: 'c' },
      { type: 'status_request', command_id: 'c' },
      { type: 'ping' },
      { type: 'pong' },
    ]) {
      expect(parseServerMessage(m), m.type).toEqual({ ok: true, message: m });
    }
  });

  it.each([
    ['amount_in_cents', 12.5],
    ['amount_in_cents', 0],
    ['currency', 'eur'],
    ['installments', 0],
    ['print_receipt', 'yes'],
    ['tax_id', undefined],
    ['command_id', ''],
  ])('rejects a charge with %s = %s, naming the field', (field, value) => {
    const res = parseServerMessage({ ...charge, [field]: value });
    expect(res.ok).toBe(false);
    if (!res.ok) {
      expect(res.error.reason).toBe('invalid_fields');
      expect(res.error.detail).toContain(`/${field}`);
    }
  });

  it('rejects a terminal-only message sent by the wrong side', () => {
    expect(parseServerMessage({ type: 'ack', command_id: 'c' })).toMatchObject({ ok: false, error: { reason: 'unknown_type' } });
    expect(parseTerminalMessage(charge)).toMatchObject({ ok: false, error: { reason: 'unknown_type' } });
  });

  // Checkers are compiled per type at first use (issue 16): a type named like an Object property is
  // still unknown, not a lookup into the prototype.
  it('rejects a type named like an Object property as unknown', () => {
    for (const type of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      expect(parseTerminalMessage({ type }), type).toMatchObject({ ok: false, error: { reason: 'unknown_type', type } });
      expect(parseServerMessage({ type }), type).toMatchObject({ ok: false, error: { reason: 'unknown_type', type } });
    }
  });
});

describe('parseTerminalMessage', () => {
  it('accepts hello with unacknowledged results and a minimal result', () => {
    expect(parseTerminalMessage(hello).ok).toBe(true);
    expect(parseTerminalMessage({ type: 'result', command_id: 'c', outcome: 'declined' }).ok).toBe(true);
  });

  it('validates nested results and card fields', () => {
    const bad = { ...hello, unacknowledged_results: [{ command_id: 'c', outcome: 'maybe' }] };
    expect(parseTerminalMessage(bad)).toMatchObject({ ok: false, error: { reason: 'invalid_fields' } });
    const badCard = { type: 'result', command_id: 'c', outcome: 'approved', card: { network: 'visa', last4: '42' } };
    expect(parseTerminalMessage(badCard)).toMatchObject({ ok: false, error: { detail: expect.stringContaining('/card') } });
  });

  it('never throws on hostile input', () => {
    for (const input of [null, 42, 'hello', [], { type: 7 }, { type: '__proto__' }, { type: 'constructor' }]) {
      expect(parseTerminalMessage(input).ok).toBe(false);
    }
    expect(decodeMessage('{"type":', parseTerminalMessage)).toMatchObject({ ok: false, error: { reason: 'malformed_json' } });
    expect(decodeMessage(`"${'x'.repeat(70_000)}"`, parseTerminalMessage)).toMatchObject({ ok: false, error: { reason: 'oversized' } });
  });
});
