/** What a simulated terminal does with a charge, and the results it makes. */
import type { Charge, Result, Stage } from '../protocol/messages.js';

export const BEHAVIOURS = ['approve', 'decline', 'slow', 'disconnect_while_authorizing', 'ignore_cancel', 'never_answer', 'garbage'] as const;
export type BehaviourName = (typeof BEHAVIOURS)[number];

export type StageDelays = Record<Stage, number>;

export const DEFAULT_DELAYS: StageDelays = { waiting_card: 200, reading: 200, authorizing: 300 };
/** `slow` keeps a cashier waiting long enough to try a cancel, or a status request. */
export const SLOW_DELAYS: StageDelays = { waiting_card: 3_000, reading: 2_000, authorizing: 5_000 };

export const STAGES: Stage[] = ['waiting_card', 'reading', 'authorizing'];

/** The outcome a charge ends with when nothing interrupts it. */
export function finalResult(behaviour: BehaviourName, charge: Charge, terminalId: string, serial: number): Result {
  const ref = `sim-${terminalId}-${serial}`;
  const card = { network: 'visa', last4: '4242' };
  if (behaviour === 'decline') {
    return {
      type: 'result',
      command_id: charge.command_id,
      outcome: 'declined',
      authorization_code: null,
      card,
      processor_reference: ref,
      reason: 'insufficient_funds',
    };
  }
  const code = String(100_000 + (serial % 900_000));
  return { type: 'result', command_id: charge.command_id, outcome: 'approved', authorization_code: code, card, processor_reference: ref, reason: null };
}

export function canceledResult(commandId: string): Result {
  return {
    type: 'result',
    command_id: commandId,
    outcome: 'canceled',
    authorization_code: null,
    card: null,
    processor_reference: null,
    reason: 'canceled_on_request',
  };
}

export function errorResult(commandId: string, reason: string): Result {
  return { type: 'result', command_id: commandId, outcome: 'error', authorization_code: null, card: null, processor_reference: null, reason };
}
