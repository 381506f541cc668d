import { describe, expect, test } from 'vitest';
import pg from 'pg';
import { databaseUnavailable, frontNotFound } from '../../../src/sync/pg/front-routes.js';
import type { FastifyRequest } from 'fastify';

const dbError = (code: string) => Object.assign(new pg.DatabaseError('from the server', 0, 'error'), { code });

describe('a central-front classifies failures', () => {
  test('PostgreSQL not answering is 503 material; a programming or SQL error is not', () => {
    // Cut connections, shutdowns, a server starting, out of connections, I/O, serialization failures.
    for (const code of ['08006', '08001', '57P01', '57P03', '53300', '58030', '40001', '40P01']) expect(databaseUnavailable(dbError(code)), code).toBe(true);
    // Errors without a SQLSTATE: the socket refused or reset, the pool's connect timeout.
    for (const err of [
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
      new Error('timeout exceeded when trying to connect'),
      new Error('Connection terminated unexpectedly'),
    ]) {
      expect(databaseUnavailable(err), err.message).toBe(true);
    }
    // A missing table, a bad statement, a type error in our own code: a fault to see, not to retry.
    for (const code of ['42P01', '42601', '23505', 'XX000']) expect(databaseUnavailable(dbError(code)), code).toBe(false);
    expect(databaseUnavailable(new TypeError('x is undefined'))).toBe(false);
  });

  test('what a front does not serve: unknown /sync paths are route_not_found, the rest central_front_only', () => {
    const req = (url: string) => ({ url, method: 'GET' }) as FastifyRequest;
    expect(frontNotFound(req('/sync/nothing?x=1'))).toBeUndefined();
    expect(frontNotFound(req('/sync/status'))?.code).toBe('central_front_only');
    expect(frontNotFound(req('/api/checkouts'))?.status).toBe(421);
    expect(frontNotFound(req('/'))?.body()).toMatchObject({ code: 'central_front_only', message: expect.stringContaining('not GET /') });
  });
});
