// store.listHistoryAfter on the embedded Cosmos server: one endpoint's session, strictly after a time, whose outcome
// is one of the statuses asked for, newest first and at most the limit - the query Reconcile uses for a response
// that settled an event after a row's message on a history longer than its cap (server/reconcile/answers.ts).
// Subscriber notices are no outcome and never fill the limit; an entry of any type that a non-blank dead-letter
// description made DeadLettered is found, one with a blank description is not. Bad input is refused.
// Beside it, store.listSessionResponses (the Resolver's restore after a refusal): the session's responses newest
// first, requests and subscriber notices left out by the query, so newer ones never fill its limit.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T } from '@nimbus/sdk/contract';
import { StoreInputError } from './errors.ts';
import { at, msg, startStoreFixture, uniq, type StoreFixture } from './testing/fixtures.ts';

let f: StoreFixture;
before(async () => {
  f = await startStoreFixture();
});
after(async () => {
  await f?.close();
});

const EP = 'billingendpoint';

test('only the session\'s entries after the time, with the outcomes asked for, newest first, at most the limit', async () => {
  const eventId = uniq('after');
  const entry = async (messageType: T, s: number, over: { sessionId?: string; endpointId?: string } = {}) => {
    const m = { ...msg(messageType, { endpointId: EP, eventId, ...over }), enqueuedAt: at(s) };
    await f.store.recordHistory(m);
    return m.messageId;
  };
  await entry(T.ResolutionResponse, 9); // before
  await entry(T.ResolutionResponse, 10); // at the time: not after it
  const failed = await entry(T.ErrorResponse, 11);
  await entry(T.DeferralResponse, 12); // an outcome not asked for
  await entry(T.ResolutionResponse, 13, { sessionId: 's-other' });
  await entry(T.ResolutionResponse, 14, { endpointId: 'shippingendpoint' });
  const completed = await entry(T.ResolutionResponse, 15);
  const skipped = await entry(T.SkipResponse, 16);

  const statuses = ['Completed', 'Failed', 'Skipped'] as const;
  const all = await f.store.listHistoryAfter(eventId, EP, 's-1', at(10), statuses, 10);
  assert.deepEqual(all.items.map((h) => h.messageId), [skipped, completed, failed]);
  assert.deepEqual(all.corrupt, []);
  const newest = await f.store.listHistoryAfter(eventId, EP, 's-1', at(10), statuses, 2);
  assert.deepEqual(newest.items.map((h) => h.messageId), [skipped, completed]);
});

test('newer subscriber notices do not fill the limit: the response behind eleven of them is found', async () => {
  const eventId = uniq('after-notices');
  const completed = { ...msg(T.ResolutionResponse, { endpointId: EP, eventId }), enqueuedAt: at(11) };
  await f.store.recordHistory(completed);
  for (let i = 0; i < 11; i++) {
    const reason = i % 2 === 0 ? 'CommandRefused' : 'ReplayGap';
    await f.store.recordHistory({ ...msg(T.ErrorResponse, { endpointId: EP, eventId, parentMessageId: uniq('other'), deadLetterReason: reason, deadLetterErrorDescription: 'a notice' }), enqueuedAt: at(12 + i) });
  }
  const found = await f.store.listHistoryAfter(eventId, EP, 's-1', at(10), ['Completed', 'Failed', 'DeadLettered'], 10);
  assert.deepEqual(found.items.map((h) => h.messageId), [completed.messageId]);
});

test('newer history-only entries do not fill the limit either: dead-lettered deferred-processor triggers are no outcome', async () => {
  const eventId = uniq('after-triggers');
  const completed = { ...msg(T.ResolutionResponse, { endpointId: EP, eventId }), enqueuedAt: at(11) };
  await f.store.recordHistory(completed);
  // The Resolver keeps these in history only (isHistoryOnly) and never writes the row from them, though their
  // dead-letter description makes them DeadLettered to resultingStatus.
  for (let i = 0; i < 11; i++)
    await f.store.recordHistory({ ...msg(T.ProcessDeferredRequest, { endpointId: EP, eventId, deadLetterReason: 'MaxDeliveryCountExceeded', deadLetterErrorDescription: 'gave up' }), enqueuedAt: at(12 + i) });
  const found = await f.store.listHistoryAfter(eventId, EP, 's-1', at(10), ['Completed', 'Failed', 'DeadLettered'], 10);
  assert.deepEqual(found.items.map((h) => h.messageId), [completed.messageId]);
});

test('an entry of any type that a non-blank dead-letter description made DeadLettered is found; a blank description settles nothing', async () => {
  const eventId = uniq('after-dl');
  const dead = { ...msg(T.EventRequest, { endpointId: EP, eventId, deadLetterReason: 'MaxDeliveryCountExceeded', deadLetterErrorDescription: 'Delivery 10 of 10 ended transient: boom' }), enqueuedAt: at(11) };
  await f.store.recordHistory(dead);
  // Newer, more than the limit: requests whose description is blank (whitespace JavaScript's trim removes) are Pending.
  for (const [i, blank] of [' ', '\t\n', '\u00a0', '\ufeff', '\u2003'].entries()) {
    await f.store.recordHistory({ ...msg(T.EventRequest, { endpointId: EP, eventId, deadLetterErrorDescription: blank }), enqueuedAt: at(12 + i) });
  }
  const found = await f.store.listHistoryAfter(eventId, EP, 's-1', at(10), ['DeadLettered'], 2);
  assert.deepEqual(found.items.map((h) => h.messageId), [dead.messageId]);
  // A response type with a description is DeadLettered, not its type's outcome.
  const failedDl = { ...msg(T.ErrorResponse, { endpointId: EP, eventId, deadLetterErrorDescription: 'gave up' }), enqueuedAt: at(20) };
  await f.store.recordHistory(failedDl);
  assert.deepEqual((await f.store.listHistoryAfter(eventId, EP, 's-1', at(10), ['Failed'], 10)).items, []);
  assert.deepEqual((await f.store.listHistoryAfter(eventId, EP, 's-1', at(10), ['DeadLettered'], 10)).items.map((h) => h.messageId), [failedDl.messageId, dead.messageId]);
});

test('listSessionResponses: the session\'s outcomes newest first, a handoff park and a dead-lettered request among them; other requests and notices never fill the limit', async () => {
  const eventId = uniq('responses');
  const entry = async (messageType: T, s: number, over: Partial<Parameters<typeof msg>[1]> = {}) => {
    const m = { ...msg(messageType, { endpointId: EP, eventId, ...over }), enqueuedAt: at(s) };
    await f.store.recordHistory(m);
    return m.messageId;
  };
  const failed = await entry(T.ErrorResponse, 1);
  const park = await entry(T.PendingHandoffResponse, 2);
  await entry(T.ResolutionResponse, 3, { sessionId: 's-other' });
  await entry(T.ResolutionResponse, 4, { endpointId: 'shippingendpoint' });
  // A dead-lettered request is an outcome (the Resolver wrote the row DeadLettered from it); one whose description
  // is blank is not (the contract trims it): a plain request to the store.
  const dead = await entry(T.EventRequest, 5, { deadLetterReason: 'MaxDeliveryCountExceeded', deadLetterErrorDescription: 'gave up' });
  // Newer than those, more than the limit: a request, a blank-described one, a command, notices of both kinds.
  await entry(T.EventRequest, 6);
  await entry(T.EventRequest, 7, { deadLetterReason: 'MaxDeliveryCountExceeded', deadLetterErrorDescription: ' \t ' });
  await entry(T.HandoffCompletedRequest, 8, { from: 'Manager' });
  await entry(T.ErrorResponse, 9, { deadLetterReason: 'CommandRefused', deadLetterErrorDescription: 'refused' });
  await entry(T.ErrorResponse, 10, { deadLetterReason: 'ReplayGap', deadLetterErrorDescription: 'gap' });
  const newest = await f.store.listSessionResponses(eventId, EP, 's-1', 1);
  assert.deepEqual([newest.items.map((h) => h.messageId), newest.corrupt], [[dead], []]);
  assert.deepEqual((await f.store.listSessionResponses(eventId, EP, 's-1', 5)).items.map((h) => h.messageId), [dead, park, failed]);
});

test('bad input is a StoreInputError with what was wrong', async () => {
  await assert.rejects(f.store.listHistoryAfter('e', EP, 's-1', 'yesterday', ['Completed']), (e: unknown) => e instanceof StoreInputError && /invalid after/.test(e.message));
  await assert.rejects(f.store.listHistoryAfter('e', EP, 's-1', at(0), []), (e: unknown) => e instanceof StoreInputError && /invalid statuses/.test(e.message));
  await assert.rejects(f.store.listHistoryAfter('e', EP, 's-1', at(0), ['ResolutionResponse'] as never), (e: unknown) => e instanceof StoreInputError && /invalid statuses/.test(e.message));
});
