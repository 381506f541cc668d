import pino, { type Logger } from 'pino';
import type { Config } from './config.js';

export type { Logger };

/**
 * Secrets never reach a log line: the headers that carry keys and every field whose name says it
 * holds a secret are censored wherever pino sees them.
 */
export const REDACT_PATHS = [
  'req.headers["x-secret-key"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'headers["x-secret-key"]',
  '*.key',
  '*.token',
  '*.secret',
  '*.password',
  '*.signingSecret',
  '*.pairing_token',
  '*.central_key',
  // Status page and /metrics (ops): cookies, form tokens and bearer headers wherever they are logged.
  'headers.authorization',
  'headers.cookie',
  'headers["set-cookie"]',
  'res.headers["set-cookie"]',
  '*.authorization',
  '*.cookie',
  '*.csrf',
  '*._csrf',
  '*.session',
  '*.metrics_token',
];

export function createLogger(config: Pick<Config, 'log'>, destination?: pino.DestinationStream): Logger {
  const pretty = config.log.format === 'pretty' || (config.log.format === 'auto' && process.stdout.isTTY === true && !destination);
  const options: pino.LoggerOptions = {
    level: config.log.level,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    base: { pid: process.pid },
  };
  if (destination) return pino(options, destination);
  if (pretty) return pino({ ...options, transport: { target: 'pino-pretty', options: { colorize: true } } });
  return pino(options);
}
