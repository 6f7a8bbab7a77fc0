// store.listHistoryAfter on the embedded Cosmos server: one endpoint's session, strictly after a time, of the types
// asked for, newest first and at most the limit - the query Reconcile uses for a response that settled an event
// after a row's message on a history longer than its cap (server/reconcile/answers.ts). Bad input is refused.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T } from '@nimbus/sdk/contract';
import { StoreInputError } from './errors.ts';
import { msg, startStoreFixture, uniq, type StoreFixture } from './testing/fixtures.ts';

let f: StoreFixture;
before(async () => {
  f = await startStoreFixture();
});
after(async () => {
  await f?.close();
});

const EP = 'billingendpoint';
const at = (s: number) => new Date(Date.parse('2026-12-01T09:00:00.000Z') + s * 1000).toISOString();

test('only the session\'s entries after the time, of the types asked for, newest first, at most the limit', async () => {
  const eventId = uniq('after');
  const entry = async (messageType: T, s: number, over: { sessionId?: string; endpointId?: string } = {}) => {
    const m = { ...msg(messageType, { endpointId: EP, eventId, ...over }), enqueuedAt: at(s) };
    await f.store.recordHistory(m);
    return m.messageId;
  };
  await entry(T.ResolutionResponse, 9); // before
  await entry(T.ResolutionResponse, 10); // at the time: not after it
  const failed = await entry(T.ErrorResponse, 11);
  await entry(T.DeferralResponse, 12); // a type not asked for
  await entry(T.ResolutionResponse, 13, { sessionId: 's-other' });
  await entry(T.ResolutionResponse, 14, { endpointId: 'shippingendpoint' });
  const completed = await entry(T.ResolutionResponse, 15);
  const skipped = await entry(T.SkipResponse, 16);

  const types = [T.ResolutionResponse, T.ErrorResponse, T.SkipResponse];
  const all = await f.store.listHistoryAfter(eventId, EP, 's-1', at(10), types, 10);
  assert.deepEqual(all.items.map((h) => h.messageId), [skipped, completed, failed]);
  assert.deepEqual(all.corrupt, []);
  const newest = await f.store.listHistoryAfter(eventId, EP, 's-1', at(10), types, 2);
  assert.deepEqual(newest.items.map((h) => h.messageId), [skipped, completed]);
});

test('bad input is a StoreInputError with what was wrong', async () => {
  await assert.rejects(f.store.listHistoryAfter('e', EP, 's-1', 'yesterday', [T.ResolutionResponse]), (e: unknown) => e instanceof StoreInputError && /invalid after/.test(e.message));
  await assert.rejects(f.store.listHistoryAfter('e', EP, 's-1', at(0), []), (e: unknown) => e instanceof StoreInputError && /invalid message types/.test(e.message));
  await assert.rejects(f.store.listHistoryAfter('e', EP, 's-1', at(0), ['NoSuchType']), (e: unknown) => e instanceof StoreInputError && /invalid message types/.test(e.message));
});
