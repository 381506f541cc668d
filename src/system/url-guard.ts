import { BlockList, isIP } from 'node:net';
import { lookup as dnsLookup } from 'node:dns';
import type { LookupFunction } from 'node:net';
import type { Agent } from 'undici';
import { undici } from './undici.js';
import type { AppContext } from '../context.js';

/**
 * The one outbound URL guard (docs/security.md): every URL posd fetches on someone's word (webhook
 * endpoints, calendar feeds, the tax certifier) goes through it. It keeps requests off the box's
 * own network (SSRF): loopback, private, link-local, carrier
 * NAT, multicast, reserved and cloud metadata addresses are refused, unless an allow-listed CIDR
 * (`webhooks.allow_cidrs`, which admits for every outbound use) admits them. URLs are checked at creation and again at every delivery,
 * after DNS resolution, on the very address the connection then uses (the guard is the socket's DNS
 * lookup), so a name that later resolves inward is not followed.
 */

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}
/** Name resolution, injectable so tests can make a name resolve anywhere. */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) =>
    dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) =>
      err ? reject(err) : resolve(addresses.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }))),
    ),
  );

const REFUSED_V4 = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT (and Alibaba's metadata 100.100.100.200)
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata 169.254.169.254
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved and broadcast
] as const;
const REFUSED_V6 = [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96], // NAT64: checked again through the embedded IPv4 below
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7], // unique local, AWS metadata fd00:ec2::254
  ['fe80::', 10],
  ['ff00::', 8],
] as const;

export class AddressRefusedError extends Error {
  constructor(
    readonly host: string,
    readonly address: string,
  ) {
    super(address === host ? `${host} is a private, local or metadata address` : `${host} resolves to ${address}, a private, local or metadata address`);
    this.name = 'AddressRefusedError';
  }
}

/** The IPv4 address inside an IPv4-mapped or NAT64 IPv6 address, if any. */
function embeddedV4(address: string): string | undefined {
  const m = /^(?:::ffff:|64:ff9b::)(?:0:)?(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (m) return m[1];
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!hex) return undefined;
  const hi = parseInt(hex[1], 16);
  const lo = parseInt(hex[2], 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

export class UrlGuard {
  private readonly refused = new BlockList();
  private readonly allowed = new BlockList();

  constructor(
    allowCidrs: readonly string[],
    readonly resolver: Resolver = systemResolver,
  ) {
    for (const [net, prefix] of REFUSED_V4) this.refused.addSubnet(net, prefix, 'ipv4');
    for (const [net, prefix] of REFUSED_V6) this.refused.addSubnet(net, prefix, 'ipv6');
    for (const cidr of allowCidrs) {
      const parsed = parseCidr(cidr);
      if (!parsed) throw new Error(`webhooks.allow_cidrs: not a CIDR: ${cidr}`);
      this.allowed.addSubnet(parsed.network, parsed.prefix, parsed.type);
    }
  }

  /** Whether one literal address may be delivered to. */
  addressAllowed(address: string): boolean {
    const type = isIP(address) === 6 ? 'ipv6' : 'ipv4';
    if (this.allowed.check(address, type)) return true;
    const v4 = type === 'ipv6' ? embeddedV4(address) : undefined;
    if (v4) return this.addressAllowed(v4);
    return !this.refused.check(address, type);
  }

  /**
   * Checks a URL's shape and, for a name, what it resolves to now. Returns the reasons it is refused
   * (empty when accepted). A name that does not resolve at all is accepted: a store may register an
   * endpoint while offline, and every delivery checks again.
   */
  async check(raw: string): Promise<string[]> {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return ['must be an absolute http or https URL'];
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return ['must use http or https'];
    if (url.username || url.password) return ['must not carry a user name or password'];
    const host = hostOf(url);
    if (!host) return ['must name a host'];
    if (isIP(host)) return this.addressAllowed(host) ? [] : [new AddressRefusedError(host, host).message];
    let addresses: ResolvedAddress[];
    try {
      addresses = await this.resolver(host);
    } catch {
      return [];
    }
    const bad = addresses.find((a) => !this.addressAllowed(a.address));
    return bad ? [new AddressRefusedError(host, bad.address).message] : [];
  }

  /**
   * A `net` lookup function for the delivery agent: resolves with the resolver, refuses the
   * connection when any address is refused, and hands the checked addresses to the socket, so no
   * second resolution can differ from what was checked.
   */
  lookup(): LookupFunction {
    return ((hostname: string, options: { all?: boolean; family?: number | string }, callback: (...args: unknown[]) => void) => {
      const host = hostname.replace(/^\[|\]$/g, '');
      const resolved: Promise<ResolvedAddress[]> = isIP(host) ? Promise.resolve([{ address: host, family: isIP(host) as 4 | 6 }]) : this.resolver(host);
      resolved.then(
        (addresses) => {
          const wanted = options?.family === 4 || options?.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses;
          if (wanted.length === 0) return callback(Object.assign(new Error(`${host} has no address`), { code: 'ENOTFOUND' }));
          const bad = wanted.find((a) => !this.addressAllowed(a.address));
          if (bad) return callback(Object.assign(new AddressRefusedError(host, bad.address), { code: 'EADDRREFUSED' }));
          if (options?.all) return callback(null, wanted);
          callback(null, wanted[0].address, wanted[0].family);
        },
        (err: NodeJS.ErrnoException) => callback(err),
      );
    }) as unknown as LookupFunction;
  }
}

/** The host of a URL without IPv6 brackets. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}

export function parseCidr(cidr: string): { network: string; prefix: number; type: 'ipv4' | 'ipv6' } | undefined {
  const [network, prefixText] = cidr.trim().split('/');
  const version = isIP(network);
  if (!version) return undefined;
  const max = version === 4 ? 32 : 128;
  const prefix = prefixText === undefined ? max : Number(prefixText);
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > max || (prefixText !== undefined && !/^\d+$/.test(prefixText))) return undefined;
  return { network, prefix, type: version === 4 ? 'ipv4' : 'ipv6' };
}

const guards = new WeakMap<AppContext, UrlGuard>();
const resolvers = new WeakMap<AppContext, Resolver>();

/** Tests make a name resolve anywhere (DNS rebinding) for the daemon's shared guard; call before first use. */
export function setOutboundResolver(ctx: AppContext, resolver: Resolver): void {
  resolvers.set(ctx, resolver);
  guards.delete(ctx);
}

/** The daemon's guard for calendar feeds and the tax certifier, from `webhooks.allow_cidrs`. */
export function outboundGuard(ctx: AppContext): UrlGuard {
  let g = guards.get(ctx);
  if (!g) {
    g = new UrlGuard(ctx.config.webhooks.allow_cidrs, resolvers.get(ctx));
    guards.set(ctx, g);
  }
  return g;
}

/**
 * An agent whose every connection resolves through the guard (the check happens on the address
 * the socket then uses) and that never follows a redirect (undici's request does not). A literal
 * address skips the lookup, so callers check it with `literalRefused` first.
 */
export function guardedAgent(guard: UrlGuard, opts: { timeoutMs: number; ca?: string; connections?: number }): Agent {
  return new (undici().Agent)({
    connect: { lookup: guard.lookup(), timeout: opts.timeoutMs, ...(opts.ca ? { ca: opts.ca } : {}) },
    headersTimeout: opts.timeoutMs,
    bodyTimeout: opts.timeoutMs,
    connections: opts.connections ?? 8,
  });
}

/** Whether a URL names a literal address the guard refuses (the socket's lookup never sees it). */
export function literalRefused(guard: UrlGuard, raw: string): boolean {
  const host = hostOf(new URL(raw));
  return isIP(host) !== 0 && !guard.addressAllowed(host);
}

export const ADDRESS_REFUSED = 'address_refused: the host is a private, local or metadata address';

/**
 * An outbound failure in a fixed vocabulary: never the resolved address, the peer's own message or
 * the low-level error text, so a stored `last_error` tells a caller nothing about what answered.
 */
export function describeOutboundError(err: unknown): string {
  const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
  const code = e?.code ?? e?.cause?.code ?? '';
  if (code === 'EADDRREFUSED' || e?.name === 'AddressRefusedError' || e?.cause?.name === 'AddressRefusedError') return ADDRESS_REFUSED;
  if (e?.name === 'TimeoutError' || /TIMEOUT/.test(code)) return 'timeout: no complete answer in time';
  if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS|ERR_SSL/.test(code)) return 'tls: the certificate is not trusted';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'dns: the host name does not resolve';
  return 'unreachable: could not connect';
}

/**
 * The guard for nexo terminals (docs/terminals-nexo.md): it admits exactly the registered
 * terminals' addresses, private ones included, and nothing else private; posd connects to a nexo
 * terminal only at its registered literal address, checked here before every link is opened.
 */
export function terminalAddressGuard(addresses: readonly string[]): UrlGuard {
  return new UrlGuard(addresses.map((a) => (isIP(a) === 6 ? `${a}/128` : `${a}/32`)));
}
