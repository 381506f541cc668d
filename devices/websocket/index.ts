export * from './ws-link.js';
export * from './pin.js';
