import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** The `sh` block marked `<!-- walkthrough:NAME -->` in a page (README.md, a docs page), as written. */
export function walkthrough(page: string, name: string): string {
  const text = readFileSync(page, 'utf8');
  const m = new RegExp(`<!-- walkthrough:${name} -->\n\`\`\`sh\n([\\s\\S]*?)\n\`\`\``).exec(text);
  if (!m) throw new Error(`${page} has no walkthrough:${name} block`);
  return m[1];
}

/** Runs a block by `bash -e`, its output joined; whatever it started is stopped when it ends or times out. */
export function runBash(script: string, timeoutMs: number, env: NodeJS.ProcessEnv = process.env): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    // Its own process group, so a failure mid-way still stops the processes it started.
    const child = spawn('bash', ['-e', '-c', script], { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        // the group is gone already: the block stopped what it started
      }
      resolve({ code, out });
    });
  });
}
