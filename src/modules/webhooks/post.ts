import type { Dispatcher } from 'undici';
import type { Deadline } from './deadlines.js';
import { ANSWER_EXCERPT_BYTES } from '../../system/signed-post.js';

/** What a delivery needs of an answer: its status and, for a retry, its `Retry-After`. */
export interface PostAnswer {
  statusCode: number;
  retryAfter: string | undefined;
  /** The first `ANSWER_EXCERPT_BYTES` (1 KiB) of the answer's body, as UTF-8; null when it had none. */
  excerpt: string | null;
}

export interface PostRequest {
  origin: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  /** Aborts the request (the whole-attempt deadline, or the worker stopping). */
  deadline: Deadline;
  /** Bytes of the answer's body read at most; past that the connection is dropped. */
  bodyLimit: number;
}

const RETRY_AFTER = 'retry-after';

/**
 * One POST through an undici dispatcher (the worker's keep-alive agent), answered with the status
 * line alone. `agent.request()` builds a readable stream, an async resource and a parsed header
 * object for every answer, which a delivery then only drains: about a fifth of an attempt's CPU.
 * This handler is the dispatcher's own interface (`dispatch(opts, handler)`, the one `request()`
 * is built on) and keeps what `request()` + `body.dump({limit})` did: the body is read to its end
 * (so the connection is reused) up to `bodyLimit`, an abort before the status line rejects, and a
 * status line that arrived counts as the answer even if the body is then cut off (the deadline, a
 * reset, too long a body).
 */
export function post(dispatcher: Dispatcher, req: PostRequest): Promise<PostAnswer> {
  return new Promise((resolve, reject) => {
    const handler = new PostHandler(req, resolve, reject);
    dispatcher.dispatch(
      { origin: req.origin, path: req.path, method: 'POST', headers: req.headers, body: req.body },
      handler as unknown as Dispatcher.DispatchHandler,
    );
  });
}

class PostHandler {
  private abort: ((reason?: Error) => void) | null = null;
  private reason: Error | null = null;
  private statusCode = 0;
  private retryAfter: string | undefined;
  private received = 0;
  private readonly kept: Buffer[] = [];
  private settled = false;
  private readonly onAbort = (reason: Error) => {
    this.reason = reason;
    this.abort?.(reason);
  };

  constructor(
    private readonly req: PostRequest,
    private readonly resolve: (a: PostAnswer) => void,
    private readonly reject: (err: Error) => void,
  ) {
    if (req.deadline.reason) this.reason = req.deadline.reason;
    else req.deadline.watch(this.onAbort);
  }

  onConnect(abort: (reason?: Error) => void): void {
    if (this.reason) abort(this.reason);
    else this.abort = abort;
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[]): boolean {
    if (statusCode < 200) return true; // 1xx: the real answer follows
    this.statusCode = statusCode;
    // Only a failed answer's Retry-After is ever used: a success's headers are not looked at.
    if (statusCode >= 300) {
      for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
        const name = rawHeaders[i];
        if (name.length === RETRY_AFTER.length && name.toString('latin1').toLowerCase() === RETRY_AFTER) {
          this.retryAfter = rawHeaders[i + 1].toString('latin1');
          break;
        }
      }
    }
    return true;
  }

  onData(chunk: Buffer): boolean {
    // Copied: the chunk may be a view of a buffer the parser reuses. At most 1 KiB an answer.
    if (this.received < ANSWER_EXCERPT_BYTES) this.kept.push(Buffer.from(chunk.subarray(0, ANSWER_EXCERPT_BYTES - this.received)));
    this.received += chunk.length;
    if (this.received > this.req.bodyLimit) this.abort?.(new Error(`answer body over ${this.req.bodyLimit} bytes`));
    return true;
  }

  onComplete(): void {
    this.finish(null);
  }

  onError(err: Error): void {
    this.finish(err);
  }

  private finish(err: Error | null): void {
    if (this.settled) return;
    this.settled = true;
    this.req.deadline.unwatch(this.onAbort);
    if (this.statusCode !== 0) {
      const excerpt = this.kept.length === 0 ? null : (this.kept.length === 1 ? this.kept[0] : Buffer.concat(this.kept)).toString('utf8');
      this.resolve({ statusCode: this.statusCode, retryAfter: this.retryAfter, excerpt });
    } else this.reject(err ?? new Error('no answer'));
  }
}
