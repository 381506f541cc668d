import { Agent, request } from 'undici';
import { ERRORS } from '../../src/errors.js';
import { rawRequest } from '../helpers/raw-http.js';
import { hostileBody, hostileHeaders, hostileQuery, hostileSegment, operationsOf, rawHostile, sample, seeded, type Operation, type Rng } from './generate.js';

export interface FuzzTarget {
  /** `http://host:port` of a running daemon. */
  url: string;
  keys: { test: string; live: string };
  /** Log lines the daemon wrote so far (parsed JSON), to look for stack traces and errors. */
  logLines(): ReadonlyArray<Record<string, unknown>>;
}

export interface FuzzOptions {
  seed: number;
  requests: number;
  /** Requests in flight at once. */
  concurrency?: number;
  /** An answer slower than this is a failure (issue 17: no hang over 5 s). */
  slowMs?: number;
  /** Stop collecting failures past this many (a broken build would otherwise print thousands). */
  maxFailures?: number;
}

export interface FuzzFailure {
  what: string;
  request: string;
  status?: number;
  body?: string;
  ms?: number;
}

export interface FuzzReport {
  seed: number;
  sent: number;
  operations: number;
  byStatus: Record<string, number>;
  slowestMs: number;
  elapsedMs: number;
  failures: FuzzFailure[];
}

const ID_FIELD = /"(?:id|[a-z_]+_id)":"([a-z]{2,6}_[A-Za-z0-9_-]{4,64})"/g;

/**
 * Sends `requests` hostile requests at a running daemon and checks each answer: never 5xx, an error
 * always the spec's body with a catalogue code, never slower than `slowMs`; then that the daemon
 * still answers and logged no stack trace. Ids seen in answers are reused in later paths, so
 * routes get past their 404s.
 */
export async function fuzz(target: FuzzTarget, opts: FuzzOptions): Promise<FuzzReport> {
  const rng = seeded(opts.seed);
  const slowMs = opts.slowMs ?? 5000;
  const maxFailures = opts.maxFailures ?? 50;
  const agent = new Agent({ connections: opts.concurrency ?? 8, headersTimeout: slowMs * 2, bodyTimeout: slowMs * 2 });
  const doc = (await (await request(`${target.url}/openapi.json`, { dispatcher: agent })).body.json()) as { paths: Record<string, Record<string, unknown>> };
  const ops = operationsOf(doc as never);
  if (ops.length === 0) throw new Error('the daemon describes no operation in /openapi.json');
  const known: string[] = [];
  const report: FuzzReport = { seed: opts.seed, sent: 0, operations: ops.length, byStatus: {}, slowestMs: 0, elapsedMs: 0, failures: [] };
  const fail = (f: FuzzFailure) => {
    if (report.failures.length < maxFailures) report.failures.push(f);
  };
  const started = Date.now();

  // Every operation once with a plausible body first, so later cases find real ids; then at random.
  // A third of the rest are plausible too (a good key, known ids, a body from the schema), so
  // routes are driven past validation into their rules with ids and states the run made.
  const plan = (i: number): { op: Operation; plausible: boolean } =>
    i < ops.length ? { op: ops[i], plausible: true } : { op: ops[Math.floor(rng() * ops.length)], plausible: rng() < 0.33 };

  let next = 0;
  const worker = async () => {
    while (next < opts.requests) {
      const i = next++;
      const { op, plausible } = plan(i);
      await one(op, plausible, rng, i);
    }
  };

  const one = async (op: Operation, plausible: boolean, r: Rng, i: number) => {
    let path = op.path.replace(/\{([^}]+)\}/g, () => (plausible && known.length ? known[Math.floor(r() * known.length)] : hostileSegment(r, known)));
    path = `/api${path}${plausible ? '' : hostileQuery(op.query, r)}`;
    const t0 = Date.now();
    let status: number;
    let text: string;
    let contentType = '';
    let described: string;
    try {
      if (!plausible && r() < 0.03) {
        const bytes = rawHostile(r, path, target.keys.test);
        described = `raw ${JSON.stringify(bytes.slice(0, 200))}`;
        const a = await rawRequest(target.url, Buffer.from(bytes, 'latin1'), slowMs * 2);
        status = a.status;
        text = a.body;
        contentType = a.headers['content-type'] ?? '';
      } else {
        const headers = plausible ? { 'x-secret-key': target.keys.test } : hostileHeaders(r, target.keys);
        let body: string | undefined;
        if (op.method !== 'GET' && op.method !== 'DELETE') {
          const b = plausible ? { json: sample(op.body ?? { type: 'object' }, r, 0, known) } : hostileBody(op.body, r, known);
          body = b.raw ?? JSON.stringify(b.json ?? {});
          if (!('content-type' in headers)) (headers as Record<string, string>)['content-type'] = 'application/json';
        }
        described = `${op.method} ${path.slice(0, 300)} headers=${JSON.stringify(headers).slice(0, 300)} body=${(body ?? '').slice(0, 300)}`;
        const res = await request(`${target.url}${path}`, { method: op.method as 'GET', headers, body, dispatcher: agent });
        status = res.statusCode;
        text = await res.body.text();
        contentType = String(res.headers['content-type'] ?? '');
      }
    } catch (err) {
      // A refused connection is an answer only for the raw cases the parser closes on.
      fail({ what: `no answer: ${(err as Error).message}`, request: `#${i} ${op.method} ${path.slice(0, 300)}` });
      return;
    }
    const ms = Date.now() - t0;
    report.sent++;
    report.slowestMs = Math.max(report.slowestMs, ms);
    report.byStatus[status] = (report.byStatus[status] ?? 0) + 1;
    const request_ = `#${i} ${described}`;
    if (ms > slowMs) fail({ what: 'slow answer', request: request_, status, ms });
    if (status >= 500) fail({ what: '5xx', request: request_, status, body: text.slice(0, 500) });
    if (status >= 400) {
      const problem = errorBodyProblem(text, contentType);
      if (problem) fail({ what: problem, request: request_, status, body: text.slice(0, 500) });
    } else if (known.length < 2000) {
      for (const m of text.matchAll(ID_FIELD)) if (!known.includes(m[1])) known.push(m[1]);
    }
  };

  await Promise.all(Array.from({ length: opts.concurrency ?? 8 }, worker));
  report.elapsedMs = Date.now() - started;

  const health = await request(`${target.url}/healthz`, { dispatcher: agent }).catch((err: Error) => err);
  if (health instanceof Error || health.statusCode !== 200) fail({ what: 'the daemon no longer answers /healthz', request: 'GET /healthz' });
  else await health.body.dump();
  await agent.close();

  for (const line of target.logLines()) {
    const text = JSON.stringify(line);
    if (/"stack"|\\n\s+at /.test(text) || Number(line.level) >= 50)
      fail({ what: 'logged a stack trace or an error', request: '(log)', body: text.slice(0, 800) });
  }
  return report;
}

/** Why an error answer is not the spec's error body with a catalogue code (undefined: it is). */
export function errorBodyProblem(text: string, contentType: string): string | undefined {
  if (!/json/.test(contentType)) return `error answer is not JSON (${contentType || 'no content type'})`;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return 'error answer does not parse';
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'error answer is not an object';
  const b = body as Record<string, unknown>;
  if (typeof b.message !== 'string') return 'error answer has no message';
  if (typeof b.code !== 'string' || !(b.code in ERRORS)) return `error code ${JSON.stringify(b.code)} is not in the catalogue`;
  if (/FST_ERR/.test(text)) return 'error answer leaks a fastify code';
  if (b.errors !== undefined && (typeof b.errors !== 'object' || b.errors === null || Array.isArray(b.errors))) return 'errors is not a field map';
  if (text.length > 16_384) return `error answer is ${text.length} bytes`;
  return undefined;
}

/** One line per failure, for a test's message or the soak's output. */
export function describeFailures(report: FuzzReport): string {
  return report.failures.map((f) => `${f.what}${f.status ? ` (${f.status}${f.ms ? `, ${f.ms} ms` : ''})` : ''}\n  ${f.request}\n  ${f.body ?? ''}`).join('\n');
}
