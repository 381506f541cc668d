/**
 * Serial framing: STX + UTF-8 JSON + ETX + LRC, where LRC is the XOR of every JSON byte and the ETX.
 * JSON text never contains raw control bytes (they must be escaped), so STX, ETX, ACK and NAK can
 * only appear as delimiters; only the LRC byte may take any value.
 */
import { MAX_MESSAGE_BYTES } from './parse.js';

export const STX = 0x02;
export const ETX = 0x03;
export const ACK = 0x06;
export const NAK = 0x15;

export const ACK_BYTE = Buffer.from([ACK]);
export const NAK_BYTE = Buffer.from([NAK]);

/** XOR of every payload byte and the ETX. */
export function lrc(payload: Uint8Array): number {
  let x = ETX;
  for (const b of payload) x ^= b;
  return x;
}

/** Frames raw JSON bytes; used directly by simulators that must send deliberately odd payloads. */
export function framePayload(payload: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(payload.length + 3);
  out[0] = STX;
  out.set(payload, 1);
  out[payload.length + 1] = ETX;
  out[payload.length + 2] = lrc(payload);
  return out;
}

export class FrameTooLargeError extends Error {
  readonly oversized = true;
  constructor(readonly bytes: number) {
    super(`frame payload of ${bytes} bytes is over the ${MAX_MESSAGE_BYTES} byte limit`);
  }
}

export function encodeFrame(obj: unknown): Buffer {
  const payload = Buffer.from(JSON.stringify(obj), 'utf8');
  if (payload.length > MAX_MESSAGE_BYTES) throw new FrameTooLargeError(payload.length);
  return framePayload(payload);
}
