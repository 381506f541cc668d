import type { SendableRow } from './store.js';

/**
 * Rows an endpoint's in-flight cap held back (gates.ts), kept in memory by endpoint in due order
 * and sent as the endpoint's attempts end, instead of being written back to the database on every
 * pass (decision 0262). Bounded per endpoint and in all: a row beyond a bound is rescheduled in the
 * database as before, so a capped endpoint's backlog still leaves the due window and cannot hide
 * other endpoints' rows from the pass.
 */
export class HeldRows {
  private readonly byEndpoint = new Map<string, SendableRow[]>();
  private readonly seqs = new Set<number>();

  constructor(
    private readonly perEndpoint: number,
    private readonly total: number,
  ) {}

  /** Rows kept, over every endpoint. */
  get size(): number {
    return this.seqs.size;
  }

  has(seq: number): boolean {
    return this.seqs.has(seq);
  }

  /** Keeps a row behind its endpoint's others; false when a bound is reached (the caller reschedules it). */
  keep(row: SendableRow): boolean {
    if (this.seqs.has(row.seq)) return true;
    if (this.seqs.size >= this.total) return false;
    let rows = this.byEndpoint.get(row.endpoint_id);
    if (!rows) {
      rows = [];
      this.byEndpoint.set(row.endpoint_id, rows);
    }
    if (rows.length >= this.perEndpoint) return false;
    rows.push(row);
    this.seqs.add(row.seq);
    return true;
  }

  /** Rows of this endpoint kept. */
  count(endpointId: string): number {
    return this.byEndpoint.get(endpointId)?.length ?? 0;
  }

  /** Whether rows of this endpoint are kept (its cap is full). */
  holds(endpointId: string): boolean {
    return this.byEndpoint.has(endpointId);
  }

  /** Whether a row of this endpoint would not be kept (a bound is reached). */
  full(endpointId: string): boolean {
    return this.seqs.size >= this.total || (this.byEndpoint.get(endpointId)?.length ?? 0) >= this.perEndpoint;
  }

  /** Each endpoint's kept rows, oldest first (the arrays are live: take rows with `shift`). */
  queues(): MapIterator<[string, SendableRow[]]> {
    return this.byEndpoint.entries();
  }

  /** Takes the endpoint's oldest kept row; true when none is left after it. */
  shift(endpointId: string): boolean {
    const rows = this.byEndpoint.get(endpointId);
    const row = rows?.shift();
    if (row) this.seqs.delete(row.seq);
    if (rows && rows.length > 0) return false;
    this.byEndpoint.delete(endpointId);
    return true;
  }

  /** Drops every kept row: they are read from the database again. */
  clear(): void {
    this.byEndpoint.clear();
    this.seqs.clear();
  }
}
