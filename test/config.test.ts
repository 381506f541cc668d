import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Kind, type TSchema } from '@sinclair/typebox';
import { ConfigError, ConfigSchema, loadConfig, maskedConfig, unknownEnvNames } from '../src/config.js';

function leafPaths(schema: TSchema, path: string[] = []): string[] {
  if (schema[Kind] === 'Object' && schema.properties) {
    return Object.entries(schema.properties as Record<string, TSchema>).flatMap(([k, s]) => leafPaths(s, [...path, k]));
  }
  return [path.join('.')];
}

describe('configuration', () => {
  it('runs on defaults alone', () => {
    const c = loadConfig({ env: {} });
    expect(c).toMatchObject({ role: 'store', http: { port: 4242, host: '127.0.0.1' }, database: { synchronous: 'FULL' } });
    expect(c.data_dir).toBe(resolve('./data'));
  });

  it('layers file < environment < flags, with environment names derived from the paths', () => {
    const dir = mkdtempSync(join(tmpdir(), 'posd-config-'));
    const file = join(dir, 'posd.json');
    writeFileSync(file, JSON.stringify({ http: { port: 5000, host: '0.0.0.0' }, blocking: { ips: ['10.0.0.9'] } }));
    const c = loadConfig({
      file,
      env: { POSD_HTTP_PORT: '6000', POSD_BLOCKING_USER_AGENTS: 'BadBot, Scraper', POSD_DATA: dir },
      overrides: { role: 'central' },
    });
    expect(c.http).toMatchObject({ port: 6000, host: '0.0.0.0' });
    expect(c.blocking).toMatchObject({ ips: ['10.0.0.9'], user_agents: ['BadBot', 'Scraper'] });
    expect(c.role).toBe('central');
    expect(c.data_dir).toBe(dir);
    rmSync(dir, { recursive: true, force: true });
  });

  it('names the offending field', () => {
    expect(() => loadConfig({ env: { POSD_HTTP_PORT: '99999' } })).toThrow(ConfigError);
    expect(() => loadConfig({ env: { POSD_HTTP_PORT: '99999' } })).toThrow(/^config: http\.port: /);
    expect(() => loadConfig({ env: { POSD_ROLE: 'hub' } })).toThrow(/^config: role: /);
    expect(() => loadConfig({ env: { POSD_LIMITS_PER_KEY_PER_SECOND: 'lots' } })).toThrow(/limits\.per_key_per_second/);
  });

  it('names a misspelt POSD_ variable with the setting it was probably meant for (issue 37)', () => {
    expect(unknownEnvNames({ POSD_HTP_PORT: '80', POSD_HTTP_PORT: '81', POSD_DATA: '/x', HOME: '/root', POSD_ZZZ: '1' })).toEqual([
      { name: 'POSD_HTP_PORT', nearest: expect.stringMatching(/^POSD_HTTP_/) },
      { name: 'POSD_ZZZ', nearest: null },
    ]);
    expect(unknownEnvNames({ POSD_SYNC_CENTRAL_URL: 'http://c', POSD_WRITE_CODE_CACHE: '1' })).toEqual([]);
  });

  it('refuses a misspelt setting with its path, and lists the allowed values of a choice (issue 16)', () => {
    expect(() => loadConfig({ env: {}, overrides: { htp: { port: 80 } } })).toThrow(/^config: htp: unknown setting \(known here: role, data_dir, http,/);
    expect(() => loadConfig({ env: {}, overrides: { http: { prot: 80 } } })).toThrow(/^config: http\.prot: unknown setting \(known here: host, port,/);
    expect(() => loadConfig({ env: {}, overrides: { terminals: { serial: [{ terminal_id: 't', path: '/dev/ttyS0', baud: 9600 }] } } })).toThrow(
      /^config: terminals\.serial\.0\.baud: unknown setting/,
    );
    expect(() => loadConfig({ env: { POSD_DATABASE_SYNCHRONOUS: 'SOMETIMES' } })).toThrow(
      'config: database.synchronous: must be one of FULL, NORMAL, EXTRA (got "SOMETIMES")',
    );
    expect(() => loadConfig({ env: { POSD_ROLE: 'hub' } })).toThrow('config: role: must be one of store, central, central-front (got "hub")');
  });

  it('masks secrets when the configuration is logged', () => {
    const masked = maskedConfig({ ...loadConfig({ env: {} }), sync: { central_key: 'sk_live_secret' } } as never);
    expect(JSON.stringify(masked)).not.toContain('sk_live_secret');
    const pg = maskedConfig({ ...loadConfig({ env: {} }), sync: { postgres: { url: 'postgresql://posd:pg-secret@db.example/posd' } } } as never);
    expect(JSON.stringify(pg)).not.toContain('pg-secret');
    expect(JSON.stringify(pg)).toContain('postgresql://posd:****@db.example/posd');
  });

  it('docs/configuration.md documents every key', () => {
    const doc = readFileSync(new URL('../docs/configuration.md', import.meta.url), 'utf8');
    const documented = new Set([...doc.matchAll(/^\| ([a-z_.]+) \|/gm)].map((m) => m[1]));
    const missing = leafPaths(ConfigSchema).filter((p) => !documented.has(p));
    expect(missing).toEqual([]);
  });
});
