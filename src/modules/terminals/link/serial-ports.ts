import type { AppContext } from '../../../context.js';
import { keepServerSerialLink, type Clock as Scheduler, type PortOpener, type ServerSerialKeeper } from '../../../../devices/index.js';
import { serialTerminals, terminalRow } from '../service.js';
import { terminalSignals } from '../signals.js';
import type { TerminalBridge } from './bridge.js';
import { linkBudget } from './budget.js';

/**
 * Opens and keeps open the serial port of every serial terminal: those of the config
 * (`terminals.serial`, which win for their terminal id) and those registered with POST /terminals.
 * Each opening gives one link, handshaked by the bridge and pinned to its terminal id.
 */
export class SerialPorts {
  private readonly keepers = new Map<string, { path: string; keeper: ServerSerialKeeper }>();
  private readonly onRegistered = (id: string) => this.openRegistered(id);
  private readonly onRetired = (id: string) => void this.close(id);

  constructor(
    private readonly ctx: AppContext,
    private readonly bridge: TerminalBridge,
    private readonly scheduler: Scheduler,
    private readonly open?: PortOpener,
  ) {}

  start(): void {
    for (const entry of this.ctx.config.terminals.serial) {
      const row = terminalRow(this.ctx, entry.terminal_id);
      if (!row || row.retired_at || row.transport !== 'serial') {
        this.ctx.log.warn({ terminal_id: entry.terminal_id, path: entry.path }, 'terminals.serial names no registered serial terminal; port not opened');
        continue;
      }
      this.keep(entry.terminal_id, entry.path, entry.baud_rate);
    }
    for (const row of serialTerminals(this.ctx)) if (row.serial_path) this.keep(row.id, row.serial_path, row.baud_rate ?? 115_200);
    const signals = terminalSignals(this.ctx);
    signals.on('registered', this.onRegistered);
    signals.on('retired', this.onRetired);
  }

  async stop(): Promise<void> {
    const signals = terminalSignals(this.ctx);
    signals.off('registered', this.onRegistered);
    signals.off('retired', this.onRetired);
    await Promise.all([...this.keepers.keys()].map((id) => this.close(id)));
  }

  private openRegistered(id: string): void {
    const row = terminalRow(this.ctx, id);
    if (row?.transport === 'serial' && row.serial_path) this.keep(row.id, row.serial_path, row.baud_rate ?? 115_200);
  }

  private keep(terminalId: string, path: string, baudRate: number): void {
    if (this.keepers.has(terminalId)) return;
    if ([...this.keepers.values()].some((k) => k.path === path)) {
      this.ctx.log.warn({ terminal_id: terminalId, path }, 'serial port already used by another terminal; not opened');
      return;
    }
    const cfg = this.ctx.config.terminals;
    const keeper = keepServerSerialLink({
      path,
      baudRate,
      open: this.open,
      clock: this.scheduler,
      ackTimeoutMs: cfg.serial_ack_timeout_ms,
      maxResends: cfg.serial_max_resends,
      pingIntervalMs: cfg.ping_interval_ms,
      maxMissedPings: cfg.max_missed_pings,
      budget: linkBudget(cfg),
      backoff: { maxMs: cfg.serial_reopen_max_ms },
    });
    keeper.on('link', (link) => this.bridge.acceptLink(link, terminalId));
    keeper.on('openFailed', ({ error, retryInMs }) =>
      this.ctx.log.warn({ terminal_id: terminalId, path, err: error.message, retry_in_ms: retryInMs }, 'opening the serial port failed'),
    );
    this.keepers.set(terminalId, { path, keeper });
    keeper.start();
  }

  private async close(terminalId: string): Promise<void> {
    const k = this.keepers.get(terminalId);
    if (!k) return;
    this.keepers.delete(terminalId);
    await k.keeper.stop();
  }
}
