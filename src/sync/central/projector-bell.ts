import { perDb } from '../../db/per-db.js';

/**
 * What a push's receipt rings once its records are durable, and the projector of that database
 * listens to (sync/central/projector.ts). Kept apart so the receipt does not import the projector.
 */
export class ProjectorBell {
  private listener: (() => void) | undefined;
  private sliceListener: ((storeId: string) => void) | undefined;
  /** Rung after a receipt commits: the projector (if one runs) looks for work soon. */
  ring(): void {
    this.listener?.();
  }
  /** The projector's own: one listener per database. */
  listen(fn: (() => void) | undefined): void {
    this.listener = fn;
  }
  /** Rung by the projector after a slice (or a store's held records) committed: outcomes moved. */
  sliced(storeId: string): void {
    this.sliceListener?.(storeId);
  }
  /** Who reports the projector's outcomes elsewhere (the PostgreSQL core, src/sync/central/pg-core.ts). */
  onSlice(fn: ((storeId: string) => void) | undefined): void {
    this.sliceListener = fn;
  }
}

export const projectorBell = perDb(() => new ProjectorBell());
