import { spawn } from 'node:child_process';

/**
 * systemd's notify protocol (Type=notify): READY=1 after a full start, WATCHDOG=1 at half of
 * WATCHDOG_USEC, STOPPING=1 on the way out. Node cannot send on a unix datagram socket, so each
 * message goes through the `systemd-notify` binary; the unit sets `NotifyAccess=all` because the
 * sender is that child, not the main process. Without NOTIFY_SOCKET (not under systemd, tests)
 * every call is a no-op.
 */
export class SdNotify {
  private watchdogTimer: NodeJS.Timeout | undefined;
  readonly enabled: boolean;

  constructor(
    private readonly env: NodeJS.ProcessEnv = process.env,
    private readonly binary = 'systemd-notify',
    private readonly onError: (err: Error) => void = () => undefined,
  ) {
    this.enabled = !!env.NOTIFY_SOCKET;
  }

  /** Sends `KEY=VALUE` assignments; resolves once systemd-notify has handed them over (or failed). */
  send(...assignments: string[]): Promise<void> {
    if (!this.enabled) return Promise.resolve();
    return new Promise((resolve) => {
      const child = spawn(this.binary, [`--pid=${process.pid}`, ...assignments], { env: this.env, stdio: ['ignore', 'ignore', 'pipe'], timeout: 5000 });
      let stderr = '';
      child.stderr!.on('data', (d) => (stderr += d));
      child.on('error', (err) => {
        this.onError(err);
        resolve();
      });
      child.on('exit', (code) => {
        if (code !== 0) this.onError(new Error(`systemd-notify ${assignments.join(' ')} exited ${code}: ${stderr.trim()}`));
        resolve();
      });
    });
  }

  ready(status = 'serving'): Promise<void> {
    return this.send('READY=1', `STATUS=${status}`);
  }

  stopping(): Promise<void> {
    this.stopWatchdog();
    return this.send('STOPPING=1');
  }

  /** Half of WATCHDOG_USEC, or null when systemd asked for no watchdog (or asked another pid). */
  watchdogIntervalMs(): number | null {
    const usec = Number(this.env.WATCHDOG_USEC);
    if (!this.enabled || !Number.isFinite(usec) || usec <= 0) return null;
    if (this.env.WATCHDOG_PID && Number(this.env.WATCHDOG_PID) !== process.pid) return null;
    return Math.max(1, Math.floor(usec / 2000));
  }

  /**
   * Pings the watchdog from the event loop: a blocked loop stops the pings and systemd restarts us,
   * which is the point.
   */
  startWatchdog(): void {
    const every = this.watchdogIntervalMs();
    if (every === null || this.watchdogTimer) return;
    this.watchdogTimer = setInterval(() => void this.send('WATCHDOG=1'), every);
    this.watchdogTimer.unref();
  }

  stopWatchdog(): void {
    clearInterval(this.watchdogTimer);
    this.watchdogTimer = undefined;
  }
}
