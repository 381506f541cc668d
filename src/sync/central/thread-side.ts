import { Writable } from 'node:stream';
import type { Config } from '../../config.js';
import { createLogger, type Logger } from '../../logger.js';
import { openDatabase, type Db } from '../../db/database.js';
import { databaseFile } from '../../db/paths.js';

/**
 * What a chain core's thread (the projector's, src/projector-thread.ts; the appender's,
 * src/sync/central/log-appender-thread.ts) starts with: a logger whose lines go to the daemon as
 * messages, written there by its logger (`relayThreadLog`: one destination, one redaction), and its
 * own connection to the core's file, opened as the daemon's is.
 */
export function threadLogger(config: Config, post: (m: { log: string }) => void): Logger {
  const lines = new Writable({
    write(chunk: Buffer, _enc, done) {
      post({ log: chunk.toString('utf8') });
      done();
    },
  });
  return createLogger(config, lines);
}

export function threadConnection(config: Config): Db {
  return openDatabase(databaseFile(config), { synchronous: config.database.synchronous, busyTimeoutMs: config.database.busy_timeout_ms, migrate: false });
}
