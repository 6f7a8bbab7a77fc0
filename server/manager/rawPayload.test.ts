// A plain Resubmit of an event whose payload did not parse. The Resolver keeps such an EventJson (malformed, or nested
// too deep) as raw text on the row so an operator can repair it, and records the problem on the request's history
// entry (resolver-worker/project.ts). Sent as is, that text went out as a JSON string and the handler received a
// string instead of the object: the Manager now refuses it (409, "resubmit it with an edited payload"), alone and in a
// bulk lot, while a payload that parsed to a string is still resubmitted. The rows are written by the real Resolver
// from messages on the emulator; the Manager sends on the same emulator and reads the same Cosmos store.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { decodeBody, encodeBody, MessageType as T, parseEventPayload, Prop } from '@nimbus/sdk/contract';
import { ResolverHarness, eventually } from '../../resolver-worker/testHarness.ts';
import { HttpError } from '../http.ts';
import { drainSession, jsonBody } from '../testing/sessionWire.ts';
import { Manager } from './manager.ts';

const EP = 'crm';
let h: ResolverHarness;
let manager: Manager;
before(async () => {
  h = await ResolverHarness.start();
  h.resolver();
  manager = new Manager({ store: h.store, client: h.clients.client });
});
after(async () => {
  await manager?.close();
  await h?.close();
});

const settled = (messageId: string) => eventually(() => (h.settled.some((s) => s.messageId === messageId && s.ok) ? true : undefined), `settlement of ${messageId}`);

/** An event whose request carried `eventJson`, failed by the subscriber as it fails a payload it cannot parse. */
async function failedEvent(eventJson: string): Promise<{ eventId: string; sessionId: string }> {
  const eventId = `e-${randomUUID().slice(0, 8)}`;
  const sessionId = `s-${randomUUID().slice(0, 8)}`;
  const req = await h.send({ type: T.EventRequest, eventId, sessionId, to: EP, from: 'shop', body: encodeBody({ EventContent: { EventTypeId: 'OrderPlaced', EventJson: eventJson } }) });
  await settled(req.messageId);
  const dl = await h.send({
    type: T.ErrorResponse,
    eventId,
    sessionId,
    from: EP,
    to: 'Resolver',
    parentMessageId: req.messageId,
    props: { [Prop.DeadLetterReason]: 'Failed to handle message.', [Prop.DeadLetterErrorDescription]: 'the event payload (EventJson) is not valid JSON' },
  });
  await settled(dl.messageId);
  return { eventId, sessionId };
}

/** The payloads of the commands that reached the session, as the subscriber parses them. */
async function resubmittedPayloads(sessionId: string): Promise<unknown[]> {
  const got = await drainSession(h.clients.client, EP, sessionId);
  return got.map((m) => {
    const content = decodeBody(JSON.stringify(jsonBody(m))).content;
    const parsed = parseEventPayload(content.EventContent?.EventJson);
    assert.ok(parsed.ok, 'the subscriber parses the resubmitted payload');
    return parsed.value;
  });
}

const refusedForRawText = (e: unknown) => e instanceof HttpError && e.status === 409 && /did not parse/.test(e.detail) && /resubmit it with an edited payload/.test(e.detail);

describe('resubmitting a payload kept as raw text', () => {
  test('a plain resubmit is refused with 409 and nothing is claimed or sent; an edited one goes', async () => {
    const { eventId, sessionId } = await failedEvent('{"orderId": "A-1", "amount": 10,');
    const row = await h.store.getStatusRow(EP, eventId, sessionId);
    assert.deepEqual([row?.status, typeof row?.payload], ['DeadLettered', 'string'], 'precondition: the raw text is the stored payload');
    // Before, this sent the raw text and the subscriber handed the handler the string '{"orderId": "A-1", "amount": 10,'.
    await assert.rejects(manager.execute(EP, eventId, { kind: 'resubmit' }, 'bob'), refusedForRawText);
    const after = await h.store.getStatusRow(EP, eventId, sessionId);
    assert.equal(after?.lastMessageId, row?.lastMessageId, 'no claim');
    const sent = await manager.execute(EP, eventId, { kind: 'resubmit', edited: { payload: { orderId: 'A-1', amount: 10 } } }, 'bob');
    assert.equal(sent.outcome, 'sent');
    assert.deepEqual(await resubmittedPayloads(sessionId), [{ orderId: 'A-1', amount: 10 }], 'only the edited resubmission went out');
  });

  test('a payload that parsed to a string is the event, and is resubmitted as it is', async () => {
    const { eventId, sessionId } = await failedEvent('"a plain string event"');
    assert.equal((await h.store.getStatusRow(EP, eventId, sessionId))?.payload, 'a plain string event');
    const sent = await manager.execute(EP, eventId, { kind: 'resubmit' }, 'bob');
    assert.equal(sent.outcome, 'sent');
    assert.deepEqual(await resubmittedPayloads(sessionId), ['a plain string event']);
  });

  test('in a bulk lot the raw-text event is refused with the reason while the others are sent', async () => {
    const raw = await failedEvent('{"orderId": "B-1",');
    const fine = await failedEvent('{"orderId": "B-2"}');
    const results = await manager.executeMany(
      [raw, fine].map((e) => ({ endpointId: EP, eventId: e.eventId, sessionId: e.sessionId, rows: 1 })),
      { kind: 'resubmit' },
      'bob',
    );
    assert.equal(results[0]!.ok, false);
    assert.ok(!results[0]!.ok && refusedForRawText(results[0]!.error), 'refused with 409 and the reason');
    assert.ok(results[1]!.ok && results[1]!.value.outcome === 'sent');
    assert.deepEqual(await resubmittedPayloads(raw.sessionId), [], 'nothing sent for the raw text');
    assert.deepEqual(await resubmittedPayloads(fine.sessionId), [{ orderId: 'B-2' }]);
  });
});
