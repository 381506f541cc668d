import type { ServerMessage } from '../../../../devices/index.js';
import type { CommandRow } from '../commands/store.js';

/** The `charge` frame that hands a command to its terminal. */
export function chargeOf(row: CommandRow): ServerMessage {
  return {
    type: 'charge',
    command_id: row.id,
    amount_in_cents: row.amount_in_cents,
    currency: row.currency,
    installments: row.installments ?? 1,
    description: row.description,
    print_receipt: row.print_receipt === 1,
    show_post_payment_screens: row.show_post_payment_screens === 1,
    tax_id: row.tax_id,
  };
}
