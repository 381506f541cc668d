/**
 * Terminal link protocol, versions 1 and 2 (see docs/terminal-protocol.md and DESIGN.md). Version 2
 * adds stored (store-and-forward) payments: `offline_policy`, the `stored` outcome,
 * `forward_result` and `forward_ack`.
 * One TypeBox schema per message: validation and the TypeScript type come from the same source.
 * Extra, unknown fields are tolerated so a terminal firmware that adds a field does not break the
 * link; every field the protocol names is checked.
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';

/** The version a terminal that predates negotiation speaks; still what the scripted tools default to. */
export const PROTOCOL_VERSION = 1;
/** The highest version posd speaks. A hello names the terminal's highest; the session runs at the lower of the two. */
export const LATEST_PROTOCOL_VERSION = 2;

/** The session's version for a hello's `protocol`, or null when posd cannot speak to it at all. */
export function negotiateProtocol(terminalVersion: number): number | null {
  if (!Number.isInteger(terminalVersion) || terminalVersion < PROTOCOL_VERSION) return null;
  return Math.min(terminalVersion, LATEST_PROTOCOL_VERSION);
}

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

export const CommandId = Type.String({ minLength: 1, maxLength: 128 });
export const Stage = Type.Union([Type.Literal('waiting_card'), Type.Literal('reading'), Type.Literal('authorizing')]);
export type Stage = Static<typeof Stage>;
export const Outcome = Type.Union([
  Type.Literal('approved'),
  Type.Literal('declined'),
  Type.Literal('canceled'),
  Type.Literal('error'),
  // Version 2: approved offline by the terminal, not yet authorised by its processor.
  Type.Literal('stored'),
]);
export type Outcome = Static<typeof Outcome>;

const IsoTime = Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?(Z|[+-]\\d{2}:\\d{2})$' });
/** The terminal's own reference for a stored payment: how forward results name it. */
export const OfflineReference = Type.String({ minLength: 1, maxLength: 128 });

export const Card = Type.Object({
  network: Type.String({ minLength: 1, maxLength: 32 }),
  last4: Type.String({ pattern: '^[0-9]{4}$' }),
});
export type Card = Static<typeof Card>;

/** The body of a result, shared by `result` and by entries of `hello.unacknowledged_results`. */
const resultFields = {
  command_id: CommandId,
  outcome: Outcome,
  // Detail fields may be absent or null: a declined or canceled charge has no authorization code.
  authorization_code: Type.Optional(Nullable(Type.String({ maxLength: 64 }))),
  card: Type.Optional(Nullable(Card)),
  processor_reference: Type.Optional(Nullable(Type.String({ maxLength: 128 }))),
  // When the terminal timestamped its reference (nexo's POITransactionID.TimeStamp): a refund names both.
  processor_reference_at: Type.Optional(Nullable(Type.String({ maxLength: 64 }))),
  reason: Type.Optional(Nullable(Type.String({ maxLength: 256 }))),
  // Version 2, required with outcome `stored` (checked by the parser): the terminal's reference.
  offline_reference: Type.Optional(Nullable(OfflineReference)),
};

export const ResultBody = Type.Object({ type: Type.Optional(Type.Literal('result')), ...resultFields });
export type ResultBody = Static<typeof ResultBody>;

// terminal -> posd
export const Hello = Type.Object({
  type: Type.Literal('hello'),
  terminal_id: Type.String({ minLength: 1, maxLength: 128 }),
  token: Type.String({ minLength: 1, maxLength: 1024 }),
  model: Type.String({ maxLength: 128 }),
  firmware: Type.String({ maxLength: 128 }),
  // Any integer is accepted here so the handshake can answer `unsupported_protocol` instead of
  // dropping the message as malformed.
  protocol: Type.Integer({ minimum: 0 }),
  current_command_id: Nullable(CommandId),
  unacknowledged_results: Type.Array(ResultBody, { maxItems: 64 }),
});
export type Hello = Static<typeof Hello>;

export const Ack = Type.Object({ type: Type.Literal('ack'), command_id: CommandId });
export type Ack = Static<typeof Ack>;

export const Progress = Type.Object({ type: Type.Literal('progress'), command_id: CommandId, stage: Stage });
export type Progress = Static<typeof Progress>;

export const Result = Type.Object({ type: Type.Literal('result'), ...resultFields });
export type Result = Static<typeof Result>;

/** Version 2: what became of a stored payment once the terminal reached its processor. */
export const ForwardOutcome = Type.Union([Type.Literal('forwarded'), Type.Literal('approved'), Type.Literal('declined'), Type.Literal('expired')]);
export type ForwardOutcome = Static<typeof ForwardOutcome>;

export const ForwardResult = Type.Object({
  type: Type.Literal('forward_result'),
  offline_reference: OfflineReference,
  command_id: CommandId,
  outcome: ForwardOutcome,
  authorization_code: Type.Optional(Nullable(Type.String({ maxLength: 64 }))),
  card: Type.Optional(Nullable(Card)),
  processor_reference: Type.Optional(Nullable(Type.String({ maxLength: 128 }))),
  reason: Type.Optional(Nullable(Type.String({ maxLength: 256 }))),
});
export type ForwardResult = Static<typeof ForwardResult>;

// either side
export const Ping = Type.Object({ type: Type.Literal('ping') });
export type Ping = Static<typeof Ping>;
export const Pong = Type.Object({ type: Type.Literal('pong') });
export type Pong = Static<typeof Pong>;

// posd -> terminal
export const Welcome = Type.Object({
  type: Type.Literal('welcome'),
  server_time: IsoTime,
  // Present from version 2 on: the version the session runs at.
  protocol: Type.Optional(Type.Integer({ minimum: 1 })),
});
export type Welcome = Static<typeof Welcome>;

export const ErrorMessage = Type.Object({
  type: Type.Literal('error'),
  code: Type.String({ minLength: 1, maxLength: 64 }),
  message: Type.Optional(Type.String({ maxLength: 1024 })),
});
export type ErrorMessage = Static<typeof ErrorMessage>;

export const Charge = Type.Object({
  type: Type.Literal('charge'),
  command_id: CommandId,
  amount_in_cents: Type.Integer({ minimum: 1, maximum: 99_999_999_999 }),
  currency: Type.String({ pattern: '^[A-Z]{3}$' }),
  installments: Type.Integer({ minimum: 1, maximum: 99 }),
  description: Nullable(Type.String({ maxLength: 256 })),
  print_receipt: Type.Boolean(),
  show_post_payment_screens: Type.Boolean(),
  tax_id: Nullable(Type.String({ maxLength: 64 })),
});
export type Charge = Static<typeof Charge>;

export const Cancel = Type.Object({ type: Type.Literal('cancel'), command_id: CommandId });
export type Cancel = Static<typeof Cancel>;

export const ResultAck = Type.Object({ type: Type.Literal('result_ack'), command_id: CommandId });
export type ResultAck = Static<typeof ResultAck>;

export const StatusRequest = Type.Object({ type: Type.Literal('status_request'), command_id: CommandId });
export type StatusRequest = Static<typeof StatusRequest>;

/** Version 2: what the terminal may store while it cannot reach its processor. */
export const OfflinePolicy = Type.Object({
  type: Type.Literal('offline_policy'),
  allowed: Type.Boolean(),
  currency: Type.String({ pattern: '^[A-Z]{3}$' }),
  max_payment_in_cents: Type.Integer({ minimum: 0 }),
  remaining_amount_in_cents: Type.Integer({ minimum: 0 }),
  remaining_count: Type.Integer({ minimum: 0 }),
  max_age_seconds: Type.Integer({ minimum: 0 }),
  forward_by: Nullable(IsoTime),
});
export type OfflinePolicy = Static<typeof OfflinePolicy>;

export const ForwardAck = Type.Object({ type: Type.Literal('forward_ack'), offline_reference: OfflineReference, outcome: ForwardOutcome });
export type ForwardAck = Static<typeof ForwardAck>;

/** Messages a terminal sends, by type. */
export const terminalMessageSchemas = {
  hello: Hello,
  ack: Ack,
  progress: Progress,
  result: Result,
  forward_result: ForwardResult,
  ping: Ping,
  pong: Pong,
} as const;

/** Messages posd sends, by type. */
export const serverMessageSchemas = {
  welcome: Welcome,
  error: ErrorMessage,
  charge: Charge,
  cancel: Cancel,
  result_ack: ResultAck,
  status_request: StatusRequest,
  offline_policy: OfflinePolicy,
  forward_ack: ForwardAck,
  ping: Ping,
  pong: Pong,
} as const;

export type TerminalMessage = Hello | Ack | Progress | Result | ForwardResult | Ping | Pong;
export type ServerMessage = Welcome | ErrorMessage | Charge | Cancel | ResultAck | StatusRequest | OfflinePolicy | ForwardAck | Ping | Pong;
export type AnyMessage = TerminalMessage | ServerMessage;
export type TerminalMessageType = TerminalMessage['type'];
export type ServerMessageType = ServerMessage['type'];
