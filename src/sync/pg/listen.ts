import { EventEmitter } from 'node:events';
import type pg from 'pg';
import { createClient } from './pool.js';

/**
 * A `LISTEN` connection on one channel: `notify` with each payload, `reconnected` after the
 * connection came back (notifications sent meanwhile are lost: the listener looks at everything).
 * Reconnects with a backoff up to `maxBackoffMs`.
 */
export class ChannelListener extends EventEmitter {
  private client: pg.Client | null = null;
  private reconnecting: NodeJS.Timeout | undefined;
  private stopped = false;
  private backoffMs = 50;

  constructor(
    private readonly config: pg.ClientConfig,
    readonly channel: string,
    private readonly opts: { maxBackoffMs?: number; applicationName?: string } = {},
  ) {
    super();
  }

  async start(): Promise<void> {
    this.stopped = false;
    await this.connect();
  }

  private async connect(): Promise<void> {
    const client = createClient({ ...this.config, application_name: this.opts.applicationName ?? `posd-listen-${this.channel}`, keepAlive: true });
    client.on('notification', (n) => {
      if (n.channel === this.channel) this.emit('notify', n.payload ?? '');
    });
    const lost = () => {
      if (this.client !== client) return;
      this.client = null;
      this.scheduleReconnect();
    };
    client.on('error', lost);
    client.on('end', lost);
    try {
      await client.connect();
      await client.query(`LISTEN ${client.escapeIdentifier(this.channel)}`);
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    if (this.stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.backoffMs = 50;
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.reconnecting) return;
    this.reconnecting = setTimeout(async () => {
      this.reconnecting = undefined;
      try {
        await this.connect();
        this.emit('reconnected');
      } catch {
        this.backoffMs = Math.min(this.backoffMs * 2, this.opts.maxBackoffMs ?? 5000);
        this.scheduleReconnect();
      }
    }, this.backoffMs);
    this.reconnecting.unref();
  }

  /** The LISTEN session's backend pid (tests cut it with pg_terminate_backend). */
  async pid(): Promise<number | null> {
    return this.client ? (await this.client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid : null;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.reconnecting);
    const c = this.client;
    this.client = null;
    if (c) await c.end().catch(() => undefined);
  }
}
