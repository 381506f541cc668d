/**
 * One framing rule: turns a serial byte stream into tokens (frames, ACK, NAK, framing faults).
 * Faults are tokens, not stream errors, because an 'error' would end the stream while a serial
 * line is expected to carry noise and must resynchronise on the next STX.
 */
import { Transform, type TransformCallback } from 'node:stream';
import { ACK, ETX, NAK, STX } from './frame.js';
import { MAX_MESSAGE_BYTES } from './parse.js';

export type FrameFault =
  /** The LRC byte did not match the frame's content. */
  | { badLrc: true; bytes: number }
  /** Bytes outside any frame that are neither STX, ACK nor NAK. */
  | { garbage: true; bytes: number }
  /** A frame grew past the cap; everything up to its end (or the next STX) is dropped. */
  | { oversized: true; bytes: number }
  /** A new STX arrived before the ETX of the current frame. */
  | { truncated: true; bytes: number };

export type FrameToken = { kind: 'frame'; payload: Buffer } | { kind: 'ack' } | { kind: 'nak' } | { kind: 'fault'; fault: FrameFault };

type State = 'idle' | 'frame' | 'lrc' | 'skip' | 'skip_lrc';

export interface FrameParserOptions {
  maxPayloadBytes?: number;
}

export class FrameParser extends Transform {
  private state: State = 'idle';
  private readonly max: number;
  private chunks: Buffer[] = [];
  private size = 0;
  private garbage = 0;

  constructor(opts: FrameParserOptions = {}) {
    super({ readableObjectMode: true });
    this.max = opts.maxPayloadBytes ?? MAX_MESSAGE_BYTES;
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    let start = 0; // first byte of the frame content that lies in this chunk
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i];
      switch (this.state) {
        case 'idle':
          if (b === STX) {
            this.flushGarbage();
            this.beginFrame();
            start = i + 1;
          } else if (b === ACK || b === NAK) {
            this.flushGarbage();
            this.push(b === ACK ? { kind: 'ack' } : { kind: 'nak' });
          } else {
            this.garbage++;
          }
          break;
        case 'frame':
          if (b === ETX) {
            this.append(chunk, start, i);
            this.state = 'lrc';
          } else if (b === STX) {
            this.append(chunk, start, i);
            this.push({ kind: 'fault', fault: { truncated: true, bytes: this.size } });
            this.beginFrame();
            start = i + 1;
          } else if (this.size + (i + 1 - start) > this.max) {
            this.push({ kind: 'fault', fault: { oversized: true, bytes: this.size + (i + 1 - start) } });
            this.chunks = [];
            this.size = 0;
            this.state = 'skip';
          }
          break;
        case 'lrc':
          this.finishFrame(b);
          break;
        case 'skip':
          // The LRC after an ETX may be any byte, so it must be consumed before looking for ACK/NAK.
          if (b === ETX) this.state = 'skip_lrc';
          else if (b === STX) {
            this.beginFrame();
            start = i + 1;
          }
          break;
        case 'skip_lrc':
          this.state = 'idle';
          break;
      }
    }
    if (this.state === 'frame') this.append(chunk, start, chunk.length);
    done();
  }

  override _flush(done: TransformCallback): void {
    this.flushGarbage();
    if (this.state === 'frame' || this.state === 'lrc') {
      this.push({ kind: 'fault', fault: { truncated: true, bytes: this.size } });
    }
    done();
  }

  private beginFrame(): void {
    this.state = 'frame';
    this.chunks = [];
    this.size = 0;
  }

  private append(chunk: Buffer, from: number, to: number): void {
    if (to > from) {
      this.chunks.push(chunk.subarray(from, to));
      this.size += to - from;
    }
  }

  private finishFrame(lrcByte: number): void {
    const payload = Buffer.concat(this.chunks, this.size);
    this.chunks = [];
    this.size = 0;
    this.state = 'idle';
    let x = ETX;
    for (const b of payload) x ^= b;
    if (x === lrcByte) this.push({ kind: 'frame', payload });
    else this.push({ kind: 'fault', fault: { badLrc: true, bytes: payload.length } });
  }

  private flushGarbage(): void {
    if (this.garbage > 0) {
      this.push({ kind: 'fault', fault: { garbage: true, bytes: this.garbage } });
      this.garbage = 0;
    }
  }
}
