// A dead letter's "delivered N×" (DeadLettersView) and its tooltip. Pure, so the count and the wording are tested
// directly (deliveredNote.test.ts).
//
// The count the client reports is the AMQP delivery-count: the earlier deliveries that ended without a settlement
// (an abandon, a lost lock), 0 on the first (the SDK reads it the same way: attemptOf in
// packages/sdk/src/deliveryBudget.ts). A dead letter that a receiver settled (the SDK's permanent failures, a
// refused command, its own delivery-budget stop, the Resolver's) was received once more than that: the receive that
// dead-lettered it, which ended in a settlement and so is not counted. Read as it comes, an SDK dead letter from the
// first delivery said "delivered 0×". Only reasons known to come from a receiver get that receive added: the broker
// moves messages for many reasons of its own (an expiry, the delivery limit, a header too large, too many transfer
// hops, a message without a session id on a session entity, a filter that failed), with every receive counted
// already, and a reason not known here is shown as reported rather than guessed at. On a dead letter the count also
// grows when a replay of other dead letters received it under a lock and left it (docs/operations.md, Dead-letter
// browser and replay).
import { WireText } from '@nimbus/sdk/contract/names';
import { countOf } from '../format.tsx';

/**
 * Dead-letter reasons a receiver settles with, exactly as written (deliveredNote.test.ts checks them against their
 * sources): the SDK's for a message it cannot handle (FAILED_TO_HANDLE in packages/sdk/src/decide.ts) and for a
 * refused command; the Resolver's (DeadLetterReason in resolver-worker/resolve.ts); the SDK deferred processor's for
 * a trigger without a session.
 */
export const RECEIVER_REASONS: ReadonlySet<string> = new Set([
  'Failed to handle message.',
  WireText.CommandRefused,
  WireText.CosmosDbThrottled,
  'StoreUnavailable',
  'UnknownMessageType',
  'MissingEventId',
  'MissingEndpoint',
  'InvalidMessage',
  'ResolverFailure',
  'No SessionId',
]);

/**
 * Reason prefixes the SDK writes: a permanent failure ("Permanent failure: {type}: {message}", decide.ts and the
 * dispatcher), its validation behaviour ("Validation failed: …"), the deferred processor's wrong trigger type.
 */
const RECEIVER_REASON_PREFIXES = ['Permanent failure: ', 'Validation failed: ', 'not a ProcessDeferredRequest ('];

/** The SDK's description when it dead-letters on the last allowed delivery (dispatcher.ts, budgetSpent). */
const SDK_BUDGET_SPENT = /^Delivery \d+ of \d+ ended transient/;

/** Whether a receiver is known to have settled the message with this dead-letter (so that receive is uncounted). */
function settledByReceiver(reason: string | null, description: string | null): boolean {
  if (reason === null) return false;
  if (RECEIVER_REASONS.has(reason) || RECEIVER_REASON_PREFIXES.some((p) => reason.startsWith(p))) return true;
  // The SDK uses the broker's reason for its own stop on the last delivery; its description tells them apart.
  return reason === 'MaxDeliveryCountExceeded' && SDK_BUDGET_SPENT.test(description ?? '');
}

/** How many times the dead letter was received under a lock; null when the broker gave no count. */
export function deliveriesOf(d: { deliveryCount: number | null; reason: string | null; description: string | null }): number | null {
  if (d.deliveryCount === null || !Number.isInteger(d.deliveryCount) || d.deliveryCount < 0) return null;
  return settledByReceiver(d.reason, d.description) ? d.deliveryCount + 1 : d.deliveryCount;
}

export function deliveredNote(deliveries: number): string {
  return `${countOf(deliveries, 'time')} received under a lock: by its endpoint before it was dead-lettered (the delivery that dead-lettered it included), and by any replay that looked at it here and left it in the queue. No delivery limit applies in the dead-letter queue.`;
}
