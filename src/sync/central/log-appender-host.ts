import { Worker as Thread } from 'node:worker_threads';
import type { AppContext } from '../../context.js';
import { type AppendHooks, type AppendShare, ringAppender } from './append-loop.js';
import type { AppendSender } from './log-appender.js';
import { relayThreadLog } from './projector-host.js';

/** What the daemon hands the appender's thread (src/sync/central/log-appender-thread.ts) at its start. */
export interface AppenderStart {
  config: AppContext['config'];
  epoch: number;
  /** The leadership's figures and ring (src/sync/central/append-loop.ts `AppendShare`). */
  share: SharedArrayBuffer;
}

export type AppenderIn = { stop: true };
export type AppenderOut =
  | { started: true }
  | { stopped: true }
  | { log: string }
  | { advanced: number; n: number; ms: number; chars: number }
  | { fence: string };

/** How long a stop waits for the append in flight before the thread is ended. */
const STOP_MS = 30_000;

/**
 * The sending half of a leadership's appender on its own thread (`program`: the thread's built
 * file, src/sync/central/log-appender-thread.ts in dist). A ring is a shared counter moved and
 * notified, from this loop or the projector's thread, with no message. The thread's end other than
 * by `stop` (a crash) fences the appender: no acknowledgement could be made sure of after it.
 */
export class AppenderThread implements AppendSender {
  private readonly thread: Thread;
  private readonly exited: Promise<void>;
  private stopping = false;

  constructor(
    ctx: AppContext,
    program: URL,
    epoch: number,
    private readonly share: AppendShare,
    hooks: AppendHooks,
  ) {
    const data: AppenderStart = { config: ctx.config, epoch, share: share.figures.buffer as SharedArrayBuffer };
    this.thread = new Thread(program, { workerData: data });
    this.thread.on('message', (m: AppenderOut) => {
      if ('advanced' in m) hooks.advanced(m.advanced, m.n, m.ms, m.chars);
      else if ('fence' in m) hooks.fence(m.fence);
      else if ('log' in m) relayThreadLog(ctx, m.log, 'appender');
    });
    this.thread.on('error', (err) => ctx.log.error({ err }, 'sync: the appender thread failed'));
    this.exited = new Promise<void>((resolve) =>
      this.thread.once('exit', (code) => {
        if (!this.stopping) hooks.fence(`sync: the central log's appender thread ended (${code}); this core refuses writes`);
        resolve();
      }),
    );
  }

  ring(): void {
    ringAppender(this.share);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.thread.postMessage({ stop: true } satisfies AppenderIn);
    const timer = setTimeout(() => void this.thread.terminate(), STOP_MS);
    await this.exited;
    clearTimeout(timer);
  }
}
