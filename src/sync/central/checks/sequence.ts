import { ApiError, invalid } from '../../../errors.js';

/** How far past the received seq (plus its batch) a box's next record may start: a restored box's skip. */
export const SEQ_JUMP = 1_000_000;

/**
 * The seq bound of one push (issue 32), the same at the SQLite central and at a central-front: a
 * seq far past the received one plus the batch cannot be an honest box's next record; taken, it
 * would stop the store's stream for good. An honest box jumps only when a restored box moves its
 * unsent records past every seq it used (sync/store/rejoin.ts): SEQ_JUMP bounds that. The wire
 * schema already caps every seq at 2^53−1. Throws 400 naming the record's field.
 */
export function assertSeqWithin(seq: number, index: number, receivedSeq: number, batchLength: number): void {
  const bound = receivedSeq + batchLength + SEQ_JUMP;
  if (seq > bound)
    throw invalid({
      [`records.${index}.seq`]: `must be at most ${bound} (the central has received up to seq ${receivedSeq}; this batch holds ${batchLength} records; a rejoining box may skip at most ${SEQ_JUMP})`,
    });
}

/** What the central holds where a pushed record conflicts: at that seq, or under that id. */
export interface HeldRecord {
  id: string;
  seq: number;
  kind: string;
}

/** A 409 saying what the central actually holds: at that seq, or under that id (issue 32). */
export function recordConflict(id: string, seq: number, receivedSeq: number, held?: HeldRecord): ApiError {
  const holds = !held
    ? seq <= receivedSeq
      ? `the central holds no record at seq ${seq}`
      : `the batch names record ${id} twice`
    : held.id === id && held.seq !== seq
      ? `the central holds record ${id} at seq ${held.seq}`
      : held.id === id
        ? `the central holds record ${id} (${held.kind}) at seq ${seq} with other content`
        : `the central holds record ${held.id} (${held.kind}) at seq ${held.seq}`;
  return new ApiError('sync_record_conflict', {
    message: `Record ${id} (seq ${seq}) conflicts with what the central received: ${holds} (received up to seq ${receivedSeq}); nothing was received.`,
    extra: { record_id: id, applied_seq: receivedSeq },
  });
}
