export * from './ws-link.js';
