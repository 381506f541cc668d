import { createHash } from 'node:crypto';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { AppContext } from '../../context.js';
import type { Worker } from '../../api/module.js';
import { tx } from '../../db/database.js';
import { isoTime } from '../../clock.js';
import { balanceTransactionsAfter, ledgerHighWater } from '../ledger/service.js';
import { ReportsService, reportWaker, reportsDir } from './service.js';
import type { ReportParametersT } from './schema.js';
import type { ReportRunRow } from './store.js';

/**
 * Generates report runs one at a time, in the background. Each file is written under a temporary
 * name, flushed to disk, then renamed into place, and only then is the run marked `succeeded` with
 * the file's size and hash. A download therefore sees either no file (409) or the whole file; a run a
 * crashed process left `running` is queued again at start and its leftovers are overwritten.
 */
export class ReportWorker implements Worker {
  readonly name = 'report-runs';
  private readonly service: ReportsService;
  private loop: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private readonly onWake = () => this.kick();

  constructor(private readonly ctx: AppContext) {
    this.service = new ReportsService(ctx);
  }

  start(): void {
    for (const id of this.service.store.orphans(this.ctx.bootId)) tx(this.ctx.db, () => this.service.store.requeue(id));
    reportWaker(this.ctx).on('wake', this.onWake);
    this.kick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    reportWaker(this.ctx).off('wake', this.onWake);
    await this.loop;
  }

  /** Resolves once every pending run has been generated (tests and `posd` tools wait on it). */
  async idle(): Promise<void> {
    while (this.loop) await this.loop;
  }

  kick(): void {
    if (this.stopped) return;
    if (this.loop) {
      this.again = true;
      return;
    }
    this.loop = this.drain().finally(() => {
      this.loop = undefined;
      if (this.again && !this.stopped) {
        this.again = false;
        this.kick();
      }
    });
  }

  private async drain(): Promise<void> {
    for (;;) {
      if (this.stopped || this.ctx.shutdown.aborted) return;
      const run = this.service.store.nextPending();
      if (!run) return;
      await this.generate(run);
    }
  }

  private async generate(run: ReportRunRow): Promise<void> {
    // The report writer is loaded by the first report, not at start.
    const { HEADER, csvLine } = await import('./csv.js');
    const { ctx } = this;
    const store = this.service.store;
    if (!tx(ctx.db, () => store.start(run.id, ctx.bootId, isoTime(ctx.clock.now())))) return;
    const dir = reportsDir(ctx);
    const fileName = `${run.id}.csv`;
    const tmp = join(dir, `.${fileName}.${ctx.bootId}.tmp`);
    try {
      await mkdir(dir, { recursive: true });
      const params = JSON.parse(run.parameters) as ReportParametersT;
      const filter = {
        accountIds: [run.account_id],
        liveMode: run.live_mode === 1,
        currency: params.currency ?? undefined,
        type: params.type ?? undefined,
        from: params.from_time,
        until: params.until_time,
      };
      const hash = createHash('sha256');
      let size = 0;
      let rows = 0;
      const fh = await open(tmp, 'w');
      try {
        const write = async (text: string) => {
          const buf = Buffer.from(text, 'utf8');
          await fh.write(buf);
          hash.update(buf);
          size += buf.length;
        };
        await write(HEADER);
        const highWater = ledgerHighWater(ctx);
        let cursor = 0;
        for (;;) {
          if (this.ctx.shutdown.aborted) throw new Error('shutting down');
          const page = balanceTransactionsAfter(ctx, filter, cursor, highWater, ctx.config.reports.batch_rows);
          if (page.rows.length === 0) break;
          cursor = page.cursor;
          rows += page.rows.length;
          await write(page.rows.map(csvLine).join(''));
        }
        await fh.sync();
      } finally {
        await fh.close();
      }
      await rename(tmp, join(dir, fileName));
      const sha256 = hash.digest('hex');
      tx(ctx.db, () => store.succeed({ id: run.id, file_name: fileName, size_bytes: size, sha256, row_count: rows, at: isoTime(ctx.clock.now()) }));
      ctx.log.info({ report_run: run.id, rows, size }, 'report generated');
    } catch (err) {
      await rm(tmp, { force: true }).catch(() => undefined);
      if (this.ctx.shutdown.aborted) {
        // Not the report's fault: the next start generates it again.
        tx(ctx.db, () => store.requeue(run.id));
        return;
      }
      ctx.log.error({ err, report_run: run.id }, 'report generation failed');
      tx(ctx.db, () => store.fail(run.id, (err as Error).message.slice(0, 500), isoTime(ctx.clock.now())));
    }
  }
}

const workers = new WeakMap<AppContext, ReportWorker>();

/** The daemon's one report worker (created by the module's `workers`). */
export function reportWorker(ctx: AppContext): ReportWorker {
  let w = workers.get(ctx);
  if (!w) workers.set(ctx, (w = new ReportWorker(ctx)));
  return w;
}
