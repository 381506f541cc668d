import { Command, Option } from 'commander';
import cliProgress from 'cli-progress';
import { CliError, cliConfig, openCliDatabase, printJson, withDataOptions, type DataOptions } from './common.js';
import { systemClock, isoTime } from '../clock.js';
import { webhooksStore, type DeliveryRow } from '../modules/webhooks/store.js';
import { replayDeliveries, replayView, DELIVERY_STATUSES, type ReplayView } from '../modules/webhooks/replay.js';

interface ReplayOptions extends DataOptions {
  endpoint: string;
  since?: string;
  until?: string;
  type?: string[];
  status?: Array<DeliveryRow['status']>;
  wait: boolean;
  json?: boolean;
}

const POLL_MS = 500;

function time(flag: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const at = Date.parse(value);
  if (Number.isNaN(at)) throw new CliError(`${flag}: not a time: ${value} (e.g. 2026-11-20T08:00:00Z)`);
  return isoTime(at);
}

/**
 * `posd webhooks replay`: a bulk replay (docs/webhooks.md) from the store box's shell, on the
 * database beside a running daemon, whose worker sends the new deliveries at its next look at the
 * table (at most `webhooks.poll_ms`). With a terminal, a progress bar follows them until none is
 * pending; `--no-wait` returns at once.
 */
export function webhooksCommand(): Command {
  const cmd = new Command('webhooks').description('operate webhook endpoints (bulk replay)');
  withDataOptions(cmd.command('replay'))
    .description("send an endpoint's past deliveries again, as new deliveries with the same webhook-id")
    .requiredOption('--endpoint <id>', 'endpoint (ep_…)')
    .option('--since <time>', 'deliveries made at or after this time (ISO 8601; default: all kept)')
    .option('--until <time>', 'deliveries made before this time (default: now)')
    .option('--type <type...>', 'only these event types')
    .addOption(new Option('--status <status...>', 'only deliveries in these states (e.g. failed canceled)').choices([...DELIVERY_STATUSES]))
    .option('--no-wait', 'return once the deliveries are made, without following them')
    .option('--json', 'print JSON')
    .action(async (opts: ReplayOptions) => {
      const config = cliConfig(opts);
      const db = openCliDatabase(config);
      try {
        const store = webhooksStore(db);
        const endpoint = store.endpoint(opts.endpoint);
        if (!endpoint) throw new CliError(`no webhook endpoint ${opts.endpoint}`);
        if (endpoint.disabled) throw new CliError(`endpoint ${endpoint.id} is disabled; enable it first`);
        const since = time('--since', opts.since) ?? isoTime(0);
        const until = time('--until', opts.until) ?? isoTime(systemClock.now() + 1);
        if (since >= until) throw new CliError('--until must be after --since');
        let view: ReplayView = await replayDeliveries(db, store, systemClock, endpoint, {
          since,
          until,
          event_types: opts.type ?? null,
          statuses: opts.status ?? null,
        });
        const bar =
          opts.wait && !opts.json && process.stderr.isTTY && view.total > 0
            ? new cliProgress.SingleBar(
                { format: 'replay |{bar}| {value}/{total} delivered, {failed} failed', stream: process.stderr },
                cliProgress.Presets.shades_classic,
              )
            : undefined;
        bar?.start(view.total, 0, { failed: 0 });
        const row = store.replayById(view.id)!;
        while (opts.wait && view.pending > 0) {
          await new Promise((r) => setTimeout(r, POLL_MS));
          view = replayView(store, row);
          bar?.update(view.total - view.pending, { failed: view.failed });
        }
        bar?.stop();
        if (opts.json) printJson(view);
        else
          process.stdout.write(
            `replay ${view.id}: ${view.total} deliveries made; ${view.succeeded} delivered, ${view.failed} failed, ${view.pending} pending\n`,
          );
      } finally {
        db.close();
      }
    });
  return cmd;
}
