import { execFile, execFileSync, spawn } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);

/**
 * A throw-away PostgreSQL cluster for one test file: initdb in a temp folder, listening only on a
 * unix socket in that folder (no TCP port to collide with another file's cluster), fsync on.
 * initdb and the server refuse root, so as root (CI) both run as the `postgres` system user (made
 * by Debian's `postgresql` package) through runuser, with the folder chowned to it; as any other
 * user they run as that user.
 */
export interface PgCluster {
  /** The socket folder (node-postgres takes it as `host`). */
  host: string;
  port: number;
  user: string;
  database: string;
  /** node-postgres settings for a client or pool of this cluster (`database` overridable). */
  config(database?: string): pg.ClientConfig;
  /** The same as a URL, as posd's `sync.postgres.url` takes it (the socket folder as `host`). */
  url(database?: string): string;
  /** A fresh database, for a test that wants tables of its own. */
  createDatabase(name: string): Promise<pg.ClientConfig>;
  /** Stops the server (fast shutdown: sessions cut) and keeps its folder, for `resume`: an outage. */
  halt(): Promise<void>;
  /** Starts the server `halt` stopped, on the same socket and data. */
  resume(): Promise<void>;
  /** Stops the server at once and removes the folder. */
  stop(): Promise<void>;
}

/** The newest Debian PostgreSQL's bin folder, or '' (then initdb and pg_ctl are looked up on PATH). */
function binDir(): string {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return '';
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length ? join(root, versions[0], 'bin') : '';
}

export async function startPgCluster(): Promise<PgCluster> {
  const bin = binDir();
  const tool = (name: string) => (bin ? join(bin, name) : name);
  const asRoot = process.getuid?.() === 0;
  // As root: the same command through runuser as `postgres` (setpriv where runuser is missing).
  const command = (file: string, args: string[]): [string, string[]] => {
    if (!asRoot) return [file, args];
    if (existsSync('/usr/sbin/runuser') || existsSync('/sbin/runuser')) return ['runuser', ['-u', 'postgres', '--', file, ...args]];
    return ['setpriv', ['--reuid=postgres', '--regid=postgres', '--init-groups', '--', file, ...args]];
  };
  const dir = mkdtempSync(join(tmpdir(), 'posd-pg-'));
  const data = join(dir, 'data');
  const exec = async (file: string, args: string[]) => {
    const [f, a] = command(tool(file), args);
    // cwd: the cluster's folder, which the postgres user can read (the caller's may not be).
    try {
      return await run(f, a, { cwd: dir, env: { ...process.env, LC_ALL: 'C', LANG: 'C' } });
    } catch (err) {
      const log = existsSync(join(dir, 'log')) ? readFileSync(join(dir, 'log'), 'utf8') : '';
      throw new Error(`${file} failed: ${(err as Error).message}\n${log}`);
    }
  };
  if (asRoot) {
    const { uid, gid } = await postgresIds();
    chownSync(dir, uid, gid);
  }
  const user = 'posd';
  const port = 5432;
  try {
    // --no-sync: the cluster's files are not flushed at creation (a test's setup only); the server runs with fsync on.
    await exec('initdb', ['-D', data, '-U', user, '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C', '--no-instructions']);
    appendFileSync(
      join(data, 'postgresql.conf'),
      [
        "listen_addresses = ''",
        `unix_socket_directories = '${dir}'`,
        `port = ${port}`,
        'fsync = on',
        'synchronous_commit = on',
        'max_connections = 60',
        'shared_buffers = 32MB',
        '',
      ].join('\n'),
    );
    await exec('pg_ctl', ['start', '-D', data, '-w', '-t', '30', '-l', join(dir, 'log')]);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const config = (database = 'postgres'): pg.ClientConfig => ({ host: dir, port, user, database });
  let stopped = false;
  // A test process that ends without its afterAll (a crash, a timeout) leaves no server behind.
  const onExit = () => {
    if (stopped) return;
    try {
      const [f, a] = command(tool('pg_ctl'), ['stop', '-D', data, '-m', 'immediate', '-w']);
      execFileSync(f, a, { cwd: dir, stdio: 'ignore' });
    } catch {
      // Already gone.
    }
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', onExit);
  // And a process killed outright (vitest ends its workers so, without 'exit' handlers): a detached
  // shell that waits for this process to go, then stops the server and removes the folder.
  const [stopFile, stopArgs] = command(tool('pg_ctl'), ['stop', '-D', data, '-m', 'immediate', '-w']);
  const watchdog = spawn(
    'sh',
    [
      '-c',
      'p=$1; d=$2; shift 2; while kill -0 "$p" 2>/dev/null; do sleep 1; done; "$@" >/dev/null 2>&1; rm -rf "$d"',
      'sh',
      String(process.pid),
      dir,
      stopFile,
      ...stopArgs,
    ],
    { detached: true, stdio: 'ignore', cwd: dir },
  );
  watchdog.unref();
  return {
    host: dir,
    port,
    user,
    database: 'postgres',
    config,
    url: (database = 'postgres') => `postgresql://${user}@/${database}?host=${encodeURIComponent(dir)}&port=${port}`,
    async createDatabase(name) {
      const c = new pg.Client(config());
      await c.connect();
      try {
        await c.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
      } finally {
        await c.end();
      }
      return config(name);
    },
    async halt() {
      await exec('pg_ctl', ['stop', '-D', data, '-m', 'fast', '-w']);
    },
    async resume() {
      await exec('pg_ctl', ['start', '-D', data, '-w', '-t', '30', '-l', join(dir, 'log')]);
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      process.off('exit', onExit);
      watchdog.kill();
      try {
        await exec('pg_ctl', ['stop', '-D', data, '-m', 'immediate', '-w']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

async function postgresIds(): Promise<{ uid: number; gid: number }> {
  const { stdout } = await run('getent', ['passwd', 'postgres']).catch(() => ({ stdout: '' }));
  const f = stdout.trim().split(':');
  if (f.length < 4) {
    throw new Error(`PostgreSQL refuses to run as root and there is no postgres user (running as ${userInfo().username}): install Debian's postgresql package`);
  }
  return { uid: Number(f[2]), gid: Number(f[3]) };
}
