import type { DueRow, WebhooksStore } from './store.js';

/**
 * The dispatcher's reads of due rows (dispatch.ts). The due order starts with rows it will skip:
 * the attempts on the wire and those whose outcome waits for its group to commit (up to 20 ms of
 * deliveries, decision 0264), all read past again at every read, each with its endpoint looked up.
 * So a read goes on from the last row of the one before (`from`) while every due row before that
 * one is in flight, kept, read ahead or rescheduled past it. Whatever could put a due row before it
 * (news: rows made, a retry scheduled, a FIFO order moved; the rows read ahead dropped, a
 * reschedule or a group of outcomes that failed to commit) calls `restart`, and the next read
 * starts from the beginning, reading past the rows skipped (decision 0296).
 */
export class DueReader {
  /** The last row of the last read; null: the next read starts from the beginning. */
  private from: DueRow | null = null;

  constructor(private readonly store: WebhooksStore) {}

  restart(): void {
    this.from = null;
  }

  /** Due rows by `now`: `wanted` rows past where the last read ended, or past `skipped` rows from the beginning. */
  read(now: number, wanted: number, skipped: number): DueRow[] {
    // A clock set back: the row it ended on is not due, and neither may be rows before it.
    const from = this.from !== null && this.from.next_attempt_ms <= now ? this.from : null;
    const limit = from ? wanted : wanted + skipped;
    const rows = from ? this.store.dueAfter(now, limit, from) : this.store.due(now, limit);
    // Short of the limit: that is all that is due now, and the next read starts over.
    this.from = rows.length === limit ? rows[rows.length - 1] : null;
    return rows;
  }
}
