import type { Dispatcher } from 'undici';
import { undici } from './undici.js';
import { deliveryHeaders, signedHeaders } from './standard-webhooks.js';

/** Bytes of an answer's body kept as its excerpt (the rest is read and dropped). */
export const ANSWER_EXCERPT_BYTES = 1024;
/** Bytes of an answer read at most; past that the connection is dropped. */
const ANSWER_READ_BYTES = 64 * 1024;

export interface SignedMessage {
  /** The webhook-id: the same on every try of one message. */
  id: string;
  /** The JSON body, signed as sent. */
  body: string;
  /** Unix seconds of this try (webhook-timestamp). */
  timestampSeconds: number;
}

/**
 * POSTs one message signed the Standard Webhooks way (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature`, and the same under `svix-` names) with a `whsec_` secret, through a
 * dispatcher the caller made with `guardedAgent` (src/system/url-guard.ts), so every address passes
 * the outbound guard. Resolves with the status and the start of the answer's body; rejects on a
 * network failure or the timeout. For messages posd sends outside the delivery worker: webhook
 * notices to integrators, managers' alerts.
 */
export async function postSigned(
  dispatcher: Dispatcher,
  url: string,
  secret: string,
  msg: SignedMessage,
  timeoutMs: number,
): Promise<{ statusCode: number; excerpt: string }> {
  const headers = { 'content-type': 'application/json', ...deliveryHeaders(signedHeaders(secret, msg.id, msg.timestampSeconds, msg.body)) };
  const res = await undici().request(url, {
    method: 'POST',
    headers,
    body: msg.body,
    dispatcher,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    signal: AbortSignal.timeout(timeoutMs),
  });
  const chunks: Buffer[] = [];
  let kept = 0;
  let read = 0;
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    // A long answer is not read to its end: leaving the loop destroys the body (and the socket).
    read += chunk.length;
    if (read > ANSWER_READ_BYTES) break;
    if (kept < ANSWER_EXCERPT_BYTES) {
      chunks.push(chunk.subarray(0, ANSWER_EXCERPT_BYTES - kept));
      kept += Math.min(chunk.length, ANSWER_EXCERPT_BYTES - kept);
    }
  }
  return { statusCode: res.statusCode, excerpt: Buffer.concat(chunks).toString('utf8') };
}
