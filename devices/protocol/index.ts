export * from './messages.js';
export * from './parse.js';
export * from './frame.js';
export * from './frame-parser.js';
