export * from './serial-link.js';
export * from './port-opener.js';
export * from './serial-keeper.js';
