import { BlockList, isIPv4 } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { Clock } from '../clock.js';

/**
 * Whether an address is on the box's own network: loopback, or inside the subnet of one of the
 * box's interfaces (the store's LAN, where its tills are). Under a flood from elsewhere, these keep
 * the box: the connection reserve (src/api/connections.ts) and the manager login's global limit
 * (modules/ops) admit them when they refuse others. Interfaces are re-read at most once a minute
 * (a DHCP lease may move the box).
 */
export class OwnNetwork {
  private list = new BlockList();
  private readAt = Number.NEGATIVE_INFINITY;

  /** `cidrs` (`http.own_networks`), when given, replace what the interfaces say. */
  constructor(
    private readonly clock: Clock,
    private readonly cidrs: readonly string[] = [],
    private readonly interfaces: () => ReturnType<typeof networkInterfaces> = networkInterfaces,
  ) {}

  has(ip: string | undefined): boolean {
    if (!ip) return false;
    const address = ip.startsWith('::ffff:') && isIPv4(ip.slice(7)) ? ip.slice(7) : ip;
    if (this.clock.now() - this.readAt > 60_000) this.refresh();
    try {
      return this.list.check(address, isIPv4(address) ? 'ipv4' : 'ipv6');
    } catch {
      return false;
    }
  }

  private refresh(): void {
    const list = new BlockList();
    this.readAt = this.clock.now();
    if (this.cidrs.length > 0) {
      for (const cidr of this.cidrs) {
        const [address, prefix] = cidr.trim().split('/');
        const family = isIPv4(address) ? 'ipv4' : 'ipv6';
        list.addSubnet(address, prefix === undefined ? (family === 'ipv4' ? 32 : 128) : Number(prefix), family);
      }
      this.list = list;
      return;
    }
    list.addSubnet('127.0.0.0', 8, 'ipv4');
    list.addAddress('::1', 'ipv6');
    for (const addrs of Object.values(this.interfaces())) {
      for (const a of addrs ?? []) {
        const prefix = Number(a.cidr?.split('/')[1]);
        if (!Number.isInteger(prefix)) continue;
        const family = a.family === 'IPv4' ? 'ipv4' : 'ipv6';
        // The network address is what BlockList wants; addSubnet masks the host bits itself.
        list.addSubnet(a.address.split('%')[0], prefix, family);
      }
    }
    this.list = list;
  }
}
