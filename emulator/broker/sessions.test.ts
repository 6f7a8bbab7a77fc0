import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { BrokerError } from './api.ts';
import type { Receiver, WireMessage } from './api.ts';
import { brokerWithClock, msg, tick } from './test-helpers.ts';

const src = { topic: 't', subscription: 's' };

async function sessionBroker(lockDurationMs = 10_000) {
  const env = await brokerWithClock();
  env.broker.createTopic({ name: 't' });
  env.broker.createSubscription({
    topicName: 't',
    subscriptionName: 's',
    requiresSession: true,
    lockDurationMs,
  });
  return env;
}

/**
 * A session broker holding `messages`, with a receiver holding session 'mine' (the holder) and one holding
 * 'theirs' (the other), and the caller tests that stand for each of them.
 */
async function holderAndOther(messages: WireMessage[]) {
  const { broker } = await sessionBroker();
  if (messages.length > 0) broker.send('t', messages);
  const open = (sessionId: string) =>
    broker.openReceiver({ source: src, mode: 'peekLock', session: { sessionId, timeoutMs: 0 } });
  const holder = await open('mine');
  const other = await open('theirs');
  const byHolder = (r: Receiver) => r === holder;
  const byOther = (r: Receiver) => r === other;
  return { broker, open, holder, other, byHolder, byOther };
}

function code(err: unknown): string | undefined {
  return err instanceof BrokerError ? err.code : undefined;
}

describe('sessions', () => {
  test('a named session is locked exclusively and delivers its messages in order', async () => {
    const { broker } = await sessionBroker();
    broker.send('t', [
      msg({ group_id: 'a', message_id: 'a1' }),
      msg({ group_id: 'b', message_id: 'b1' }),
      msg({ group_id: 'a', message_id: 'a2' }),
    ]);
    const ra = await broker.openReceiver({
      source: src,
      mode: 'peekLock',
      session: { sessionId: 'a', timeoutMs: 0 },
    });
    assert.equal(ra.sessionId, 'a');
    await assert.rejects(
      broker.openReceiver({ source: src, mode: 'peekLock', session: { sessionId: 'a', timeoutMs: 0 } }),
      (e) => code(e) === 'SessionCannotBeLocked',
    );
    await assert.rejects(
      broker.openReceiver({ source: src, mode: 'peekLock' }),
      (e) => code(e) === 'InvalidOperation',
    );
    // Later messages of a session are delivered while earlier ones are still locked.
    const [first] = ra.take(1);
    const [second] = ra.take(1);
    assert.deepEqual([first?.message.message_id, second?.message.message_id], ['a1', 'a2']);
    broker.settle(src, first?.lockToken ?? '', { kind: 'complete' }, 'a');
    ra.close();
    // Closing released the session: the unsettled message comes back, counted as a delivery.
    const again = await broker.openReceiver({
      source: src,
      mode: 'peekLock',
      session: { sessionId: 'a', timeoutMs: 0 },
    });
    const [redelivered] = again.take(5);
    assert.equal(redelivered?.message.message_id, 'a2');
    assert.equal(redelivered?.deliveryCount, 1);
    assert.throws(
      () => broker.settle(src, second?.lockToken ?? '', { kind: 'complete' }, 'a'),
      (e) => code(e) === 'SessionLockLost' || code(e) === 'MessageLockLost',
    );
    await broker.close();
  });

  test('acceptNextSession skips locked sessions and rotates fairly between sessions', async () => {
    const { broker } = await sessionBroker();
    for (const s of ['s1', 's2', 's3']) broker.send('t', [msg({ group_id: s }), msg({ group_id: s })]);
    const next = () =>
      broker.openReceiver({ source: src, mode: 'peekLock', session: { sessionId: null, timeoutMs: 0 } });
    const order: Array<string | undefined> = [];
    const r1 = await next();
    order.push(r1.sessionId);
    // While s1 is held, the next call gets another session.
    const r2 = await next();
    order.push(r2.sessionId);
    // s1 is released with messages left: it goes to the back of the line, behind s3.
    r1.close();
    const r3 = await next();
    order.push(r3.sessionId);
    const r4 = await next();
    order.push(r4.sessionId);
    assert.deepEqual(order, ['s1', 's2', 's3', 's1']);
    await broker.close();
  });

  test('waiting acceptNextSession calls are served in order as sessions arrive, and time out', async () => {
    const { broker, clock } = await sessionBroker();
    const got: Array<string | undefined> = [];
    const w1 = broker
      .openReceiver({ source: src, mode: 'peekLock', session: { sessionId: null, timeoutMs: 5000 } })
      .then((r) => got.push(`w1:${r.sessionId}`));
    const w2 = broker
      .openReceiver({ source: src, mode: 'peekLock', session: { sessionId: null, timeoutMs: 5000 } })
      .then((r) => got.push(`w2:${r.sessionId}`));
    const w3 = broker.openReceiver({
      source: src,
      mode: 'peekLock',
      session: { sessionId: null, timeoutMs: 5000 },
    });
    broker.send('t', [msg({ group_id: 'x' })]);
    broker.send('t', [msg({ group_id: 'y' })]);
    await Promise.all([w1, w2]);
    assert.deepEqual(got, ['w1:x', 'w2:y']);
    tick(broker, clock, 5000);
    await assert.rejects(w3, (e) => code(e) === 'NoSessionAvailable');
    await broker.close();
  });

  test('an expired session lock closes the receiver and frees the session and its messages', async () => {
    const { broker, clock } = await sessionBroker(1000);
    broker.send('t', [msg({ group_id: 'a', message_id: 'm' })]);
    const r = await broker.openReceiver({
      source: src,
      mode: 'peekLock',
      session: { sessionId: 'a', timeoutMs: 0 },
    });
    let lost: string | undefined;
    r.onClosedByBroker((e) => (lost = e.code));
    const [d] = r.take(1);
    tick(broker, clock, 600);
    assert.equal(broker.renewSessionLock(src, 'a'), clock.t + 1000);
    tick(broker, clock, 600);
    assert.equal(lost, undefined, 'renewal kept the session');
    tick(broker, clock, 500);
    assert.equal(lost, 'SessionLockLost');
    assert.throws(
      () => broker.settle(src, d?.lockToken ?? '', { kind: 'complete' }, 'a'),
      (e) => code(e) === 'SessionLockLost',
    );
    const other: Receiver = await broker.openReceiver({
      source: src,
      mode: 'peekLock',
      session: { sessionId: null, timeoutMs: 0 },
    });
    assert.equal(other.sessionId, 'a');
    assert.equal(other.take(1)[0]?.deliveryCount, 1);
    await broker.close();
  });

  test('session state is kept per session, also without messages, and sessions are listed', async () => {
    const { broker } = await sessionBroker();
    const r = await broker.openReceiver({
      source: src,
      mode: 'peekLock',
      session: { sessionId: 'st', timeoutMs: 0 },
    });
    assert.equal(broker.getSessionState(src, 'st'), null);
    broker.setSessionState(src, 'st', Buffer.from('{"step":2}'));
    r.close();
    assert.throws(
      () => broker.getSessionState(src, 'st'),
      (e) => code(e) === 'SessionLockLost',
    );
    broker.send('t', [msg({ group_id: 'other' })]);
    assert.deepEqual(broker.listSessions(src).sort(), ['other', 'st']);
    const r2 = await broker.openReceiver({
      source: src,
      mode: 'peekLock',
      session: { sessionId: 'st', timeoutMs: 0 },
    });
    assert.equal(broker.getSessionState(src, 'st')?.toString(), '{"step":2}');
    broker.setSessionState(src, 'st', null);
    r2.close();
    assert.deepEqual(broker.listSessions(src), ['other']);
    await broker.close();
  });

  test('session lock renewal and state answer only the caller that holds the session', async () => {
    const { broker, open, holder, other, byHolder, byOther } = await holderAndOther([]);
    broker.setSessionState(src, 'mine', Buffer.from('1'), byHolder);
    assert.equal(broker.getSessionState(src, 'mine', byHolder)?.toString(), '1');
    assert.ok(broker.renewSessionLock(src, 'mine', byHolder) > 0);
    const refused = (e: unknown) => code(e) === 'SessionLockLost';
    assert.throws(() => broker.renewSessionLock(src, 'mine', byOther), refused);
    assert.throws(() => broker.getSessionState(src, 'mine', byOther), refused);
    assert.throws(() => broker.setSessionState(src, 'mine', Buffer.from('2'), byOther), refused);
    assert.equal(broker.getSessionState(src, 'mine', byHolder)?.toString(), '1', 'state untouched');
    // Released and taken by another receiver: the old holder's requests are refused.
    holder.close();
    const next = await open('mine');
    assert.throws(() => broker.getSessionState(src, 'mine', byHolder), refused);
    assert.equal(broker.getSessionState(src, 'mine', (r) => r === next)?.toString(), '1');
    next.close();
    other.close();
    await broker.close();
  });

  test('deferred receive and settlement with a session id answer only the caller that holds the session', async () => {
    const { broker, holder, other, byHolder, byOther } = await holderAndOther([
      msg({ group_id: 'mine', message_id: 'm1' }),
      msg({ group_id: 'mine', message_id: 'm2' }),
    ]);
    const got = holder.take(2);
    for (const d of got) broker.settle(src, d.lockToken ?? '', { kind: 'defer' }, 'mine', byHolder);
    const [seq1, seq2] = got.map((d) => d.sequenceNumber);
    const refused = (e: unknown) => code(e) === 'SessionLockLost';
    assert.throws(() => broker.receiveDeferred(src, [seq1!], 'peekLock', 'mine', byOther), refused);
    const [taken] = broker.receiveDeferred(src, [seq1!], 'peekLock', 'mine', byHolder);
    assert.ok(taken?.lockToken);
    assert.throws(
      () => broker.settle(src, taken.lockToken ?? '', { kind: 'complete' }, 'mine', byOther),
      refused,
    );
    broker.settle(src, taken.lockToken ?? '', { kind: 'complete' }, 'mine', byHolder);
    // The refused receive took nothing: the second deferred message is still there for the holder.
    assert.equal(broker.receiveDeferred(src, [seq2!], 'receiveAndDelete', 'mine', byHolder).length, 1);
    holder.close();
    other.close();
    await broker.close();
  });

  test("settling a session message needs its own session's id: none is an internal error, another session's is a lost lock", async () => {
    const { broker, holder, other, byHolder, byOther } = await holderAndOther([
      msg({ group_id: 'mine', message_id: 'm1' }),
      msg({ group_id: 'theirs', message_id: 't1' }),
    ]);
    const [mine] = holder.take(1);
    assert.ok(mine?.lockToken);
    const complete = { kind: 'complete' } as const;
    // No session id: refused for anyone (Azure answers an internal error), with or without a caller.
    for (const caller of [byHolder, byOther, undefined]) {
      assert.throws(
        () => broker.settle(src, mine.lockToken!, complete, undefined, caller),
        (e: unknown) => code(e) === 'InternalError',
      );
    }
    // The other receiver naming its own session (which it holds) with this session's token.
    assert.throws(
      () => broker.settle(src, mine.lockToken!, complete, 'theirs', byOther),
      (e: unknown) => code(e) === 'MessageLockLost',
    );
    // Nothing was settled: the holder completes its message.
    broker.settle(src, mine.lockToken!, complete, 'mine', byHolder);
    holder.close();
    other.close();
    await broker.close();
  });

  test('acceptNextSession over many sessions hands each out once per round', async () => {
    const { broker } = await sessionBroker();
    for (let i = 0; i < 150; i++) broker.send('t', [msg({ group_id: `s${i}` })]);
    const seen = new Set<string>();
    for (let i = 0; i < 150; i++) {
      const r = await broker.openReceiver({
        source: src,
        mode: 'peekLock',
        session: { sessionId: null, timeoutMs: 0 },
      });
      const [d] = r.take(1);
      broker.settle(src, d?.lockToken ?? '', { kind: 'complete' }, r.sessionId);
      seen.add(r.sessionId ?? '');
      r.close();
    }
    assert.equal(seen.size, 150);
    await assert.rejects(
      broker.openReceiver({ source: src, mode: 'peekLock', session: { sessionId: null, timeoutMs: 0 } }),
      (e) => code(e) === 'NoSessionAvailable',
    );
    await broker.close();
  });
});
