// Resubmit and Skip pinned to the version the operator saw (CommandSpec.seenMessageId, sent by the event page as
// lastMessageId). Two operators open the same Failed event; A resubmits, and the resubmission fails again under a new
// message; B, on the older view, clicks Resubmit (or Resubmit with changes, or Skip). Before, the Manager claimed
// whatever settleable row it read now: a second resubmission went out (the handler ran twice) and B's edit, made
// against the first failure's payload, replaced A's. Now B gets 409 and nothing is sent; a click on the same view as
// a claim still pending is a repeat of it, as before; a caller that names no version acts on the event as it is now.
// On the real stack: the Manager sends on the emulator and reads the embedded Cosmos store; the Resolver's records of
// the command and of the new failure are written into the store as the Resolver writes them (recordOutcome).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType, Prop } from '@nimbus/sdk/contract';
import type { StatusWrite } from '../../lib/store/index.ts';
import { msg, uniq } from '../../lib/store/testing/fixtures.ts';
import { HttpError } from '../http.ts';
import { drainSession, jsonBody } from '../testing/sessionWire.ts';
import { startConsoleTestStack, type ConsoleTestStack } from '../testing/stack.ts';
import { CHANGED_SINCE_SEEN, Manager } from './manager.ts';

const EP = 'billingendpoint';
let stack: ConsoleTestStack;
let manager: Manager;
before(async () => {
  stack = await startConsoleTestStack(uniq('stale'));
  manager = new Manager({ store: stack.store, client: stack.serviceBus.client });
});
after(async () => {
  await manager?.close();
  await stack?.close();
});

/** One message recorded as the Resolver records it: its history entry and the guarded status write. */
const record = (m: StatusWrite) => stack.store.recordOutcome({ history: { ...m, enqueuedAt: new Date().toISOString() } as never, status: m });

/** A Failed event (its request and the subscriber's failure); returns the failure, the message the page shows. */
async function failedEvent(): Promise<{ eventId: string; sessionId: string; failure: string }> {
  const eventId = uniq('evt-stale');
  const sessionId = uniq('S-stale');
  const request = msg(MessageType.EventRequest, { endpointId: EP, eventId, sessionId, payload: { amount: 10 } });
  const failure = msg(MessageType.ErrorResponse, { endpointId: EP, eventId, sessionId, parentMessageId: request.messageId, errorType: 'E', errorText: 'boom' });
  await record(request);
  await record(failure);
  return { eventId, sessionId, failure: failure.messageId };
}

/** The Resolver records the command `messageId` (answering `parent`) and the subscriber's new failure of it. */
async function failsAgain(eventId: string, sessionId: string, command: string, parent: string): Promise<string> {
  await record(msg(MessageType.ResubmissionRequest, { endpointId: EP, eventId, sessionId, messageId: command, parentMessageId: parent, payload: { amount: 10 }, from: 'Manager' }));
  const again = msg(MessageType.ErrorResponse, { endpointId: EP, eventId, sessionId, parentMessageId: command, errorType: 'E', errorText: 'boom again' });
  await record(again);
  return again.messageId;
}

/** The commands that reached the session, as `type payload`. */
const onTheWire = async (sessionId: string) =>
  (await drainSession(stack.serviceBus.client, EP, sessionId)).map((m) => {
    const body = jsonBody(m) as { EventContent?: { EventJson?: string } | null };
    return `${String(m.applicationProperties?.[Prop.MessageType])} ${body.EventContent?.EventJson ?? ''}`.trim();
  });

const changed = (e: unknown) => e instanceof HttpError && e.status === 409 && e.detail === CHANGED_SINCE_SEEN;

describe('a click on a stale view', () => {
  test('after another operator\'s resubmission failed again, a resubmit, an edited resubmit or a skip made on the older view is 409 and sends nothing', async () => {
    const { eventId, sessionId, failure } = await failedEvent();
    // Both operators see the failure. A resubmits.
    const a = await manager.execute(EP, eventId, { kind: 'resubmit', seenMessageId: failure }, 'alice');
    assert.equal(a.outcome, 'sent');
    const failure2 = await failsAgain(eventId, sessionId, a.messageId, failure);
    // B, still on the first failure.
    await assert.rejects(manager.execute(EP, eventId, { kind: 'resubmit', seenMessageId: failure }, 'bob'), changed);
    await assert.rejects(manager.execute(EP, eventId, { kind: 'resubmit', edited: { payload: { amount: 12 } }, seenMessageId: failure }, 'bob'), changed);
    await assert.rejects(manager.execute(EP, eventId, { kind: 'skip', seenMessageId: failure }, 'bob'), changed);
    const row = await stack.store.getStatusRow(EP, eventId, sessionId);
    assert.deepEqual([row?.status, row?.lastMessageId], ['Failed', failure2], 'nothing claimed');
    assert.deepEqual(await onTheWire(sessionId), ['ResubmissionRequest {"amount":10}'], "A's resubmission only");
    // Reloaded, B sees the new failure and may act on it.
    const b = await manager.execute(EP, eventId, { kind: 'resubmit', edited: { payload: { amount: 12 } }, seenMessageId: failure2 }, 'bob');
    assert.equal(b.outcome, 'sent');
    assert.deepEqual(await onTheWire(sessionId), ['ResubmissionRequest {"amount":12}']);
  });

  test('a click on the same view as a claim still pending is a repeat of that claim, as before', async () => {
    const { eventId, sessionId, failure } = await failedEvent();
    const a = await manager.execute(EP, eventId, { kind: 'resubmit', seenMessageId: failure }, 'alice');
    const b = await manager.execute(EP, eventId, { kind: 'resubmit', seenMessageId: failure }, 'bob');
    assert.deepEqual([b.outcome, b.messageId], ['duplicate', a.messageId]);
    // A skip on that view: the event is no longer the failure the operator saw (the resubmission's claim is).
    await assert.rejects(manager.execute(EP, eventId, { kind: 'skip', seenMessageId: failure }, 'bob'), changed);
    assert.deepEqual(await onTheWire(sessionId), ['ResubmissionRequest {"amount":10}']);
  });

  test('a caller that names no version acts on the event as it is now (API callers without lastMessageId)', async () => {
    const { eventId, sessionId, failure } = await failedEvent();
    const a = await manager.execute(EP, eventId, { kind: 'resubmit' }, 'alice');
    await failsAgain(eventId, sessionId, a.messageId, failure);
    const b = await manager.execute(EP, eventId, { kind: 'skip' }, 'script');
    assert.equal(b.outcome, 'sent');
    assert.deepEqual(await onTheWire(sessionId), ['ResubmissionRequest {"amount":10}', 'SkipRequest']);
  });
});
