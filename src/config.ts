import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { isIP } from 'node:net';
import { Type, type Static, type TSchema, Kind } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { commerceSections } from './config/commerce-sections.js';
import { coreSections } from './config/core-sections.js';
import { opsSections } from './config/ops-sections.js';

export { smtpSettings } from './config/ops-sections.js';

/**
 * The one configuration of posd: a TypeBox schema with typed defaults, read from an optional JSON
 * file and from `POSD_*` environment variables (the variable of `webhooks.allow_cidrs` is
 * `POSD_WEBHOOKS_ALLOW_CIDRS`), validated once at start. Every default lets `posd serve` run with no
 * file at all. Its sections are written in src/config/ by area; this file reads and checks them.
 */
export const ConfigSchema = Type.Object({ ...coreSections, ...commerceSections, ...opsSections });

export type Config = Static<typeof ConfigSchema>;

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

/** Every leaf of the schema with its dotted path, so environment names are derived, not listed. */
function leaves(schema: TSchema, path: string[] = []): Array<{ path: string[]; schema: TSchema }> {
  if (schema[Kind] === 'Object' && schema.properties) {
    return Object.entries(schema.properties as Record<string, TSchema>).flatMap(([k, s]) => leaves(s, [...path, k]));
  }
  return [{ path, schema }];
}

function envName(path: string[]): string {
  return `POSD_${path.join('_').toUpperCase()}`;
}

/** `POSD_*` names read outside the schema's leaves (the loader reads POSD_WRITE_CODE_CACHE). */
const OTHER_ENV = new Set(['POSD_CONFIG', 'POSD_DATA', 'POSD_WRITE_CODE_CACHE']);

/**
 * `POSD_*` variables that name no setting: a misspelt one (POSD_HTP_PORT) would otherwise be
 * ignored in silence, leaving the default the manager meant to change. Each with the known name
 * closest to it (sharing the longest prefix), when one is close.
 */
export function unknownEnvNames(env: Env): Array<{ name: string; nearest: string | null }> {
  const known = [...leaves(ConfigSchema).map((l) => envName(l.path)), ...OTHER_ENV];
  const shared = (a: string, b: string) => {
    let i = 0;
    while (i < a.length && a[i] === b[i]) i++;
    return i;
  };
  return Object.keys(env)
    .filter((k) => k.startsWith('POSD_') && env[k] !== undefined && !known.includes(k))
    .map((name) => {
      const best = known.reduce((a, b) => (shared(name, b) > shared(name, a) ? b : a));
      return { name, nearest: shared(name, best) > 'POSD_'.length ? best : null };
    });
}

function fromEnvText(text: string, schema: TSchema): unknown {
  // A list of objects (terminals.serial) is given as JSON; a list of words or numbers as comma-separated text.
  if (schema[Kind] === 'Array' && text.trim().startsWith('[')) {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  if (schema[Kind] === 'Array') {
    const parts = text
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s.length > 0);
    const item = schema.items as TSchema | undefined;
    return item && (item[Kind] === 'Integer' || item[Kind] === 'Number') ? parts.map(Number) : parts;
  }
  if (schema[Kind] === 'Integer' || schema[Kind] === 'Number') return text.trim() === '' ? text : Number(text);
  if (schema[Kind] === 'Boolean') return text === 'true' || text === '1' ? true : text === 'false' || text === '0' ? false : text;
  return text;
}

function setPath(target: Record<string, unknown>, path: string[], value: unknown): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    if (typeof node[key] !== 'object' || node[key] === null) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[path[path.length - 1]] = value;
}

export interface LoadConfigOptions {
  file?: string;
  env?: Env;
  /** Values from command-line flags: they win over the file and the environment. */
  overrides?: Record<string, unknown>;
}

function readConfigFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`config file ${file}: ${(err as NodeJS.ErrnoException).code ?? 'unreadable'}`);
  }
  try {
    const parsed = JSON.parse(text);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
    return parsed;
  } catch (err) {
    throw new ConfigError(`config file ${file}: not a JSON object (${(err as Error).message})`);
  }
}

function deepMerge(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  for (const [k, v] of Object.entries(b)) {
    if (v === undefined) continue;
    const cur = out[k];
    out[k] =
      typeof v === 'object' && v !== null && !Array.isArray(v) && typeof cur === 'object' && cur !== null && !Array.isArray(cur)
        ? deepMerge(cur as Record<string, unknown>, v as Record<string, unknown>)
        : v;
  }
  return out;
}

/** Load, merge (defaults < file < environment < flags) and validate; throws ConfigError naming the field. */
export function loadConfig(opts: LoadConfigOptions = {}): Config {
  return loadConfigLayers(opts).config;
}

/**
 * `loadConfig`, with what was set before defaults were applied: `posd serve` must know whether the
 * role was asked for (file, environment or flag) or only defaulted, to run a data folder's stored role.
 */
export function loadConfigLayers(opts: LoadConfigOptions = {}): { config: Config; given: Record<string, unknown> } {
  const env = opts.env ?? process.env;
  const file = opts.file ?? env.POSD_CONFIG;
  let raw: Record<string, unknown> = file ? readConfigFile(file) : {};
  const fromEnv: Record<string, unknown> = {};
  for (const leaf of leaves(ConfigSchema)) {
    const text = env[envName(leaf.path)];
    if (text !== undefined) setPath(fromEnv, leaf.path, fromEnvText(text, leaf.schema));
  }
  if (env.POSD_DATA !== undefined) fromEnv.data_dir = env.POSD_DATA;
  raw = deepMerge(deepMerge(raw, fromEnv), opts.overrides ?? {});
  return { config: validateConfig(raw), given: raw };
}

export function validateConfig(raw: unknown): Config {
  // A misspelt setting ({"htp": ...}) was silently ignored, leaving the default the manager meant to change.
  const unknown = unknownKeys(ConfigSchema, raw ?? {}, []);
  if (unknown) throw new ConfigError(`config: ${unknown.path}: unknown setting (known here: ${unknown.known.join(', ')})`);
  const withDefaults = Value.Default(ConfigSchema, Value.Clone(raw ?? {}));
  const first = Value.Errors(ConfigSchema, withDefaults).First();
  if (first) {
    const field = first.path.replace(/^\//, '').replace(/\//g, '.') || '(root)';
    const allowed = literalChoices(first.schema);
    // TypeBox says "Expected union value" for a bad choice; the manager needs the choices.
    const message = allowed ? `must be one of ${allowed.join(', ')} (got ${JSON.stringify(first.value)})` : first.message;
    throw new ConfigError(`config: ${field}: ${message}`);
  }
  const config = withDefaults as Config;
  // Node refuses a header deadline past the whole request's: say so with the setting's name.
  if (config.http.headers_timeout_ms > config.http.request_timeout_ms) {
    throw new ConfigError('config: http.headers_timeout_ms: must not be more than http.request_timeout_ms');
  }
  for (const cidr of config.webhooks.allow_cidrs) {
    if (!isCidr(cidr)) throw new ConfigError(`config: webhooks.allow_cidrs: not a CIDR: ${cidr}`);
  }
  for (const cidr of config.http.own_networks) {
    if (!isCidr(cidr)) throw new ConfigError(`config: http.own_networks: not a CIDR: ${cidr}`);
  }
  if (config.alerts.webhook_url && !/^whsec_[A-Za-z0-9+/]{16,}={0,2}$/.test(config.alerts.webhook_secret)) {
    throw new ConfigError('config: alerts.webhook_secret: alerts.webhook_url needs a signing secret, whsec_ followed by base64');
  }
  if (Boolean(config.tls.cert_file) !== Boolean(config.tls.key_file)) {
    throw new ConfigError('config: tls.cert_file: tls.cert_file and tls.key_file go together');
  }
  if (config.tls.renew_before_days >= config.tls.cert_validity_days) {
    throw new ConfigError('config: tls.renew_before_days: must be less than tls.cert_validity_days');
  }
  config.data_dir = resolve(config.data_dir);
  return config;
}

/** The first key of `value` the schema does not know, with its dotted path, walking objects and lists of objects. */
function unknownKeys(schema: TSchema, value: unknown, path: string[]): { path: string; known: string[] } | undefined {
  if (schema[Kind] === 'Object' && schema.properties && typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const props = schema.properties as Record<string, TSchema>;
    for (const [k, v] of Object.entries(value)) {
      if (!(k in props)) return { path: [...path, k].join('.'), known: Object.keys(props) };
      const inner = unknownKeys(props[k], v, [...path, k]);
      if (inner) return inner;
    }
  }
  if (schema[Kind] === 'Array' && schema.items && Array.isArray(value)) {
    for (const [i, v] of value.entries()) {
      const inner = unknownKeys(schema.items as TSchema, v, [...path, String(i)]);
      if (inner) return inner;
    }
  }
  return undefined;
}

/** The allowed values of a choice (a union of literals), or undefined for any other schema. */
function literalChoices(schema: TSchema): string[] | undefined {
  if (schema[Kind] !== 'Union') return undefined;
  const options = schema.anyOf as TSchema[];
  if (!options.every((o) => o[Kind] === 'Literal')) return undefined;
  return options.map((o) => String(o.const));
}

/** `10.0.0.0/8`, `192.168.1.5` (one address), `fd00::/8`. */
function isCidr(text: string): boolean {
  const [address, prefix, ...rest] = text.trim().split('/');
  const version = isIP(address);
  if (!version || rest.length > 0) return false;
  return prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (version === 4 ? 32 : 128));
}

/** `127.0.0.1`, `::1`, `localhost`: only the box itself reaches them. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) || h === '::ffff:127.0.0.1';
}

/** Whether posd listens with TLS: `tls.mode`, where `auto` means off loopback only. */
export function tlsEnabled(config: Pick<Config, 'tls' | 'http'>): boolean {
  return config.tls.mode === 'on' || (config.tls.mode === 'auto' && !isLoopbackHost(config.http.host));
}

export function publicBaseUrl(config: Config, listeningPort?: number): string {
  if (config.http.public_url) return config.http.public_url.replace(/\/$/, '');
  const host = config.http.host === '0.0.0.0' || config.http.host === '::' ? '127.0.0.1' : config.http.host;
  const scheme = tlsEnabled(config) ? 'https' : 'http';
  return `${scheme}://${host.includes(':') ? `[${host}]` : host}:${listeningPort ?? config.http.port}`;
}

/**
 * The settings that differ from the defaults, as a nested object a config file may hold (without
 * `data_dir`, which belongs to the box being restored): what a backup carries to rebuild a box.
 */
export function changedSettings(config: Config): Record<string, unknown> {
  const defaults = validateConfig({}) as unknown as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const leaf of leaves(ConfigSchema)) {
    if (leaf.path[0] === 'data_dir') continue;
    let value: unknown = config;
    let base: unknown = defaults;
    for (const k of leaf.path) {
      value = (value as Record<string, unknown> | undefined)?.[k];
      base = (base as Record<string, unknown> | undefined)?.[k];
    }
    if (value !== undefined && JSON.stringify(value) !== JSON.stringify(base)) setPath(out, leaf.path, value);
  }
  return out;
}

/** The configuration as it may be logged: nothing here is secret yet, but sections that hold secrets are masked. */
export function maskedConfig(config: Config): Record<string, unknown> {
  return JSON.parse(
    JSON.stringify(config, function (this: Record<string, unknown>, key, value) {
      if (/(key|secret|token|password|passphrase)$/i.test(key) && value) return '****';
      // A PostgreSQL URI may carry its password (`postgresql://posd:pw@db/posd`).
      if (key === 'url' && typeof value === 'string') return value.replace(/^([a-z]+:\/\/[^:/@]*:)[^@]*@/i, '$1****@');
      return value;
    }),
  );
}
