/**
 * The feed appliers of the owning modules (each registers its kinds with `registerFeedApplier` when
 * loaded). Imported by the store's sync worker; a module that publishes a new kind adds its file here.
 */
import '../modules/accounts/feed.js';
import '../modules/ledger/feed.js';
import '../modules/intents/feed.js';
import '../modules/tax-invoices/feed.js';
import '../modules/bank-accounts/feed.js';
import '../modules/products/feed.js';
import '../modules/coupons/feed.js';
import '../modules/bookables/feed.js';
import '../modules/bookings/class-sessions/feed.js';
import '../modules/bookings/feed.js';
