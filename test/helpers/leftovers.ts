/**
 * Loaded before every test file (vitest.config.ts): a file that leaves a test server running (and so
 * its data folder in the temp folder) fails, naming the folder, after this hook has stopped the
 * server and removed the folder. Without it a forgotten `stop()` leaks a daemon into the next file
 * of the worker and a folder into /tmp on every run, and nobody notices.
 */
import { afterAll } from 'vitest';
import { runningServers } from './server.js';

afterAll(async () => {
  if (runningServers.size === 0) return;
  const left = [...runningServers];
  // stop() takes each out of the set and removes the folder it made.
  await Promise.allSettled(left.map((s) => s.stop()));
  throw new Error(`this file left ${left.length} test server(s) running: stop each in afterAll/afterEach (${left.map((s) => s.dataDir).join(', ')})`);
});
