/**
 * Preloaded into a real `posd serve` (`node --import dist/test/helpers/failing-worker.js
 * dist/src/posd.js serve ...`): adds a module with a worker that throws at start (after the port
 * listens; its error names the port, so a test can check it is free), or at stop when
 * FAILING_WORKER=stop.
 */
import type { ApiApp, PosdModule } from '../../src/api/module.js';
import { MODULES } from '../../src/modules/index.js';

const at = process.env.FAILING_WORKER === 'stop' ? 'stop' : 'start';
let app: ApiApp | undefined;

const failing: PosdModule = {
  name: 'failing-fixture',
  root(a) {
    app = a;
  },
  workers: () => [
    {
      name: 'doomed',
      start() {
        if (at !== 'start') return;
        const address = app?.server.address();
        const port = typeof address === 'object' && address ? address.port : undefined;
        throw new Error(`cannot start (port ${port})`);
      },
      stop() {
        if (at === 'stop') throw new Error('cannot stop');
      },
    },
  ],
};

// The module list is read when `serve` starts the daemon, after this preload has run.
(MODULES as PosdModule[]).push(failing);
