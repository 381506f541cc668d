/**
 * The nexo simulator's `timeout` mode: the terminal takes the PaymentRequest and never answers it.
 * posd gives up waiting for that answer (`terminals.nexo_payment_timeout_ms`), never decides the
 * command on its own (docs/terminals.md: a silent terminal leaves its command undecided), keeps
 * asking by TransactionStatusRequest, and never sends a second PaymentRequest: when the terminal
 * ends the payment, the status answer settles the command once.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { until } from '../helpers/until.js';
import { startNexoHarness, type NexoHarness } from './helpers/nexo-harness.js';

let h: NexoHarness;

beforeAll(async () => {
  // The shortest payment timeout config allows, and the bridge's own status requests soon too.
  h = await startNexoHarness({ mode: 'timeout', terminals: { nexo_payment_timeout_ms: 1_000, dispatch_timeout_ms: 500 } });
}, 60_000);

afterAll(async () => {
  await h?.stop();
});

async function takenAndLost(): Promise<string> {
  const c = await h.charge();
  expect(c.status).toBe(201);
  const id = c.body.id as string;
  await h.sim.reached(id, 'waiting_card');
  await until(`${id} dispatched`, async () => (await h.get(id)).status === 'dispatched', 10_000);
  // posd stopped waiting for the PaymentRequest's answer: its connection is gone, the payment is not.
  await until(`posd giving up on the PaymentRequest of ${id}`, () => h.paymentsOf(id)[0]?.abandoned, 10_000);
  return id;
}

it('a PaymentRequest never answered: undecided while the terminal says InProgress, settled once by TransactionStatus', async () => {
  const paymentRequests = h.sim.requests.Payment ?? 0;
  const id = await takenAndLost();
  const asked = h.sim.requests.TransactionStatus ?? 0;
  await until('two more TransactionStatusRequests', () => (h.sim.requests.TransactionStatus ?? 0) >= asked + 2, 15_000);
  // Past both timeouts posd still does not decide: the terminal may yet complete the payment.
  expect(await h.get(id)).toMatchObject({ status: 'dispatched', final: false, canceled_at: null, checkout_status: 'payment_in_progress' });
  expect(h.sim.requests.Payment).toBe(paymentRequests + 1);

  // The terminal ends the payment; its answer can only reach posd through TransactionStatus.
  h.sim.complete(id, 'approved');
  const done = await until(
    `${id} consumed`,
    async () => {
      const c = await h.get(id);
      return c.status === 'consumed' ? c : undefined;
    },
    15_000,
  );
  expect(done).toMatchObject({ final: true, checkout_status: 'paid', canceled_at: null });
  expect(h.sim.approvedCount(id)).toBe(1);
  expect(h.paymentsOf(id)).toHaveLength(1);
  expect(h.sim.requests.Payment).toBe(paymentRequests + 1);
}, 60_000);

it('a cancel while the answer is lost: the AbortRequest stops the card wait, the Aborted answer learned by TransactionStatus', async () => {
  const paymentRequests = h.sim.requests.Payment ?? 0;
  const id = await takenAndLost();
  const del = await h.server.api('DELETE', `/terminal_session_commands/${id}`);
  expect(del.status).toBe(202);
  expect(del.body.status).toBe('cancel_requested');
  const done = await until(
    `${id} canceled`,
    async () => {
      const c = await h.get(id);
      return c.final ? c : undefined;
    },
    15_000,
  );
  expect(done).toMatchObject({ status: 'canceled', checkout_status: 'unpaid' });
  expect(h.paymentsOf(id)[0].aborts).toBeGreaterThan(0);
  expect(h.sim.approvedCount(id)).toBe(0);
  expect(h.sim.requests.Payment).toBe(paymentRequests + 1);
}, 60_000);
