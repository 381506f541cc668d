/**
 * Waits for a condition that daemons, workers or other processes reach on their own: polls `read`
 * until it gives something truthy and returns that, or fails naming `what` after `timeoutMs`.
 * Tests wait with this rather than with fixed sleeps, so a fast machine does not wait for nothing
 * and a slow one does not fail at random.
 */
export async function until<T>(what: string, read: () => T | Promise<T>, timeoutMs = 10_000, intervalMs = 20): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
