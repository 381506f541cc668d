/** The driver layer's public surface for src/: nothing here imports from src/. */
export * from './clock.js';
export * from './link.js';
export * from './handshake.js';
export * from './protocol/index.js';
export * from './websocket/index.js';
export * from './serial/index.js';
