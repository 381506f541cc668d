import { Type, type Static } from '@sinclair/typebox';
import { Nullable } from '../../api/schemas.js';

export const Transport = Type.Union([Type.Literal('websocket'), Type.Literal('serial')]);
/** What a terminal is reached by; `nexo` terminals are registered by the manager only (`posd terminals add --kind nexo`). */
export const LinkKind = Type.Union([Type.Literal('websocket'), Type.Literal('serial'), Type.Literal('nexo')]);
export const Availability = Type.Union([Type.Literal('available'), Type.Literal('unavailable')]);

export const CreateTerminalBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 255 }),
  transport: Type.Optional(Transport),
  serial_path: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 1024 }))),
  baud_rate: Type.Optional(Nullable(Type.Integer({ minimum: 300, maximum: 4_000_000 }))),
});
export type CreateTerminalBody = Static<typeof CreateTerminalBody>;

export const TerminalSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    transport: LinkKind,
    availability: Availability,
    last_seen_at: Nullable(Type.String({ format: 'date-time' })),
    model: Nullable(Type.String()),
    firmware: Nullable(Type.String()),
    serial_path: Nullable(Type.String()),
    baud_rate: Nullable(Type.Integer()),
    /** A nexo terminal's address, port and POIID (its key is never shown). */
    nexo: Nullable(Type.Object({ address: Type.String(), port: Type.Integer(), poiid: Type.String() })),
    account_id: Type.String(),
    live_mode: Type.Boolean(),
    created_at: Type.String({ format: 'date-time' }),
  },
  { $id: 'Terminal' },
);
export type TerminalView = Static<typeof TerminalSchema>;

export const CreatedTerminalSchema = Type.Object({
  ...TerminalSchema.properties,
  /** Shown once: the terminal presents it in `hello`; posd keeps only its hash. */
  pairing_token: Type.String(),
});

export const TerminalIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });
