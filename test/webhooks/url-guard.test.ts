import { describe, expect, it } from 'vitest';
import { UrlGuard, type Resolver } from '../../src/system/url-guard.js';
import { ConfigError, loadConfig } from '../../src/config.js';

const names: Record<string, string[]> = {
  'public.example': ['93.184.215.14'],
  'inward.example': ['10.1.2.3'],
  'mixed.example': ['93.184.215.14', '127.0.0.1'],
  'meta.example': ['169.254.169.254'],
  'v6inward.example': ['fd00:ec2::254'],
};
const resolver: Resolver = async (host) => {
  const list = names[host];
  if (!list) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  return list.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

describe('webhook URL guard', () => {
  const guard = new UrlGuard([], resolver);

  it.each([
    'http://127.0.0.1/hook',
    'http://10.0.0.1/hook',
    'http://169.254.169.254/latest/meta-data',
    'http://[::1]:8080/hook',
    'http://[::ffff:127.0.0.1]/hook',
    'http://[::ffff:a9fe:a9fe]/hook',
    'http://192.168.1.10/hook',
    'http://172.16.5.4/hook',
    'http://100.100.100.200/hook',
    'http://0.0.0.0/hook',
    'http://[fe80::1]/hook',
    'http://inward.example/hook',
    'http://mixed.example/hook',
    'http://meta.example/hook',
    'http://v6inward.example/hook',
  ])('refuses %s', async (url) => {
    const reasons = await guard.check(url);
    expect(reasons.length).toBe(1);
    expect(reasons[0]).toMatch(/private, local or metadata/);
  });

  it('refuses localhost through the real resolver', async () => {
    expect(await new UrlGuard([]).check('http://localhost:9/hook')).toHaveLength(1);
  });

  it.each(['ftp://public.example/x', 'not a url', 'http://user:pw@public.example/x', 'file:///etc/passwd'])('refuses the shape of %s', async (url) => {
    expect(await guard.check(url)).toHaveLength(1);
  });

  it('accepts public addresses and names, and names that do not resolve yet', async () => {
    expect(await guard.check('https://public.example/hooks')).toEqual([]);
    expect(await guard.check('https://93.184.215.14/hooks')).toEqual([]);
    expect(await guard.check('https://[2606:2800:220:1::1]/hooks')).toEqual([]);
    expect(await guard.check('https://unknown.example/hooks')).toEqual([]);
  });

  it('admits allow-listed CIDRs only', async () => {
    const lan = new UrlGuard(['127.0.0.1/32', '10.1.0.0/16'], resolver);
    expect(await lan.check('http://127.0.0.1:8080/x')).toEqual([]);
    expect(await lan.check('http://inward.example/x')).toEqual([]);
    expect(await lan.check('http://127.0.0.2/x')).toHaveLength(1);
    expect(await lan.check('http://10.0.0.1/x')).toHaveLength(1);
    expect(() => new UrlGuard(['10.0.0.0/33'])).toThrow(/CIDR/);
  });

  it('checks again in the socket lookup, so a name that turns inward is refused at delivery', async () => {
    const lookup = guard.lookup() as unknown as (h: string, o: object, cb: (...a: unknown[]) => void) => void;
    const call = (host: string) => new Promise<unknown[]>((resolve) => lookup(host, { all: true }, (...args) => resolve(args)));
    const ok = await call('public.example');
    expect(ok[0]).toBeNull();
    expect(ok[1]).toEqual([{ address: '93.184.215.14', family: 4 }]);
    const bad = await call('inward.example');
    expect((bad[0] as NodeJS.ErrnoException).code).toBe('EADDRREFUSED');
  });

  it('reads the allow-list from POSD_WEBHOOKS_ALLOW_CIDRS and refuses a bad entry at start', () => {
    expect(loadConfig({ env: { POSD_WEBHOOKS_ALLOW_CIDRS: '127.0.0.1/32, 192.168.10.0/24' } }).webhooks.allow_cidrs).toEqual([
      '127.0.0.1/32',
      '192.168.10.0/24',
    ]);
    expect(() => loadConfig({ env: { POSD_WEBHOOKS_ALLOW_CIDRS: '10.0.0.0/40' } })).toThrow(ConfigError);
    expect(() => loadConfig({ env: { POSD_WEBHOOKS_ALLOW_CIDRS: 'lan' } })).toThrow(/webhooks\.allow_cidrs: not a CIDR: lan/);
  });
});
