import { Type, type Static } from '@sinclair/typebox';
import { Nullable } from '../../api/schemas.js';

/** A date (whole day) or a date-time with offset, as the ledger's own filters take. */
const DateOrTime = Type.String({ minLength: 10, maxLength: 40 });

export const CreateReportRunBody = Type.Object({
  report_type: Type.Optional(Type.Literal('balance_transactions')),
  from_time: DateOrTime,
  until_time: DateOrTime,
  currency: Type.Optional(Type.Union([Type.Literal('GTQ'), Type.Literal('USD'), Type.Literal('USDC')])),
  type: Type.Optional(Type.Union(['charge', 'refund', 'payout', 'dispute', 'transfer', 'adjustment'].map((t) => Type.Literal(t)))),
});
export type CreateReportRunInput = Static<typeof CreateReportRunBody>;

export const ReportParameters = Type.Object({
  from_time: Type.String(),
  until_time: Type.String(),
  currency: Nullable(Type.String()),
  type: Nullable(Type.String()),
});
export type ReportParametersT = Static<typeof ReportParameters>;

export const ReportRunSchema = Type.Object({
  id: Type.String(),
  account_id: Type.String(),
  live_mode: Type.Boolean(),
  report_type: Type.String(),
  status: Type.Union(['pending', 'running', 'succeeded', 'failed'].map((s) => Type.Literal(s))),
  parameters: ReportParameters,
  result: Nullable(
    Type.Object({
      filename: Type.String(),
      content_type: Type.String(),
      size_bytes: Type.Integer(),
      sha256: Type.String(),
      row_count: Type.Integer(),
      url: Type.String(),
    }),
  ),
  error: Nullable(Type.String()),
  created_at: Type.String(),
  succeeded_at: Nullable(Type.String()),
  failed_at: Nullable(Type.String()),
});
export type ReportRun = Static<typeof ReportRunSchema>;
