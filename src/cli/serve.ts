import { Command } from 'commander';
import { CliError, cliConfig, withDataOptions, type DataOptions } from './common.js';
import { DatabaseRefusedError } from '../db/migrate.js';
import { DaemonRunningError } from '../system/daemon-lock.js';
import { SdNotify } from '../system/sd-notify.js';

export function serveCommand(): Command {
  return withDataOptions(new Command('serve'))
    .description('run the daemon (creating the installation on the first run)')
    .option('--host <host>', 'address to listen on (default 127.0.0.1)')
    .option('--port <port>', 'port to listen on (default 4242)')
    .action(async (opts: DataOptions & { host?: string; port?: string }) => {
      const http: Record<string, unknown> = {};
      if (opts.host) http.host = opts.host;
      if (opts.port !== undefined) {
        if (!/^\d+$/.test(opts.port)) throw new CliError(`--port: not a port number: ${opts.port}`);
        http.port = Number(opts.port);
      }
      const config = cliConfig(opts, Object.keys(http).length ? { http } : {});
      // Loaded here so the other commands start without the HTTP stack.
      const { startDaemon, WorkerStartError } = await import('../daemon.js');
      let daemon;
      try {
        daemon = await startDaemon({
          config,
          onInstalled: (inst, baseUrl) => {
            // Shown on stderr, once, and never through the logger: keys must not reach log storage.
            process.stderr.write(
              [
                '',
                `posd: new installation in ${config.data_dir}`,
                `  API           ${baseUrl}`,
                `  account       ${inst.account_id} (live), sandbox ${inst.sandbox_id}`,
                `  test key      ${inst.keys.test}`,
                `  live key      ${inst.keys.live}`,
                '  Keys are shown only now: store them somewhere safe.',
                `  Try: curl -H "X-SECRET-KEY: ${inst.keys.test}" ${baseUrl}/test`,
                '',
                '',
              ].join('\n'),
            );
          },
        });
      } catch (err) {
        if (err instanceof DatabaseRefusedError || err instanceof DaemonRunningError) throw new CliError(err.message);
        // Logged with its stack; the daemon has stopped what had started and released the data folder.
        if (err instanceof WorkerStartError) throw new CliError(err.message, 1);
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EADDRINUSE') throw new CliError(`port ${config.http.port} on ${config.http.host} is already in use (another posd running?)`);
        if (code === 'EACCES') throw new CliError(`not allowed to listen on ${config.http.host}:${config.http.port}`);
        if (code === 'SQLITE_CANTOPEN' || code === 'EACCES') throw new CliError(`cannot open the database in ${config.data_dir}: ${code}`);
        throw err;
      }
      const d = daemon;
      const notify = new SdNotify(process.env, 'systemd-notify', (err) => d.ctx.log.warn({ err: err.message }, 'systemd notification failed'));
      // Listening, migrated and workers started: only now is the service ready.
      await notify.ready(`serving ${d.url}`);
      notify.startWatchdog();
      const clean = await new Promise<boolean>((resolve) => {
        const onSignal = (signal: string) => {
          process.off('SIGTERM', onSignal);
          process.off('SIGINT', onSignal);
          d.ctx.log.info({ signal }, 'signal received');
          void notify.stopping();
          d.stop().then(resolve, () => resolve(false));
        };
        process.on('SIGTERM', onSignal);
        process.on('SIGINT', onSignal);
      });
      // A worker that could not stop may have left work half done: say so to systemd and scripts.
      if (!clean) throw new CliError('stopped with errors (see the log)', 1);
    });
}
