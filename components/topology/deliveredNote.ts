// The tooltip on a dead letter's "delivered N×" (DeadLettersView): on a dead letter the count also grows when a
// replay of other dead letters received it under a lock and left it (docs/operations.md, Dead-letter browser and
// replay), so it does not mean an endpoint tried it again. Pure, so the wording is tested directly.
import { countOf } from '../format.tsx';

export function deliveredNote(deliveryCount: number | null): string {
  const times = deliveryCount === null ? 'An unknown number of times' : countOf(deliveryCount, 'time');
  return `${times} received under a lock: by its endpoint before it was dead-lettered, and by any replay that looked at it here and left it in the queue. No delivery limit applies in the dead-letter queue.`;
}
