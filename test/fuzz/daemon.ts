import { Writable } from 'node:stream';
import pino from 'pino';
import { startTestServer, type TestServer } from '../helpers/server.js';
import type { FuzzTarget } from './run.js';

/**
 * A real daemon (real SQLite file, real sockets) for the fuzz suite, whose log is kept to look for
 * stack traces. Bursts are not the subject here, so the per-key limit is out of the way; every
 * outbound URL stays guarded (no allow list).
 */
export async function fuzzDaemon(): Promise<{ server: TestServer; target: FuzzTarget }> {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n')) {
        if (!l.trim()) continue;
        try {
          lines.push(JSON.parse(l));
        } catch {
          lines.push({ level: 60, msg: l });
        }
      }
      done();
    },
  });
  const server = await startTestServer({ log: pino({ level: 'info' }, sink) });
  return { server, target: { url: server.url, keys: server.installation.keys, logLines: () => lines } };
}
