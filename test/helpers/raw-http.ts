import net from 'node:net';

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Everything the server wrote before it closed or the answer was complete. */
  raw: string;
}

/**
 * Sends bytes exactly as given over a fresh TCP connection and reads one HTTP/1.1 answer: for
 * requests an HTTP client refuses to send (bad request lines, oversized headers, broken encodings).
 */
export function rawRequest(url: string, bytes: string | Buffer, timeoutMs = 5000): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    let raw = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no complete answer within ${timeoutMs} ms; got: ${raw.slice(0, 200)}`));
    }, timeoutMs);
    const finish = () => {
      const parsed = parseAnswer(raw);
      if (!parsed) return false;
      clearTimeout(timer);
      socket.destroy();
      resolve(parsed);
      return true;
    };
    socket.on('data', (d) => {
      raw += d.toString('latin1');
      finish();
    });
    socket.on('error', () => {
      /* a reset after the answer is normal for a refused request */
    });
    socket.on('close', () => {
      if (!finish()) {
        clearTimeout(timer);
        reject(new Error(`connection closed without a complete answer; got: ${raw.slice(0, 200)}`));
      }
    });
    socket.write(bytes);
  });
}

function parseAnswer(raw: string): RawAnswer | undefined {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine, ...lines] = raw.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const l of lines) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  let body = raw.slice(end + 4);
  const length = headers['content-length'];
  if (length !== undefined) {
    if (body.length < Number(length)) return undefined;
    // A pipelined request's second answer may follow in the same chunk: one answer only.
    body = body.slice(0, Number(length));
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: Buffer.from(body, 'latin1').toString('utf8'), raw };
}
