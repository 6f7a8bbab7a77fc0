// Session operations on $management belong to the session's receiver: renew-session-lock, get-session-state
// and set-session-state, and receive-by-sequence-number and update-disposition with a session-id, succeed for
// the receiver link holding the session lock and are refused with com.microsoft:session-lock-lost (the client's
// SessionLockLost) for any other receiver, on this connection or another, and after the lock was released or
// expired - as Azure answers them.
//
// The client's public API sends these requests only for the receiver's own session, naming its own link in
// `associated-link-name`. To send what another receiver would, the tests call the client's own management
// client (the one ServiceBusSessionReceiver.renewSessionLock() calls; internal to @azure/service-bus 7.x) with
// another session id or link name: the framing and the error mapping are still the client's.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type {
  ServiceBusMessage,
  ServiceBusReceivedMessage,
  ServiceBusSessionReceiver,
} from '@azure/service-bus';
import type Long from 'long';
import {
  assertServiceBusError,
  createTopicWithSubscriptions,
  receiveUntil,
  uniqueName,
  useHarness,
  waitFor,
} from './helpers.ts';

const h = useHarness();

interface RequestOptions {
  associatedLinkName?: string;
  timeoutInMs?: number;
}

/** What ServiceBusSessionReceiver calls for its session operations (@azure/service-bus 7.x internals). */
interface ManagementClient {
  renewSessionLock(sessionId: string, options: RequestOptions): Promise<Date>;
  getSessionState(sessionId: string, options: RequestOptions): Promise<unknown>;
  setSessionState(sessionId: string, state: unknown, options: RequestOptions): Promise<void>;
  /** What receiveDeferredMessages() sends (session-id and the session link's name). */
  receiveDeferredMessages(
    sequenceNumbers: Long[],
    receiveMode: 'peekLock',
    sessionId: string,
    options: RequestOptions,
  ): Promise<ServiceBusReceivedMessage[]>;
  /** What settling a message received from $management sends (session-id, and no link name). */
  updateDispositionStatus(
    lockToken: string,
    dispositionType: 'complete',
    options: RequestOptions & { sessionId?: string },
  ): Promise<void>;
}

interface SessionReceiverInternals {
  entityPath: string;
  _messageSession: { name: string };
  _context: { getManagementClient(entityPath: string): ManagementClient };
}

/** The receiver's link name and its connection's management client for its entity. */
function internalsOf(receiver: ServiceBusSessionReceiver): {
  linkName: string;
  management: ManagementClient;
} {
  const r = receiver as unknown as SessionReceiverInternals;
  assert.equal(typeof r._messageSession?.name, 'string', 'the client keeps its session link name');
  return { linkName: r._messageSession.name, management: r._context.getManagementClient(r.entityPath) };
}

/** A management request's options as a receiver's client sends them, naming `linkName` (if any). */
function asLink(linkName: string | undefined): RequestOptions {
  return { associatedLinkName: linkName, timeoutInMs: 5_000 };
}

/** All three operations on `sessionId`, sent as `from`'s connection sends them (naming `linkName`, if any). */
async function assertAllRefused(
  from: ServiceBusSessionReceiver,
  sessionId: string,
  linkName: string | undefined,
): Promise<void> {
  const { management } = internalsOf(from);
  const options = asLink(linkName);
  await assertServiceBusError(() => management.renewSessionLock(sessionId, options), 'SessionLockLost');
  await assertServiceBusError(() => management.getSessionState(sessionId, options), 'SessionLockLost');
  await assertServiceBusError(
    () => management.setSessionState(sessionId, Buffer.from('stolen'), options),
    'SessionLockLost',
  );
}

/** receive-by-sequence-number and update-disposition for `sessionId`, sent as `from`'s connection sends them. */
async function assertDeferredRefused(
  from: ServiceBusSessionReceiver,
  sessionId: string,
  linkName: string | undefined,
  deferred: { sequenceNumber: Long; lockToken: string },
): Promise<void> {
  const { management } = internalsOf(from);
  const options = asLink(linkName);
  await assertServiceBusError(
    () => management.receiveDeferredMessages([deferred.sequenceNumber], 'peekLock', sessionId, options),
    'SessionLockLost',
  );
  await assertServiceBusError(
    () => management.updateDispositionStatus(deferred.lockToken, 'complete', { ...options, sessionId }),
    'SessionLockLost',
  );
}

/** What the client raises for Azure's internal error (amqp:internal-error, status 500). */
async function assertInternalServerError(action: () => Promise<unknown>): Promise<void> {
  let message = '';
  await assertServiceBusError(async () => {
    try {
      await action();
    } catch (err) {
      message = err instanceof Error ? err.message : String(err);
      throw err;
    }
  }, 'GeneralError');
  assert.match(message, /^InternalServerError: /);
}

/** Sends `messages` to `topic` with a sender of its own. */
async function send(topic: string, messages: ServiceBusMessage[]): Promise<void> {
  const sender = h.client.createSender(topic);
  try {
    await sender.sendMessages(messages);
  } finally {
    await sender.close();
  }
}

/**
 * A session `held` on `topic` whose holder deferred two messages and took the first back from $management
 * (holding its lock): the second is deferred and unlocked, so a receive-by-sequence-number of it would succeed
 * for anyone that may ask.
 */
async function holderWithDeferred(
  topic: string,
  holder: ServiceBusSessionReceiver,
): Promise<{ taken: ServiceBusReceivedMessage; waiting: Long }> {
  await send(topic, [
    { body: 1, messageId: 'd1', sessionId: holder.sessionId },
    { body: 2, messageId: 'd2', sessionId: holder.sessionId },
  ]);
  const got = await receiveUntil(holder, 2);
  assert.equal(got.length, 2);
  for (const m of got) await holder.deferMessage(m);
  const [first, second] = got.map((m) => m.sequenceNumber!);
  const [taken] = await holder.receiveDeferredMessages([first!]);
  assert.ok(taken?.lockToken, 'the deferred message came back locked');
  return { taken, waiting: second! };
}

async function sessionTopic(lockDuration = 'PT30S'): Promise<string> {
  const topic = uniqueName('own');
  await createTopicWithSubscriptions(h.admin, topic, [
    { name: 'sub', options: { requiresSession: true, lockDuration } },
  ]);
  return topic;
}

interface Pair {
  topic: string;
  /** Holds `held`. */
  holder: ServiceBusSessionReceiver;
  /** Holds a session of its own: 'mine' on another connection, 'next-door' on the holder's. */
  other: ServiceBusSessionReceiver;
}

/**
 * Runs `body` with a fresh session topic, a receiver holding session `held` on it, and another receiver with a
 * session of its own, on another connection or on the holder's; closes them after.
 */
async function withPair(
  held: string,
  where: 'another connection' | 'the same connection',
  body: (pair: Pair) => Promise<void>,
): Promise<void> {
  const topic = await sessionTopic();
  const holder = await h.client.acceptSession(topic, 'sub', held);
  const otherClient =
    where === 'another connection' ? h.newClient({ maxRetries: 0, timeoutInMs: 5_000 }) : undefined;
  try {
    const other = await (otherClient ?? h.client).acceptSession(
      topic,
      'sub',
      otherClient ? 'mine' : 'next-door',
    );
    try {
      await body({ topic, holder, other });
    } finally {
      await other.close();
    }
  } finally {
    await otherClient?.close();
    await holder.close();
  }
}

describe('session operations on $management need the session lock', () => {
  test("a session receiver's own renewSessionLock, getSessionState and setSessionState work", async () => {
    const topic = await sessionTopic();
    const r = await h.client.acceptSession(topic, 'sub', 'own');
    try {
      await r.setSessionState(Buffer.from(JSON.stringify({ step: 1 })));
      assert.deepEqual(await r.getSessionState(), { step: 1 });
      const until = await r.renewSessionLock();
      assert.ok(until.getTime() > Date.now(), 'renewed into the future');
      // The same requests without associated-link-name count for the receivers on the request's connection.
      const { management } = internalsOf(r);
      assert.deepEqual(await management.getSessionState('own', {}), { step: 1 });
      await management.renewSessionLock('own', {});
    } finally {
      await r.close();
    }
  });

  test('a receiver on another connection cannot renew, read or write a session someone else holds', async () => {
    await withPair('held', 'another connection', async ({ holder, other }) => {
      await holder.setSessionState(Buffer.from(JSON.stringify({ owner: 'holder' })));
      // Naming its own link, as its client does, and naming none.
      await assertAllRefused(other, 'held', internalsOf(other).linkName);
      await assertAllRefused(other, 'held', undefined);
      // Naming the holder's link from another connection does not borrow it: links are the connection's.
      await assertAllRefused(other, 'held', internalsOf(holder).linkName);
      assert.deepEqual(await holder.getSessionState(), { owner: 'holder' }, 'the state is untouched');
      await holder.renewSessionLock();
    });
  });

  test('another receiver on the same connection is refused when the request names its own link', async () => {
    await withPair('held', 'the same connection', async ({ holder, other: neighbour }) => {
      await assertAllRefused(neighbour, 'held', internalsOf(neighbour).linkName);
      await holder.renewSessionLock();
    });
  });

  test("a session receiver's own receiveDeferredMessages and settling what it returned work", async () => {
    // The client's normal path: receive-by-sequence-number names the session link and the session; settling a
    // message that came from $management goes through update-disposition with the session and no link name
    // (a request naming no link counts for the receivers on its connection).
    const topic = await sessionTopic();
    const r = await h.client.acceptSession(topic, 'sub', 'own-deferred');
    try {
      const { taken, waiting } = await holderWithDeferred(topic, r);
      await r.completeMessage(taken);
      const [again] = await r.receiveDeferredMessages([waiting]);
      assert.ok(again);
      await r.abandonMessage(again);
      // Abandoned, a deferred message stays deferred: taken again, then dead-lettered.
      const [third] = await r.receiveDeferredMessages([waiting]);
      assert.ok(third);
      await r.deadLetterMessage(third, { deadLetterReason: 'test', deadLetterErrorDescription: 'a test' });
      const dlq = h.client.createReceiver(topic, 'sub', { subQueueType: 'deadLetter' });
      try {
        const dead = await dlq.peekMessages(10);
        assert.deepEqual(
          dead.map((m) => m.messageId),
          ['d2'],
        );
      } finally {
        await dlq.close();
      }
      assert.deepEqual(await r.peekMessages(10), [], 'nothing left in the session');
    } finally {
      await r.close();
    }
  });

  test("a receiver on another connection cannot take or settle the deferred messages of someone else's session", async () => {
    await withPair('held-deferred', 'another connection', async ({ topic, holder, other }) => {
      const { taken, waiting } = await holderWithDeferred(topic, holder);
      const deferred = { sequenceNumber: waiting, lockToken: taken.lockToken! };
      // Naming its own link, as its client does, naming none (as settling a deferred message does), and
      // naming the holder's link from another connection.
      await assertDeferredRefused(other, 'held-deferred', internalsOf(other).linkName, deferred);
      await assertDeferredRefused(other, 'held-deferred', undefined, deferred);
      await assertDeferredRefused(other, 'held-deferred', internalsOf(holder).linkName, deferred);
      // Nothing was taken or settled: the holder still completes both.
      await holder.completeMessage(taken);
      const [rest] = await holder.receiveDeferredMessages([waiting]);
      assert.ok(rest, 'the waiting deferred message was not taken');
      await holder.completeMessage(rest);
    });
  });

  test("another receiver on the same connection naming its own link cannot take or settle the session's deferred messages", async () => {
    await withPair('held-deferred', 'the same connection', async ({ topic, holder, other: neighbour }) => {
      const { taken, waiting } = await holderWithDeferred(topic, holder);
      await assertDeferredRefused(neighbour, 'held-deferred', internalsOf(neighbour).linkName, {
        sequenceNumber: waiting,
        lockToken: taken.lockToken!,
      });
      await holder.completeMessage(taken);
    });
  });

  test('update-disposition naming no session, or another session, settles no session message', async () => {
    // The JS client always names the message's session when it settles through $management; a request
    // without session-id on a session entity is what Azure answers with an internal error (status 500,
    // amqp:internal-error: the client's InternalServerError), whoever sends it. The emulator settled the
    // message by its lock token alone before, for any client.
    await withPair('held-token', 'another connection', async ({ topic, holder, other }) => {
      const { taken } = await holderWithDeferred(topic, holder);
      // A message the holder received on its link, besides the one it took from $management.
      await send(topic, [{ body: 3, messageId: 'd3', sessionId: 'held-token' }]);
      const [onLink] = await receiveUntil(holder, 1);
      assert.ok(onLink?.lockToken);
      for (const token of [taken.lockToken!, onLink.lockToken]) {
        /** update-disposition (complete) of `token`, sent as `from` sends it, naming `link` and `sessionId`. */
        const complete = (
          from: ServiceBusSessionReceiver,
          link: 'own link' | 'no link',
          sessionId?: string,
        ) =>
          internalsOf(from).management.updateDispositionStatus(token, 'complete', {
            ...asLink(link === 'own link' ? internalsOf(from).linkName : undefined),
            sessionId,
          });
        // No session-id: from another connection (naming its own link, or none) and from the holder itself.
        await assertInternalServerError(() => complete(other, 'own link'));
        await assertInternalServerError(() => complete(other, 'no link'));
        await assertInternalServerError(() => complete(holder, 'own link'));
        // Naming the session it holds itself does not reach a message of this one.
        await assertServiceBusError(() => complete(other, 'own link', 'mine'), 'MessageLockLost');
      }
      // Nothing was settled: the holder completes both.
      await holder.completeMessage(taken);
      await holder.completeMessage(onLink);
    });
  });

  test('after its receiver closed, the session ops are refused, also once another receiver holds it', async () => {
    const topic = await sessionTopic();
    const first = await h.client.acceptSession(topic, 'sub', 'moved');
    await first.setSessionState(Buffer.from(JSON.stringify({ by: 'first' })));
    const { linkName } = internalsOf(first);
    await first.close();
    // Held by no one.
    await assertAllRefused(first, 'moved', linkName);
    const second = await h.newClient({ maxRetries: 0 }).acceptSession(topic, 'sub', 'moved');
    try {
      // Held by a receiver on another connection: the first receiver's link still does not hold it.
      await assertAllRefused(first, 'moved', linkName);
      assert.deepEqual(await second.getSessionState(), { by: 'first' });
    } finally {
      await second.close();
    }
  });

  test('after the session lock expired and another receiver took the session, the old receiver is refused', async () => {
    const topic = await sessionTopic('PT2S');
    await send(topic, [{ body: 1, messageId: 'x1', sessionId: 'expiring' }]);
    const stale = await h.fastClient.acceptSession(topic, 'sub', 'expiring', {
      maxAutoLockRenewalDurationInMs: 0,
    });
    const [m] = await receiveUntil(stale, 1);
    assert.ok(m);
    const { linkName } = internalsOf(stale);
    // The emulator ends the receiver's link when the lock expires; the client then reports itself closed.
    await waitFor(
      async () => (stale.isClosed ? true : undefined),
      'the expired session receiver to close',
      15_000,
    );
    const fresh = await h.newClient({ maxRetries: 0 }).acceptSession(topic, 'sub', 'expiring');
    try {
      await assertAllRefused(stale, 'expiring', linkName);
      await fresh.renewSessionLock();
    } finally {
      await fresh.close();
      await stale.close().catch(() => undefined);
    }
  });
});
