import { createServer } from 'node:net';

/** Below Linux's ephemeral range (32768-60999), which the kernel gives outgoing connections and `listen(0)`. */
const LOW = 20_000;
const HIGH = 32_767;

/**
 * A TCP port free on 127.0.0.1 now, for a process started on a fixed port (or restarted on the one
 * it had). The port is outside the ephemeral range, so a client connection (to PostgreSQL, between
 * the processes of a test) cannot take it in the moment between this check and the process's own
 * listen.
 */
export async function freePort(): Promise<number> {
  for (let tries = 0; ; tries++) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW + 1));
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) return port;
    if (tries > 200) throw new Error(`no free port found between ${LOW} and ${HIGH}`);
  }
}
