/**
 * A paired terminal gone wrong, in its own process (so its sending does not slow the bench's own
 * measuring loop): says hello, then sends pings and garbage as fast as its socket takes them; when
 * posd closes the link it connects again and floods again, until killed. Prints `frames N` when a
 * link closes. Arguments: ws URL, terminal id, pairing token.
 */
import WebSocket from 'ws';

const [url, terminalId, token] = process.argv.slice(2);

function floodOnce(): Promise<void> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url);
    let open = false;
    let frames = 0;
    ws.on('open', () => {
      ws.send(
        JSON.stringify({
          type: 'hello',
          terminal_id: terminalId,
          token,
          model: 'flooder',
          firmware: '0',
          protocol: 1,
          current_command_id: null,
          unacknowledged_results: [],
        }),
      );
    });
    ws.on('message', (d) => {
      if (open || JSON.parse(String(d)).type !== 'welcome') return;
      open = true;
      const pump = () => {
        if (ws.readyState !== WebSocket.OPEN) return;
        for (let i = 0; i < 500; i++) ws.send(frames++ % 2 ? '{"type":"ping"}' : 'garbage garbage garbage');
        setImmediate(pump);
      };
      pump();
    });
    ws.on('error', () => {});
    ws.on('close', (code) => {
      process.stdout.write(`frames ${frames} close ${code}\n`);
      resolve();
    });
  });
}

for (;;) await floodOnce();
