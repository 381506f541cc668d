import { EventEmitter } from 'node:events';
import { join } from 'node:path';
import type { AppContext } from '../../context.js';
import { tx } from '../../db/database.js';
import { afterCommit } from '../../db/group-commit.js';
import { isoTime } from '../../clock.js';
import { invalid, notFound } from '../../errors.js';
import { newId } from '../../ids.js';
import type { Account } from '../../accounts/service.js';
import { ReportsStore, type ReportRunRow } from './store.js';
import type { CreateReportRunInput, ReportParametersT, ReportRun } from './schema.js';

/** Wakes the worker after a run is committed (one emitter per daemon context). */
const wakers = new WeakMap<AppContext, EventEmitter>();
export function reportWaker(ctx: AppContext): EventEmitter {
  let e = wakers.get(ctx);
  if (!e) wakers.set(ctx, (e = new EventEmitter()));
  return e;
}

export function reportsDir(ctx: AppContext): string {
  return ctx.config.reports.dir || join(ctx.config.data_dir, 'reports');
}

/** A date alone means the whole day (start for `from_time`, end for `until_time`), as the ledger filters. */
function boundary(text: string, end: boolean): string | undefined {
  if (/^\d{4}-\d{2}-\d{2}$/.test(text)) {
    const ms = Date.parse(`${text}T00:00:00.000Z`);
    if (Number.isNaN(ms)) return undefined;
    return isoTime(end ? ms + 86_400_000 - 1 : ms);
  }
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/i.test(text)) return undefined;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? undefined : isoTime(ms);
}

export function reportView(r: ReportRunRow, baseUrl: string): ReportRun {
  return {
    id: r.id,
    account_id: r.account_id,
    live_mode: r.live_mode === 1,
    report_type: r.report_type,
    status: r.status,
    parameters: JSON.parse(r.parameters) as ReportParametersT,
    result:
      r.status === 'succeeded'
        ? {
            filename: r.file_name!,
            content_type: 'text/csv',
            size_bytes: r.size_bytes!,
            sha256: r.sha256!,
            row_count: r.row_count!,
            url: `${baseUrl}/api/report_runs/${r.id}/download`,
          }
        : null,
    error: r.error,
    created_at: r.created_at,
    succeeded_at: r.succeeded_at,
    failed_at: r.failed_at,
  };
}

export class ReportsService {
  readonly store: ReportsStore;

  constructor(private readonly ctx: AppContext) {
    this.store = new ReportsStore(ctx.db);
  }

  create(account: Account, input: CreateReportRunInput): ReportRunRow {
    const from = boundary(input.from_time, false);
    const until = boundary(input.until_time, true);
    const errors: Record<string, string> = {};
    if (!from) errors.from_time = 'must be a date (YYYY-MM-DD) or an ISO 8601 date-time with offset';
    if (!until) errors.until_time = 'must be a date (YYYY-MM-DD) or an ISO 8601 date-time with offset';
    if (from && until && until < from) errors.until_time = 'must not be before from_time';
    if (Object.keys(errors).length) throw invalid(errors);
    const parameters: ReportParametersT = { from_time: from!, until_time: until!, currency: input.currency ?? null, type: input.type ?? null };
    const id = newId('rr');
    const row = tx(this.ctx.db, () => {
      this.store.insert({
        id,
        account_id: account.id,
        live_mode: account.live_mode ? 1 : 0,
        report_type: input.report_type ?? 'balance_transactions',
        parameters: JSON.stringify(parameters),
        created_at: isoTime(this.ctx.clock.now()),
      });
      return this.store.get(id)!;
    });
    // After the commit (the group commit's, when a request made it): the worker must find the row
    // when it wakes, and it is busy before the answer leaves (a client waiting on it sees it running).
    afterCommit(this.ctx.db, () => reportWaker(this.ctx).emit('wake'));
    return row;
  }

  get(accountIds: string[], liveMode: boolean, id: string): ReportRunRow {
    const r = this.store.get(id);
    if (!r || !accountIds.includes(r.account_id) || (r.live_mode === 1) !== liveMode) throw notFound('report run', id);
    return r;
  }
}
