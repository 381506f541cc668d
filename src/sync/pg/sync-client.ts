import { MessageChannel, receiveMessageOnPort, type MessagePort, type Worker } from 'node:worker_threads';
import { startPlainThread } from '../../db/threads.js';

/** PostgreSQL's refusal or the connection's failure, as the thread reported it. */
export class SyncQueryError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
    this.name = 'SyncQueryError';
  }
}

/**
 * One PostgreSQL connection, on a thread of its own, queried synchronously: the caller's thread
 * blocks (Atomics.wait) until the answer or the timeout. Only for what must happen inside a SQLite
 * transaction, which cannot await: the leading core's append to the central's log (about a
 * millisecond on a local server). A query that timed out may still commit later: the caller must
 * treat its outcome as unknown.
 */
export class SyncPgClient {
  private readonly worker: Worker;
  private readonly port: MessagePort;
  private readonly signal = new Int32Array(new SharedArrayBuffer(4));
  private seq = 0;

  constructor(url: string) {
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.worker = startPlainThread('pg-call', { url, flag: this.signal.buffer, port: port2 }, [port2]);
    this.worker.unref();
  }

  query<R>(text: string, values: unknown[], timeoutMs: number): R[] {
    const id = ++this.seq;
    this.port.postMessage({ id, text, values });
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const seen = Atomics.load(this.signal, 0);
      const got = receiveMessageOnPort(this.port) as { message: { id: number; rows?: R[]; error?: string; code?: string } } | undefined;
      if (got) {
        const m = got.message;
        if (m.id !== id) continue; // the late answer of a query that timed out
        if (m.error !== undefined) throw new SyncQueryError(m.error, m.code);
        return m.rows ?? [];
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new SyncQueryError(`PostgreSQL did not answer within ${timeoutMs} ms`, undefined);
      Atomics.wait(this.signal, 0, seen, left);
    }
  }

  async close(): Promise<void> {
    this.port.close();
    await this.worker.terminate();
  }
}
