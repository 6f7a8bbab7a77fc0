// What a publish record found says to a request (publishRecords.ts `decide`): pure, no store. The record on the
// real store and routes: publishOnce.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decide, IN_FLIGHT_RETRY_AFTER_S, PUBLISH_IN_FLIGHT_MS, PUBLISH_RECORD_TTL_MS, type PublishRecord } from './publishRecords.ts';

const NOW = Date.parse('2026-12-07T10:00:00.000Z');
const key = { endpointId: 'storefrontendpoint', messageId: 'OrderPlaced-1', principalId: 'user:a', requestedSessionId: null };
const answer = { endpointId: 'storefrontendpoint', eventTypeId: 'OrderPlaced', messageId: 'OrderPlaced-1', sessionId: 'ORD-1', correlationId: 'c-1' };
const record = (over: Partial<PublishRecord>, startedAgoMs = 1000): PublishRecord => ({
  id: 'x',
  endpointId: key.endpointId,
  messageId: key.messageId,
  state: 'sent',
  principalId: key.principalId,
  requestedSessionId: null,
  startedAt: new Date(NOW - startedAgoMs).toISOString(),
  sentAt: new Date(NOW - startedAgoMs + 10).toISOString(),
  answer,
  expiresAt: new Date(NOW - startedAgoMs + PUBLISH_RECORD_TTL_MS).toISOString(),
  ...over,
});

test('a publish record decides: replay its own sent answer, 409 while in flight, refuse another principal or session, take it when absent, expired or stale', () => {
  assert.equal(decide(null, key, NOW), 'take');
  assert.deepEqual(decide(record({}), key, NOW), { kind: 'replay', answer });
  assert.equal(decide(record({}, PUBLISH_RECORD_TTL_MS), key, NOW), 'take', 'expired: a new publish');
  const sending = { state: 'sending' as const, sentAt: null, answer: null };
  assert.deepEqual(decide(record(sending), key, NOW), { kind: 'inFlight', startedAt: new Date(NOW - 1000).toISOString(), retryAfterSeconds: IN_FLIGHT_RETRY_AFTER_S });
  assert.deepEqual(decide(record(sending, PUBLISH_IN_FLIGHT_MS - 1500), key, NOW), { kind: 'inFlight', startedAt: new Date(NOW - PUBLISH_IN_FLIGHT_MS + 1500).toISOString(), retryAfterSeconds: 2 }, 'no later than the bound');
  assert.equal(decide(record(sending, PUBLISH_IN_FLIGHT_MS), key, NOW), 'take', 'stale: the sender died mid-send');
  assert.equal(decide(record({ ...sending, startedAt: 'garbled' }), key, NOW), 'take');
  assert.deepEqual(decide(record({ principalId: 'user:b' }), key, NOW), { kind: 'anotherPrincipal', at: new Date(NOW - 990).toISOString() });
  assert.equal((decide(record({ ...sending, principalId: 'user:b' }), key, NOW) as { kind: string }).kind, 'inFlight', 'in flight, whoever sends it');
  assert.deepEqual(decide(record({}), { ...key, requestedSessionId: 'S2' }, NOW), { kind: 'anotherSession', sessionId: 'ORD-1', at: new Date(NOW - 990).toISOString() });
});
