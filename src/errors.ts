/**
 * The one error catalogue: every `code` posd answers with, its HTTP status and its default message.
 * `docs/errors.md` lists the same table; a test fails when the two disagree. Codes are stable: a
 * point-of-sale program branches on them, so a code is never renamed or reused.
 */
export const ERRORS = {
  // Requests
  invalid_json: { status: 400, message: 'The request body is not a JSON object.' },
  validation_error: { status: 400, message: 'Some parameters are invalid.' },
  unknown_parameter: { status: 400, message: 'The request names a parameter this endpoint does not take.' },
  invalid_date_range: { status: 400, message: 'Send both from_time and until_time, or neither.' },
  account_id_required: { status: 400, message: 'An organization key must name an account with X-ACCOUNT-ID for this endpoint.' },
  payload_too_large: { status: 413, message: 'The request body is too large.' },
  route_not_found: { status: 404, message: 'No such endpoint.' },
  // HTTP itself (issue 17, hole 8): what the parser or the router refuses before any route runs
  bad_request: { status: 400, message: 'The request is not well-formed HTTP.' },
  method_not_allowed: { status: 405, message: 'This endpoint does not take that method; see the Allow header.' },
  request_timeout: { status: 408, message: 'The request did not arrive in time.' },
  uri_too_long: { status: 414, message: 'A path segment is too long.' },
  headers_too_large: { status: 431, message: 'The request headers are too large.' },
  too_many_connections: { status: 503, message: 'Too many connections are open; close some, or retry shortly.' },
  not_found: { status: 404, message: 'The resource does not exist.' },
  // Authentication (spec section 5)
  missing_key: { status: 401, message: 'Send your secret key in the X-SECRET-KEY header.' },
  invalid_key: { status: 401, message: 'The secret key is not valid.' },
  masked_key: { status: 401, message: 'That key is masked; use the full key shown when it was created.' },
  revoked_key: { status: 401, message: 'The secret key has been revoked.' },
  test_key_not_found: {
    status: 401,
    message: 'This test key does not exist. Test keys live in sandboxes: create or copy one from your sandbox.',
  },
  environment_mismatch: { status: 401, message: 'The key environment does not match its account.' },
  organization_key_unsupported: { status: 403, message: 'Organization keys are read-only; this endpoint needs an account key.' },
  money_movement_not_enabled: { status: 403, message: 'This key cannot move money.' },
  // Limits (spec section 8)
  rate_limited: { status: 429, message: 'Too many requests; wait the seconds in Retry-After.' },
  blocked: { status: 503, message: 'Blocked' },
  // Idempotency (gaps.md)
  idempotency_key_invalid: { status: 400, message: 'Idempotency-Key must be 1 to 255 characters.' },
  idempotency_key_reused: { status: 422, message: 'This Idempotency-Key was used with a different request.' },
  idempotency_key_in_use: { status: 409, message: 'A request with this Idempotency-Key is still running.' },
  // Named by the spec (section 7)
  not_holding: { status: 422, message: 'The booking is already cancelled or closed.' },
  not_pending: { status: 422, message: 'Only a pending booking can be declined.' },
  not_cancellable: { status: 422, message: 'The class session has already started or been cancelled.' },
  seats_left: { status: 422, message: 'Some seats could not be refunded; retry to finish them.' },
  service_name_required: { status: 422, message: 'The template uses {servicio}: send service_name.' },
  sandbox_unsupported: { status: 422, message: 'This operation is not available in a sandbox.' },
  // Webhooks (issue 5)
  webhook_url_refused: {
    status: 400,
    message: 'The URL is not allowed: it must be http(s) and must not point at a private, local or metadata address.',
  },
  webhook_endpoint_disabled: { status: 422, message: 'The webhook endpoint is disabled; enable it first.' },
  // Scheduling (docs/scheduling.md)
  bookings_not_enabled: { status: 403, message: 'Bookings are not enabled for this account.' },
  slot_unavailable: { status: 422, message: 'That time slot is no longer available.' },
  booking_state_invalid: { status: 422, message: 'The booking is not in a state that allows this.' },
  no_balance: { status: 422, message: 'The booking has no balance left to collect.' },
  refund_failed: { status: 422, message: 'The booking is declined but its payment could not be refunded yet; call again to retry the refund.' },
  invalid_feed_url: { status: 422, message: 'A calendar feed URL must be an https URL.' },
  // Money (issue 3, docs/money.md)
  email_taken: { status: 422, message: 'Another customer already has that e-mail.' },
  wrong_environment: { status: 401, message: 'This customer belongs to the other environment (live or test) than your key.' },
  checkout_not_modifiable: { status: 422, message: 'Only an unpaid checkout may change.' },
  checkout_expired: { status: 422, message: 'The checkout has expired and can no longer be paid.' },
  already_refunded: { status: 422, message: 'This payment intent has already been refunded.' },
  terminal_refund_unavailable: {
    status: 422,
    message: 'The nexo terminal that took this payment is retired: the refund must be carried out by that terminal (docs/terminals-nexo.md).',
  },
  // The hosted service refunds only in full (hosted-api.md section 8; docs/compatibility.md).
  partial_refund_unsupported: { status: 422, message: 'Refunds are always of the whole payment; amount_in_cents, when sent, must be the payment amount.' },
  payment_not_succeeded: { status: 422, message: 'Only a succeeded payment intent can be refunded or invoiced.' },
  // Disputes (docs/events.md, src/modules/disputes/)
  payment_not_disputable: { status: 422, message: 'Only a succeeded card payment can be disputed.' },
  already_disputed: { status: 422, message: 'This payment intent is already disputed.' },
  payment_disputed: { status: 422, message: 'This payment intent is disputed; the chargeback already takes the money back.' },
  dispute_final: { status: 422, message: 'The dispute already reached a final status.' },
  // Money movements (docs/transfers.md)
  unknown_bank: { status: 400, message: 'That bank is not one of GET /banks.' },
  bank_account_archived: { status: 422, message: 'The bank account is archived; create a new one.' },
  insufficient_funds: { status: 422, message: 'The available balance in that currency is not enough.' },
  withdrawal_final: { status: 422, message: 'The withdrawal already reached a final status.' },
  transfer_not_in_review: { status: 422, message: 'The transfer is not held for review.' },
  swap_final: { status: 422, message: 'The swap already reached a final status.' },
  exchange_not_configured: {
    status: 422,
    message: 'No exchange provider is configured on this posd: live swaps cannot be completed. Swaps work in a sandbox.',
  },
  // Sync between a store and its central (docs/sync-protocol.md)
  sync_account_forbidden: { status: 403, message: 'A record names an account this key does not act for; nothing was received.' },
  sync_store_mismatch: { status: 403, message: 'This store id is bound to another account at the central; nothing was received.' },
  sync_sequence_gap: { status: 409, message: 'The batch does not follow the last sequence the central received; nothing was received.' },
  sync_record_conflict: { status: 409, message: 'A record id was already received with different content; nothing was received.' },
  sync_apply_failed: { status: 503, message: 'The central could not apply the batch; nothing was applied, push it again later.' },
  sync_push_at_core: { status: 503, message: "This central is a chain's core: pushes go to its central-front processes; nothing was received." },
  // A chain's central past one machine (docs/central.md): the central-front processes
  central_standby: { status: 503, message: 'This core is a standby: writes go to the leading core; nothing was written.' },
  central_log_unavailable: {
    status: 503,
    message: 'The central could not confirm the change in its log (PostgreSQL) in time; it may still be written. Retry with the same Idempotency-Key.',
  },
  sync_database_unavailable: { status: 503, message: "The central's sync database (PostgreSQL) does not answer; nothing was received or read. Retry shortly." },
  central_front_only: {
    status: 421,
    message: "This is a posd central-front: it serves only /sync/* (the store boxes' protocol). Send /api and the pages to the core central.",
  },
  // Terminals and terminal session commands (gaps.md, spec 3.3 and 4.9)
  external_id_reused: {
    status: 422,
    message: 'This external_id was already used for a command with a different amount or terminal.',
  },
  terminal_command_final: { status: 409, message: 'The command already has a definitive result and can no longer be canceled.' },
  terminal_busy: { status: 409, message: 'The terminal holds a command in progress; retire it once that command is final.' },
  manager_credential_required: {
    status: 403,
    message:
      "Changing the offline policy takes a named manager's credential: X-Manager-Token (posd managers token), or the status page's session with its X-CSRF-Token. A secret key alone is not enough.",
  },
  offline_policy_at_store: { status: 409, message: "A store's offline policy is changed at that store; the central only keeps what the stores report." },
  offline_cap_reached: {
    status: 422,
    message: 'The store is offline and this charge could not be stored within the offline caps; take another payment method.',
  },
  // Products
  product_sold_out: { status: 422, message: 'A product of this checkout is sold out (its inventory_quantity is 0 or below the quantity asked).' },
  // Coupons
  coupon_not_applicable: { status: 422, message: 'A coupon code sent does not apply to this checkout.' },
  // Reports
  report_not_ready: { status: 409, message: 'The report is not ready yet; download it once its status is succeeded.' },
  // Subscriptions
  subscription_transition_invalid: { status: 422, message: 'The subscription cannot make that change in its current status.' },
  price_has_no_trial: { status: 422, message: 'That price has no free trial; buy it through a checkout.' },
  reactivation_period_over: { status: 422, message: 'The subscription was canceled too long ago to be reactivated.' },
  subscription_minimum_term: {
    status: 422,
    message: "The subscription cannot be canceled before its price's minimum term (periods_before_allowed_to_cancel) is paid.",
  },
  card_not_present_unavailable: {
    status: 422,
    message:
      'Charging a saved card needs a card processor, which this box does not have: live card payments are taken at a terminal (the hosted service charges saved cards).',
  },
  card_declined: { status: 402, message: 'The saved card was declined; nothing was charged.' },
  // Contracts
  invalid_customer: { status: 422, message: 'Identify the customer by customer_id, or by customer.phone and customer.name.' },
  contract_unsigned: { status: 422, message: 'This checkout belongs to a contract that is not signed yet; it accepts no payment until then.' },
  pdf_not_available: { status: 409, message: 'The signed PDF is not available (the contract is not signed, or the PDF is still being rendered).' },
  // Server
  disk_full: {
    status: 507,
    message: "The disk holding posd's data is full: nothing was written. Reads go on; writes resume by themselves once space is freed.",
  },
  service_unavailable: { status: 503, message: 'The service is shutting down or not ready; retry shortly.' },
  internal_error: { status: 500, message: 'Something went wrong on our side; nothing was changed.' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERRORS;

export interface ErrorBody {
  message: string;
  code?: string;
  errors?: Record<string, string[]>;
  refund_id?: string;
  endpoint?: string;
  [extra: string]: unknown;
}

/** An error that is a value: a status, a stable code and the spec's body. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  readonly errors?: Record<string, string[]>;
  readonly extra: Record<string, unknown>;
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    opts: {
      message?: string;
      errors?: Record<string, string[]>;
      extra?: Record<string, unknown>;
      headers?: Record<string, string>;
    } = {},
  ) {
    super(opts.message ?? ERRORS[code].message);
    this.name = 'ApiError';
    this.status = ERRORS[code].status;
    this.code = code;
    this.errors = opts.errors;
    this.extra = opts.extra ?? {};
    this.headers = opts.headers ?? {};
  }

  body(): ErrorBody {
    const body: ErrorBody = { ...this.extra, message: this.message, code: this.code };
    if (this.errors) body.errors = this.errors;
    return body;
  }
}

export function notFound(what = 'resource', id?: string): ApiError {
  return new ApiError('not_found', { message: id ? `No ${what} with id ${id}.` : `No such ${what}.` });
}

/** 400 with one message per field, the shape of every validation error. */
export function invalid(errors: Record<string, string[] | string>, message?: string): ApiError {
  const normalized: Record<string, string[]> = {};
  for (const [field, msgs] of Object.entries(errors)) normalized[field] = Array.isArray(msgs) ? msgs : [msgs];
  return new ApiError('validation_error', { errors: normalized, message });
}
