import type { Db } from '../db/database.js';
import type { ApiError } from '../errors.js';
import { perDb } from '../db/per-db.js';

/** What `GET /readyz` answers: 200 when `ready`, else 503; `status` names the state. */
export interface Readiness {
  ready: boolean;
  status: string;
  /** When not ready: the error a write is refused with (the standby's `central_standby`, naming the leader). */
  refusal?: () => ApiError;
}

const providers = perDb(() => ({ current: undefined as (() => Readiness) | undefined }));

/**
 * Readiness for a load balancer, apart from liveness (`/healthz`): a chain's standby core is alive
 * and replays the log but answers no write, so it says `standby` with a 503 and HAProxy sends it
 * nothing (deploy/haproxy.cfg). Set by the part that knows (src/sync/pg-core.ts); a daemon that
 * sets none is ready once it listens.
 */
export function setReadiness(db: Db, provider: (() => Readiness) | undefined): void {
  providers(db).current = provider;
}

export function readinessOf(db: Db): Readiness {
  return providers(db).current?.() ?? { ready: true, status: 'ok' };
}
