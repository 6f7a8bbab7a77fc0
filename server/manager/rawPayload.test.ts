// A plain Resubmit of an event whose payload did not parse. The Resolver keeps such an EventJson (malformed, or nested
// too deep) as raw text on the row so an operator can repair it, and records the problem on the request's history
// entry (resolver-worker/project.ts). Sent as is, that text went out as a JSON string and the handler received a
// string instead of the object: the Manager now refuses it (409, "resubmit it with an edited payload"), alone and in a
// bulk lot, while a payload that parsed to a string is still resubmitted. The rows are written by the real Resolver
// from messages on the emulator; the Manager sends on the same emulator and reads the same Cosmos store.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { decodeBody, encodeBody, eventBody, MessageType as T, parseEventPayload, Prop } from '@nimbus/sdk/contract';
import { ResolverHarness, eventually } from '../../resolver-worker/testHarness.ts';
import { HttpError } from '../http.ts';
import { drainSession, jsonBody } from '../testing/sessionWire.ts';
import { commandMessageId } from './commands.ts';
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

/** A Manager command's copy as the Resolver topic gets it (From = Manager), recorded; `messageId` as the Manager derives it. */
async function commandCopy(type: string, eventId: string, sessionId: string, parentMessageId: string, body?: string): Promise<string> {
  const row = await h.store.getStatusRow(EP, eventId, sessionId);
  assert.ok(row);
  const messageId = commandMessageId(type as never, row, parentMessageId);
  await h.send({ type, messageId, eventId, sessionId, to: EP, from: 'Manager', parentMessageId, ...(body !== undefined ? { body } : {}) });
  await settled(messageId);
  return messageId;
}

/** The subscriber's answer to `parentMessageId`: a failure, or (refused) a CommandRefused notice. */
async function answer(eventId: string, sessionId: string, parentMessageId: string, refused = false): Promise<string> {
  const sent = await h.send({
    type: T.ErrorResponse,
    eventId,
    sessionId,
    from: EP,
    to: 'Resolver',
    parentMessageId,
    ...(refused ? { props: { [Prop.DeadLetterReason]: 'CommandRefused', [Prop.DeadLetterErrorDescription]: 'refused' } } : { body: encodeBody({ EventContent: null, ErrorContent: { ErrorText: 'boom', ErrorType: 'Error' } }) }),
  });
  await settled(sent.messageId);
  return sent.messageId;
}

describe('the raw-text marker survives rewrites of the row that keep the raw payload', () => {
  test('a plain resubmit sent before the refusal existed (the raw text carried on under its own id): refused, alone and in a bulk lot', async () => {
    const raw = '{"orderId": "C-1",';
    const { eventId, sessionId } = await failedEvent(raw);
    const failure = (await h.store.getStatusRow(EP, eventId, sessionId))!.lastMessageId;
    // What the Manager sent before 32d5218: the raw text as the payload, JSON-encoded as a string, which parses.
    const resubmission = await commandCopy(T.ResubmissionRequest, eventId, sessionId, failure, eventBody('OrderPlaced', raw));
    await answer(eventId, sessionId, resubmission);
    const row = await h.store.getStatusRow(EP, eventId, sessionId);
    assert.deepEqual([row?.status, row?.payload, row?.requestMessageId], ['Failed', raw, resubmission], 'precondition: the raw text, written by the resubmission');
    // Before, the resubmission's entry (no marker) was all that was asked: the raw text went out again.
    await assert.rejects(manager.execute(EP, eventId, { kind: 'resubmit' }, 'bob'), refusedForRawText);
    const [bulk] = await manager.executeMany([{ endpointId: EP, eventId, sessionId, rows: 1 }], { kind: 'resubmit' }, 'bob');
    assert.ok(!bulk!.ok && refusedForRawText(bulk!.error), 'the bulk lot refuses it too');
    assert.deepEqual(await resubmittedPayloads(sessionId), [], 'nothing sent');
  });

  test('a refused skip and a refused plain resubmit put the row back with the marker still found', async () => {
    const raw = '{"orderId": "C-2",';
    const { eventId, sessionId } = await failedEvent(raw);
    const failure = (await h.store.getStatusRow(EP, eventId, sessionId))!.lastMessageId;
    const skip = await commandCopy(T.SkipRequest, eventId, sessionId, failure);
    const notice = await answer(eventId, sessionId, skip, true);
    assert.equal((await h.store.getStatusRow(EP, eventId, sessionId))?.lastMessageId, notice, 'precondition: put back after the skip');
    await assert.rejects(manager.execute(EP, eventId, { kind: 'resubmit' }, 'bob'), refusedForRawText);
    const resubmission = await commandCopy(T.ResubmissionRequest, eventId, sessionId, notice, eventBody('OrderPlaced', raw));
    await answer(eventId, sessionId, resubmission, true);
    const row = await h.store.getStatusRow(EP, eventId, sessionId);
    assert.deepEqual([row?.status, row?.payload], ['DeadLettered', raw], 'precondition: put back after the resubmission');
    await assert.rejects(manager.execute(EP, eventId, { kind: 'resubmit' }, 'bob'), refusedForRawText);
    assert.deepEqual(await resubmittedPayloads(sessionId), [], 'nothing sent');
  });
});

describe("a handoff settlement's content stored as the event's payload by an older Resolver", () => {
  /** A handoff park on a request carrying `payload`, its completion (content `content`) refused and the row put back. */
  async function refusedCompletion(payload: unknown, content: unknown): Promise<{ eventId: string; sessionId: string; requestId: string; completion: string }> {
    const eventId = `e-${randomUUID().slice(0, 8)}`;
    const sessionId = `s-${randomUUID().slice(0, 8)}`;
    const req = await h.send({ type: T.EventRequest, eventId, sessionId, to: EP, from: 'shop', body: eventBody('OrderPlaced', payload) });
    await settled(req.messageId);
    const park = await h.send({ type: T.PendingHandoffResponse, eventId, sessionId, from: EP, to: 'Resolver', parentMessageId: req.messageId, props: { [Prop.HandoffReason]: 'DMF import' } });
    await settled(park.messageId);
    const completion = await commandCopy(T.HandoffCompletedRequest, eventId, sessionId, park.messageId, encodeBody({ EventContent: { EventTypeId: 'OrderPlaced', EventJson: JSON.stringify(content) } }));
    await answer(eventId, sessionId, completion, true);
    return { eventId, sessionId, requestId: req.messageId, completion };
  }

  test('a plain resubmit is refused (409, resubmit with the original payload); nothing is sent', async () => {
    const note = { note: 'imported by hand', completedBy: 'alice' };
    const { eventId, sessionId, completion } = await refusedCompletion({ orderId: 'H-1' }, note);
    // The row as a Resolver before fc42eea left it: the completion's content as the payload, the completion its request.
    const row = (await h.store.getStatusRow(EP, eventId, sessionId))!;
    assert.equal(row.subStatus, 'Handoff', 'precondition: back on the handoff park');
    const restored = await h.store.restoreStatusRow({ ...row, payload: note, requestMessageId: completion }, { lastMessageId: row.lastMessageId });
    assert.equal(restored.outcome, 'written');
    // Before, the note went to the handler as the event.
    await assert.rejects(
      manager.execute(EP, eventId, { kind: 'resubmit' }, 'bob'),
      (e: unknown) => e instanceof HttpError && e.status === 409 && /handoff settlement/.test(e.detail) && /original payload/.test(e.detail),
    );
    assert.deepEqual(await resubmittedPayloads(sessionId), [], 'nothing sent');
    const sent = await manager.execute(EP, eventId, { kind: 'resubmit', edited: { payload: { orderId: 'H-1' } } }, 'bob');
    assert.equal(sent.outcome, 'sent', 'an edited resubmit goes');
    assert.deepEqual(await resubmittedPayloads(sessionId), [{ orderId: 'H-1' }]);
  });

  test('the same shape sent by the publisher is the event: resubmitted as it is', async () => {
    const looksLikeANote = { note: 'imported by hand', completedBy: 'alice' };
    const { eventId, sessionId } = await refusedCompletion(looksLikeANote, { note: 'other' });
    const row = await h.store.getStatusRow(EP, eventId, sessionId);
    assert.deepEqual(row?.payload, looksLikeANote, "precondition: the publisher's payload");
    assert.equal((await manager.execute(EP, eventId, { kind: 'resubmit' }, 'bob')).outcome, 'sent');
    assert.deepEqual(await resubmittedPayloads(sessionId), [looksLikeANote]);
  });
});
