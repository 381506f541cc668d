import { join } from 'node:path';
import type { Worker } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { tx } from '../../db/database.js';
import { databaseFile } from '../../db/paths.js';
import { backupDatabase, backupDir, pruneNightly, stamp } from '../../system/backup.js';
import { insertBackupRun } from './store.js';
import { metrics } from '../../system/metrics.js';
import { packBackup } from './backup-contents.js';

/** Milliseconds from `nowMs` to the next `hour`:00 local time (tomorrow's when it has passed). */
export function msUntilHour(nowMs: number, hour: number): number {
  const now = new Date(nowMs);
  const next = new Date(now.getFullYear(), now.getMonth(), now.getDate(), hour, 0, 0, 0);
  if (next.getTime() <= nowMs) next.setDate(next.getDate() + 1);
  return next.getTime() - nowMs;
}

export interface BackupOutcome {
  ok: boolean;
  file: string;
  bytes: number | null;
  error: string | null;
  pruned: string[];
  leftOut: string[];
}

/** Takes one backup of the running daemon's database and records it (for the page and doctor). */
export async function recordedBackup(ctx: AppContext, file: string, trigger: 'nightly' | 'manual'): Promise<BackupOutcome> {
  const started = isoTime(ctx.clock.now());
  let outcome: BackupOutcome;
  try {
    const packed = packBackup(ctx.config, ctx.db);
    const r = await backupDatabase(databaseFile(ctx.config), file, {
      busyTimeoutMs: ctx.config.database.busy_timeout_ms,
      bundle: packed.bundle,
      checkOffLoop: true,
    });
    const pruned = trigger === 'nightly' ? pruneNightly(backupDir(ctx.config), ctx.config.backup.keep) : [];
    outcome = { ok: true, file, bytes: r.bytes, error: null, pruned, leftOut: packed.leftOut };
    if (packed.leftOut.length)
      ctx.log.warn(
        { event: 'backup.incomplete', file, left_out: packed.leftOut },
        'backup left out secrets: no recovery key to seal them to (posd backup recovery-key makes one)',
      );
  } catch (err) {
    outcome = { ok: false, file, bytes: null, error: (err as Error).message, pruned: [], leftOut: [] };
  }
  tx(ctx.db, () =>
    insertBackupRun(ctx.db, {
      file,
      trigger,
      started_at: started,
      finished_at: isoTime(ctx.clock.now()),
      bytes: outcome.bytes,
      ok: outcome.ok ? 1 : 0,
      error: outcome.error,
      left_out: outcome.leftOut.length ? JSON.stringify(outcome.leftOut) : null,
    }),
  );
  return outcome;
}

/**
 * The nightly backup: at `backup.hour` local time, a consistent copy into `backup.dir` named
 * `nightly-<utc stamp>.db`, keeping the newest `backup.keep`. Holds no state a restart would lose:
 * after a restart it simply waits for the next hour.
 */
export class NightlyBackup implements Worker {
  readonly name = 'nightly-backup';
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<BackupOutcome> | undefined;
  private readonly failures;

  constructor(private readonly ctx: AppContext) {
    const m = metrics(ctx);
    this.failures = m.counter({ name: 'posd_backup_failures_total', help: 'Nightly backups that failed' });
  }

  start(): void {
    this.schedule();
  }

  private schedule(): void {
    if (this.ctx.shutdown.aborted) return;
    // setTimeout holds at most ~24.8 days; a day is well inside.
    const wait = msUntilHour(this.ctx.clock.now(), this.ctx.config.backup.hour);
    this.timer = setTimeout(() => {
      void this.runNow().finally(() => this.schedule());
    }, wait);
    this.timer.unref();
  }

  /** Runs the nightly backup now (also what the timer calls); one at a time. */
  runNow(): Promise<BackupOutcome> {
    this.running ??= (async () => {
      const file = join(backupDir(this.ctx.config), `nightly-${stamp(this.ctx.clock.now())}.db`);
      const outcome = await recordedBackup(this.ctx, file, 'nightly');
      if (outcome.ok) {
        this.ctx.log.info({ file, bytes: outcome.bytes, pruned: outcome.pruned }, 'nightly backup done');
      } else {
        this.failures.inc();
        this.ctx.log.error({ file, error: outcome.error }, 'nightly backup failed');
      }
      return outcome;
    })().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    await this.running?.catch(() => undefined);
  }
}
