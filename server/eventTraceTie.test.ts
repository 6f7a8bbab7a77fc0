// The event page's trace link on the embedded Cosmos store, when the request and its answer were stamped the same
// instant by the broker and recorded the same instant by the Resolver: the store lists history by enqueuedAt alone,
// and the page took the last traced entry of that list, so the link named whichever the database kept last (the
// request when the answer was written first). Now the answer, after the message it answers (server/historyOrder.ts).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T } from '@nimbus/sdk/contract';
import { msg, startStoreFixture, type StoreFixture } from '../lib/store/testing/fixtures.ts';
import { eventDetails } from './queries.ts';

const EP = 'billingendpoint';
const INSTANT = '2026-12-01T09:00:00.000Z';
const REQUEST_TRACE = 'a'.repeat(32);
const ANSWER_TRACE = 'b'.repeat(32);
let f: StoreFixture;
before(async () => {
  // One instant for every write: the entries' recordedAt tie too, as for a batch the Resolver records at once.
  f = await startStoreFixture({ now: () => new Date(INSTANT) });
});
after(async () => {
  await f.close();
});

/** A request and the error answering it, both enqueued at INSTANT, written to the store in `order`. */
async function failAtOneInstant(eventId: string, order: 'answer first' | 'request first'): Promise<void> {
  // Message ids that sort the wrong way round, so neither the id nor the write order can pass for the rule.
  const request = msg(T.EventRequest, { endpointId: EP, eventId, messageId: `z-request-${eventId}`, enqueuedAt: INSTANT, payload: { n: 1 } });
  const answer = msg(T.ErrorResponse, { endpointId: EP, eventId, messageId: `a-answer-${eventId}`, parentMessageId: request.messageId, enqueuedAt: INSTANT, errorText: 'boom' });
  const traced = (m: typeof request, traceId: string) => ({ history: { ...m, traceId } as never, status: m });
  const writes = [traced(request, REQUEST_TRACE), traced(answer, ANSWER_TRACE)];
  for (const w of order === 'answer first' ? writes.reverse() : writes) await f.store.recordOutcome(w);
}

test('the latest traced message of two stamped the same instant is the answer, whichever was written first', async () => {
  for (const order of ['answer first', 'request first'] as const) {
    const eventId = `evt-tie-${order.replace(' ', '-')}`;
    await failAtOneInstant(eventId, order);
    const view = await eventDetails(f.store, EP, eventId);
    assert.deepEqual(view.history.map((h) => h.messageType), [T.EventRequest, T.ErrorResponse], `${order}: the request, then its answer`);
    assert.equal(view.trace?.traceId, ANSWER_TRACE, `${order}: the trace of the answer`);
  }
});
