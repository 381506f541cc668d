import { describe, expect, it } from 'vitest';
import { ACK, encodeFrame, ETX, FrameParser, framePayload, lrc, NAK, STX, type FrameToken } from '../../devices/protocol/index.js';

/** Feeds `input` split into the given chunk lengths and collects every token. */
async function parse(input: Buffer, cuts: number[] = [], maxPayloadBytes?: number): Promise<FrameToken[]> {
  const parser = new FrameParser({ maxPayloadBytes });
  const tokens: FrameToken[] = [];
  parser.on('data', (t: FrameToken) => tokens.push(t));
  let at = 0;
  for (const cut of [...cuts, input.length]) {
    if (cut > at) parser.write(input.subarray(at, cut));
    at = Math.max(at, cut);
  }
  parser.end();
  await new Promise((r) => parser.on('end', r));
  return tokens;
}

const show = (tokens: FrameToken[]) =>
  tokens.map((t) => (t.kind === 'frame' ? `frame:${t.payload.toString()}` : t.kind === 'fault' ? `fault:${JSON.stringify(t.fault)}` : t.kind));

describe('LRC and encodeFrame', () => {
  it('matches a hand-computed LRC', () => {
    // "{}" = 0x7b 0x7d; 0x7b ^ 0x7d = 0x06; 0x06 ^ ETX 0x03 = 0x05.
    expect(lrc(Buffer.from('{}'))).toBe(0x05);
    expect([...encodeFrame({})]).toEqual([STX, 0x7b, 0x7d, ETX, 0x05]);
  });

  it('encodes the documented example', () => {
    const frame = encodeFrame({ type: 'ping' });
    expect(frame.toString('hex')).toBe('027b2274797065223a2270696e67227d0337');
  });

  it('refuses to encode a message over the cap', () => {
    expect(() => encodeFrame({ type: 'x', pad: 'a'.repeat(70_000) })).toThrow(/over the/);
  });
});

describe('FrameParser', () => {
  const a = encodeFrame({ type: 'ack', command_id: 'c1' });
  const b = encodeFrame({ type: 'result', command_id: 'c1', outcome: 'approved', note: 'olá €' });
  const stream = Buffer.concat([Buffer.from([ACK]), a, Buffer.from([NAK]), b, Buffer.from([ACK])]);
  const expected = ['ack', `frame:${a.subarray(1, -2)}`, 'nak', `frame:${b.subarray(1, -2)}`, 'ack'];

  it('parses whole input', async () => {
    expect(show(await parse(stream))).toEqual(expected);
  });

  it('gives the same tokens for every single split point', async () => {
    for (let i = 0; i <= stream.length; i++) {
      expect(show(await parse(stream, [i])), `split at ${i}`).toEqual(expected);
    }
  });

  it('gives the same tokens when fed one byte at a time and in pairs of cuts', async () => {
    expect(show(await parse(stream, [...stream.keys()]))).toEqual(expected);
    for (let i = 0; i < stream.length; i += 3) {
      for (let j = i; j < stream.length; j += 5) {
        expect(show(await parse(stream, [i, j]))).toEqual(expected);
      }
    }
  });

  it('accepts an LRC byte that happens to equal STX, ACK or NAK', async () => {
    // Find payloads whose LRC is each control byte, so a naive parser would misread it.
    for (const target of [STX, ETX, ACK, NAK]) {
      let payload: Buffer | undefined;
      for (let c1 = 0x41; c1 < 0x7b && !payload; c1++) {
        for (let c2 = 0x41; c2 < 0x7b && !payload; c2++) {
          const p = Buffer.from(JSON.stringify({ type: 'ping', n: String.fromCharCode(c1, c2) }));
          if (lrc(p) === target) payload = p;
        }
      }
      expect(payload, `payload with LRC ${target}`).toBeDefined();
      const input = Buffer.concat([framePayload(payload!), Buffer.from([ACK])]);
      for (let i = 0; i <= input.length; i++) {
        expect(show(await parse(input, [i]))).toEqual([`frame:${payload}`, 'ack']);
      }
    }
  });

  it('reports a bad LRC and resynchronises on the next frame', async () => {
    const bad = Buffer.from(a);
    bad[bad.length - 1] ^= 0xff;
    const tokens = await parse(Buffer.concat([bad, b]));
    expect(tokens[0]).toEqual({ kind: 'fault', fault: { badLrc: true, bytes: a.length - 3 } });
    expect(show(tokens.slice(1))).toEqual([`frame:${b.subarray(1, -2)}`]);
  });

  it('reports a corrupted payload byte as a bad LRC', async () => {
    const bad = Buffer.from(b);
    bad[5] ^= 0x01;
    const tokens = await parse(bad);
    expect(tokens).toEqual([{ kind: 'fault', fault: { badLrc: true, bytes: b.length - 3 } }]);
  });

  it('reports garbage between frames once per run, split anywhere', async () => {
    const input = Buffer.concat([Buffer.from('noise!'), a, Buffer.from([0xff, 0x00]), b]);
    for (let i = 0; i <= input.length; i++) {
      const tokens = await parse(input, [i]);
      expect(show(tokens), `split at ${i}`).toEqual([
        'fault:{"garbage":true,"bytes":6}',
        `frame:${a.subarray(1, -2)}`,
        'fault:{"garbage":true,"bytes":2}',
        `frame:${b.subarray(1, -2)}`,
      ]);
    }
  });

  it('reports a frame cut short by a new STX and keeps the new frame', async () => {
    const input = Buffer.concat([a.subarray(0, 6), b]);
    expect(show(await parse(input, [3]))).toEqual(['fault:{"truncated":true,"bytes":5}', `frame:${b.subarray(1, -2)}`]);
  });

  it('drops an oversized frame and resynchronises, even when its LRC looks like ACK', async () => {
    const big = framePayload(Buffer.from(JSON.stringify({ type: 'x', pad: 'y'.repeat(100) })));
    big[big.length - 1] = ACK; // a forged LRC must not be mistaken for an ACK
    const input = Buffer.concat([big, a, Buffer.from([NAK])]);
    for (const cut of [0, 1, 50, big.length - 1, big.length]) {
      const tokens = await parse(input, [cut], 64);
      expect(show(tokens), `split at ${cut}`).toEqual(['fault:{"oversized":true,"bytes":65}', `frame:${a.subarray(1, -2)}`, 'nak']);
    }
  });

  it('reports a frame left open at end of input', async () => {
    expect(show(await parse(a.subarray(0, 8)))).toEqual(['fault:{"truncated":true,"bytes":7}']);
  });
});
