export * from './behaviours.js';
export * from './connectors.js';
export * from './simulator.js';
export * from './nexo-simulator.js';
