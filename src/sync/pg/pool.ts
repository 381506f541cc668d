import pg from 'pg';

/**
 * The type parsers of this adapter's connections (set per pool, never on pg's global `types`):
 * bigint (int8, and count(*)) as a number, since seqs, positions and cent sums stay far below 2^53;
 * date as its 'YYYY-MM-DD' text, as the wire protocol names days.
 */
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === pg.types.builtins.INT8) return (v: string) => Number(v);
    if (oid === pg.types.builtins.DATE) return (v: string) => v;
    return pg.types.getTypeParser(oid, format);
  },
} as pg.CustomTypesConfig;

/** A pool with this adapter's type parsers. */
export function createPool(config: pg.PoolConfig): pg.Pool {
  return new pg.Pool({ ...config, types });
}

/** A single connection with this adapter's type parsers (the LISTEN connection, the projector's lock session). */
export function createClient(config: pg.ClientConfig): pg.Client {
  return new pg.Client({ ...config, types });
}

/** Runs `fn` in one transaction on one pooled connection: committed if it returns, rolled back if it throws. */
export async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query('BEGIN');
    const out = await fn(client);
    await client.query('COMMIT');
    return out;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {
      broken = true;
    });
    throw err;
  } finally {
    // A connection whose rollback failed is not handed to the next caller.
    client.release(broken);
  }
}
