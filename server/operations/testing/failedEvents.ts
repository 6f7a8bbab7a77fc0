// Failed events for the bulk-operation tests that run jobs on the embedded stack (resume.test.ts, authority.test.ts):
// recorded as the Resolver records them, so a job's selection, claims and receipts meet the rows production writes.
import { MessageType as T } from '@nimbus/sdk/contract';
import type { MessageStore } from '../../../lib/store/index.ts';
import { msg } from '../../../lib/store/testing/fixtures.ts';

/**
 * `n` Failed events `prefix-i` on `endpointId`, each in its own session `S-prefix-i`: the request with a payload,
 * then its error, each as its history entry and the status it leads to. Returns their ids in order.
 */
export async function seedFailedEvents(store: MessageStore, endpointId: string, prefix: string, n: number): Promise<string[]> {
  const ids = Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
  for (const [i, eventId] of ids.entries()) {
    const request = msg(T.EventRequest, { endpointId, eventId, sessionId: `S-${prefix}-${i}`, eventTypeId: 'OrderPlaced', payload: { i } });
    const error = msg(T.ErrorResponse, { endpointId, eventId, sessionId: `S-${prefix}-${i}`, parentMessageId: request.messageId, errorType: 'E', errorText: `boom ${i}` });
    for (const m of [request, error]) await store.recordOutcome({ history: { ...m, enqueuedAt: new Date().toISOString() } as never, status: m });
  }
  return ids;
}
