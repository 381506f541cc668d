import { describe, expect, it } from 'vitest';
import { ConnectionGate } from '../../src/api/connections.js';

// The reserve cannot be reached over loopback (loopback is the box's own network), so it is pinned
// here; the caps themselves are tested over real sockets in test/security/slow-clients.test.ts.
describe('the connection gate', () => {
  it('keeps the last quarter of the global cap for the box own network', () => {
    const lan = (ip: string | undefined) => ip?.startsWith('192.168.1.') === true;
    const gate = new ConnectionGate({ max_connections: 8, max_connections_per_address: 8 }, lan);
    for (let i = 0; i < 6; i++) expect(gate.admit(`203.0.113.${i}`)).toBe(true);
    expect(gate.admit('203.0.113.99')).toBe(false);
    expect(gate.admit('192.168.1.20')).toBe(true);
    expect(gate.admit('192.168.1.21')).toBe(true);
    expect(gate.admit('192.168.1.22')).toBe(false);
    gate.release('203.0.113.0');
    gate.release('192.168.1.20');
    expect(gate.open).toBe(6);
    expect(gate.admit('203.0.113.99')).toBe(false);
    expect(gate.admit('192.168.1.23')).toBe(true);
  });
});
