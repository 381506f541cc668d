/** A real pseudo-terminal pair joined by socat, so serial tests run over a real tty. */
import { spawn, type ChildProcess } from 'node:child_process';

export interface PtyPair {
  a: string;
  b: string;
  kill(): Promise<void>;
}

export function openPtyPair(): Promise<PtyPair> {
  const proc: ChildProcess = spawn('socat', ['-d', '-d', 'pty,raw,echo=0', 'pty,raw,echo=0'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const kill = () =>
    new Promise<void>((resolve) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
      proc.once('exit', () => resolve());
      proc.kill('SIGTERM');
    });
  return new Promise((resolve, reject) => {
    let err = '';
    proc.once('error', reject);
    proc.once('exit', (code) => reject(new Error(`socat exited (${code}): ${err}`)));
    proc.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      const paths = [...err.matchAll(/PTY is (\/dev\/pts\/\d+)/g)].map((m) => m[1]);
      // Both ends exist once socat reports its transfer loop.
      if (paths.length === 2 && err.includes('starting data transfer loop')) {
        resolve({ a: paths[0], b: paths[1], kill });
      }
    });
  });
}
