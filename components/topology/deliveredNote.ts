// A dead letter's "delivered N×" (DeadLettersView) and its tooltip. Pure, so the count and the wording are tested
// directly (deliveredNote.test.ts).
//
// The count the client reports is the AMQP delivery-count: the earlier deliveries that ended without a settlement
// (an abandon, a lost lock), 0 on the first (the SDK reads it the same way: attemptOf in
// packages/sdk/src/deliveryBudget.ts). A dead letter that a receiver settled (the SDK's permanent failures, a
// refused command, its own delivery-budget stop) was received once more than that: the receive that dead-lettered
// it, which ended in a settlement and so is not counted. Read as it comes, an SDK dead letter from the first
// delivery said "delivered 0×". The broker's own dead letters (the delivery limit reached by lost locks, an
// expiry) have every receive counted already. On a dead letter the count also grows when a replay of other dead
// letters received it under a lock and left it (docs/operations.md, Dead-letter browser and replay).
import { countOf } from '../format.tsx';

/** The SDK's description when it dead-letters on the last allowed delivery (dispatcher.ts, budgetSpent). */
const SDK_BUDGET_SPENT = /^Delivery \d+ of \d+ ended transient/;

/** Whether the broker itself moved the message (no receiver settled it): its receives are all counted. */
function brokerDeadLettered(reason: string | null, description: string | null): boolean {
  if (reason === 'TTLExpiredException') return true;
  // The SDK uses the broker's reason for its own stop on the last delivery; its description tells them apart.
  return reason === 'MaxDeliveryCountExceeded' && !SDK_BUDGET_SPENT.test(description ?? '');
}

/** How many times the dead letter was received under a lock; null when the broker gave no count. */
export function deliveriesOf(d: { deliveryCount: number | null; reason: string | null; description: string | null }): number | null {
  if (d.deliveryCount === null || !Number.isInteger(d.deliveryCount) || d.deliveryCount < 0) return null;
  return brokerDeadLettered(d.reason, d.description) ? d.deliveryCount : d.deliveryCount + 1;
}

export function deliveredNote(deliveries: number): string {
  return `${countOf(deliveries, 'time')} received under a lock: by its endpoint before it was dead-lettered (the delivery that dead-lettered it included), and by any replay that looked at it here and left it in the queue. No delivery limit applies in the dead-letter queue.`;
}
