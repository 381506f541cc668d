/** The nexo link kind (Adyen's Terminal API, local). Loaded by posd only when a nexo terminal is registered. */
export * from './crypto.js';
export * from './messages.js';
export * from './client.js';
export * from './nexo-link.js';
export * from './refunds.js';
