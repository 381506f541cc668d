/** Baseline for the terminals scenario: a bare `ws` server that echoes every text message. */
import { WebSocketServer } from 'ws';

const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
wss.on('connection', (ws) => ws.on('message', (data) => ws.send(data, { binary: false })));
wss.on('listening', () => {
  const addr = wss.address();
  process.stdout.write(`port ${typeof addr === 'object' && addr ? addr.port : 0}\n`);
});
process.on('SIGTERM', () => wss.close(() => process.exit(0)));
