// The set-up of the tests of a command too large for the broker (resubmitTooLarge.test.ts, repeatTooLarge.test.ts),
// which each wrote it out: the console's stack on the embedded emulator and Cosmos (useConsoleStack), a failed
// OrderPlaced on billingendpoint seeded as the Resolver records it, an OrderPlaced payload of a chosen size, the
// route handlers' arguments, and the snapshot of what a refused command must leave as it was (the event's row,
// history and audit trail).
import { MessageType } from '@nimbus/sdk/contract';
import { useConsoleStack, type ConsoleStackOptions } from '../../testing/consoleStack.ts';
import { seedEvent, type SeededEvent } from '../../testing/seed.ts';

/** The endpoint whose events these tests resubmit. */
export const EP = 'billingendpoint';

/** A dynamic route's second argument, as Next passes it. */
export const params = <P>(p: P) => ({ params: Promise.resolve(p) });

/** A JSON POST to a route handler; no body when `body` is undefined. */
export const post = (body?: unknown) =>
  new Request('http://127.0.0.1/api/x', { method: 'POST', headers: { 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });

/** An OrderPlaced payload of about `bytes` (the catalog's schema takes any SKU text). */
export const order = (orderId: string, bytes: number) => ({ orderId, customerId: 'CUST-1', lines: [{ sku: 'x'.repeat(bytes), quantity: 1, unitPrice: 1 }], total: 1, currency: 'EUR' });

/** Registers the file's stack (`options` as useConsoleStack takes them) and returns it with the helpers on it. */
export function useTooLargeStack(options: ConsoleStackOptions) {
  const stack = useConsoleStack(options);
  return {
    /** The file's stack, filled in by its `before` (useConsoleStack). */
    stack,
    /**
     * A failed OrderPlaced `eventId` on EP in session `S-<eventId>` with `payload`, its request sent `ageMs` ago
     * (default a minute) and answered with an ErrorResponse.
     */
    failedOrder: (eventId: string, payload: Record<string, unknown>, ageMs = 60_000): Promise<SeededEvent> =>
      seedEvent(stack.store, Date.now() - ageMs, { endpointId: EP, eventId, sessionId: `S-${eventId}`, eventTypeId: 'OrderPlaced', payload }, MessageType.ErrorResponse, { errorText: 'boom' }),
    /** What a claim, its undo, a receipt or an audit entry would change: the event's row, history and audit trail. */
    snapshot: async (eventId: string, sessionId: string) => ({
      row: await stack.store.getStatusRow(EP, eventId, sessionId),
      history: (await stack.store.listHistory(eventId)).items,
      audits: (await stack.store.listAudits(eventId)).items,
    }),
  };
}
