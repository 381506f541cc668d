import { Command, Option } from 'commander';
import pino from 'pino';
import { CliError, cliConfigLayers, storedRole, withDataOptions, type DataOptions } from './common.js';
import type { Config } from '../config.js';
import type { Installation } from '../accounts/service.js';
import { DatabaseRefusedError } from '../db/migrate.js';
import { DaemonRunningError } from '../system/daemon-lock.js';
import { SdNotify } from '../system/sd-notify.js';

type ServeOptions = DataOptions & { host?: string; port?: string; role?: 'store' | 'central' | 'central-front' };

export function serveCommand(): Command {
  return withDataOptions(new Command('serve'))
    .description('run the daemon (creating the installation on the first run) in the role the data folder was made for')
    .option('--host <host>', 'address to listen on (default 127.0.0.1)')
    .option('--port <port>', 'port to listen on (default 4242)')
    .addOption(
      new Option('--role <role>', 'store, central or central-front (default: the role stored in the data folder, else store)').choices([
        'store',
        'central',
        'central-front',
      ]),
    )
    .action(async (opts: ServeOptions) => {
      const http: Record<string, unknown> = {};
      if (opts.host) http.host = opts.host;
      if (opts.port !== undefined) {
        if (!/^\d+$/.test(opts.port)) throw new CliError(`--port: not a port number: ${opts.port}`);
        http.port = Number(opts.port);
      }
      const overrides: Record<string, unknown> = { ...(Object.keys(http).length ? { http } : {}), ...(opts.role ? { role: opts.role } : {}) };
      let { config, given } = cliConfigLayers(opts, overrides);
      // Stateless: no data folder is read, locked or made (docs/central.md, "The central-front").
      if (config.role === 'central-front') return serveFront(config);
      const stored = storedRole(config);
      if (stored && stored !== config.role) {
        if (given.role !== undefined) {
          throw new CliError(
            `${config.data_dir} holds a ${stored} installation, not a ${config.role}; drop the ${opts.role ? '--role flag' : 'role setting'} or use another --data`,
          );
        }
        config = { ...config, role: stored };
      }
      // Loaded here so the other commands start without the HTTP stack.
      const { startDaemon, WorkerStartError } = await import('../daemon.js');
      let daemon;
      let installed: { inst: Installation; baseUrl: string } | undefined;
      try {
        daemon = await startDaemon({ config, onInstalled: (inst, baseUrl) => (installed = { inst, baseUrl }) });
      } catch (err) {
        if (err instanceof DatabaseRefusedError || err instanceof DaemonRunningError) throw new CliError(err.message);
        // Logged with its stack; the daemon has stopped what had started and released the data folder.
        if (err instanceof WorkerStartError) throw new CliError(err.message, 1);
        const e = err as NodeJS.ErrnoException;
        if (e.code === 'EADDRINUSE') throw new CliError(`port ${config.http.port} on ${config.http.host} is already in use (another posd running?)`);
        if (e.code === 'EACCES' && e.syscall === 'listen') throw new CliError(`not allowed to listen on ${config.http.host}:${config.http.port}`);
        if (e.code === 'EACCES' || e.code === 'EPERM' || e.code === 'EROFS') {
          throw new CliError(
            `cannot write in the data folder ${config.data_dir} (${e.code}${e.path ? ` on ${e.path}` : ''}): give the user running posd write access to it, or choose another --data`,
          );
        }
        if (e.code === 'SQLITE_CANTOPEN' || e.code === 'SQLITE_READONLY')
          throw new CliError(`cannot open the database in ${config.data_dir} (${e.code}): give the user running posd write access to the folder and its files`);
        throw err;
      }
      const d = daemon;
      const notify = new SdNotify(process.env, 'systemd-notify', (err) => d.ctx.log.warn({ err: err.message }, 'systemd notification failed'));
      // Caught from the moment the daemon runs: a stop asked for while the banner is written still stops cleanly.
      const stopped = new Promise<boolean>((resolve) => {
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
      // Printed last, once the start's own lines are out, so the keys do not scroll away; on stderr and
      // never through the logger: keys must not reach log storage.
      if (installed) {
        const shown = installed;
        // The log's writes are asynchronous: flushed first, or its start lines land after the banner
        // (pino's flush(cb) answers before the buffered lines are out; flushSync writes them).
        try {
          (d.ctx.log as unknown as Record<symbol, { flushSync?: () => void }>)[pino.symbols.streamSym]?.flushSync?.();
        } catch {
          // Best effort: the banner is still printed.
        }
        process.stderr.write(installBanner(config, d.url, shown.inst, shown.baseUrl));
      }
      // Listening, migrated and workers started: only now is the service ready.
      await notify.ready(`serving ${d.url}`);
      notify.startWatchdog();
      // A worker that could not stop may have left work half done: say so to systemd and scripts.
      if (!(await stopped)) throw new CliError('stopped with errors (see the log)', 1);
    });
}

function installBanner(config: Config, url: string, inst: Installation, baseUrl: string): string {
  return [
    '',
    `posd: new ${config.role} installation in ${config.data_dir}`,
    `  API           ${baseUrl}`,
    `  account       ${inst.account_id} (live), sandbox ${inst.sandbox_id}`,
    `  test key      ${inst.keys.test}`,
    `  live key      ${inst.keys.live}`,
    '  Keys are shown only now: store them somewhere safe.',
    `  Try: curl -H "X-SECRET-KEY: ${inst.keys.test}" ${baseUrl}/test`,
    `  Status page   ${url}/`,
    `  Set its password: posd manager set-password --data ${config.data_dir}`,
    '',
    '',
  ].join('\n');
}

/** `posd serve --role central-front`: the front's start, its signals and systemd's notifications. */
async function serveFront(config: Config): Promise<void> {
  const { startFront, FrontStartError } = await import('../front.js');
  let front;
  try {
    front = await startFront({ config });
  } catch (err) {
    if (err instanceof FrontStartError) throw new CliError(err.message);
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'EADDRINUSE') throw new CliError(`port ${config.http.port} on ${config.http.host} is already in use (another posd running?)`);
    if (e.code === 'EACCES' && e.syscall === 'listen') throw new CliError(`not allowed to listen on ${config.http.host}:${config.http.port}`);
    throw err;
  }
  const f = front;
  const notify = new SdNotify(process.env, 'systemd-notify', (err) => f.log.warn({ err: err.message }, 'systemd notification failed'));
  const stopped = new Promise<boolean>((resolve) => {
    const onSignal = (signal: string) => {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      f.log.info({ signal }, 'signal received');
      void notify.stopping();
      f.stop().then(resolve, () => resolve(false));
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
  await notify.ready(`serving ${f.url} (central-front)`);
  notify.startWatchdog();
  if (!(await stopped)) throw new CliError('stopped with errors (see the log)', 1);
}
