// A replayed copy that ends outside the decision procedure (a behaviour dead-letters it, or throws) still moves the
// session's replay cursor and asks for the next pass, or the session would drain forever (issue 12 item 6). Pure
// logic over a fake DeliveryPort; the broker paths are in e2e/replay.test.ts.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { emptySessionState, eventBody } from './contract/index.ts';
import type { SessionState } from './contract/index.ts';
import { Dispatcher } from './dispatcher.ts';
import { MessageAlreadyDeadLetteredError } from './errors.ts';
import { HandlerRegistry } from './handlers.ts';
import type { PipelineBehavior } from './pipeline.ts';
import { FakeDeliveryPort } from './testing/fakeDeliveryPort.ts';

/** The port's log shows the replay cursor a state write moves to, and the bound a replay request asks for. */
const replayPort = (state: SessionState) =>
  new FakeDeliveryPort(state, {
    stateLine: (s) => `setState r=${s.NextReplaySequence}`,
    sendLine: (m) => {
      const p = m.applicationProperties;
      return `send ${String(p.MessageType)}${p.ReplayUntil !== undefined ? ` until=${String(p.ReplayUntil)}` : ''}`;
    },
  });

// The last copy of a pass up to 2 (sequence 1), while one more message was parked meanwhile (sequence 2).
const lastCopy = {
  messageId: 'm1~parked~replayed',
  sessionId: 's1',
  body: eventBody('OrderPlaced', { n: 1 }),
  applicationProperties: {
    To: 'billing',
    From: 'shop',
    MessageType: 'EventRequest',
    EventId: 'e1',
    EventTypeId: 'OrderPlaced',
    ReplaySequence: 1,
    ReplayUntil: 2,
  },
};
const draining = (): SessionState => ({
  ...emptySessionState(),
  NextReplaySequence: 1,
  NextDeferralSequence: 3,
  DeferredCount: 3,
});
const signal = new AbortController().signal;

function dispatcher(behavior: PipelineBehavior) {
  return new Dispatcher({
    endpointId: 'billing',
    handlers: new HandlerRegistry().on('OrderPlaced', () => undefined),
    behaviors: [behavior],
  });
}

describe('replayed copies settled by the catch ladder', () => {
  test('a behaviour that throws on the copy ending a pass: the dead letter, then cursor advanced and the next pass asked for', async () => {
    // The cursor after the dead-letter: written first, a refused dead-letter made the redelivery "already handled".
    const port = replayPort(draining());
    const result = await dispatcher(async () => {
      throw new Error('service mode: endpoint paused');
    }).dispatch(lastCopy, port, signal);
    assert.equal(result, 'deadLettered');
    assert.deepEqual(port.log, [
      'send ErrorResponse',
      'deadLetter Failed to handle message.',
      'setState r=2',
      'send ProcessDeferredRequest until=3',
    ]);
  });

  test('a behaviour that dead-letters the copy itself: the cursor still advances and the next pass is asked for', async () => {
    const port = replayPort(draining());
    const result = await dispatcher(async (ctx) => {
      await ctx.deadLetter('Tenant unknown');
      throw new MessageAlreadyDeadLetteredError('Tenant unknown');
    }).dispatch(lastCopy, port, signal);
    assert.equal(result, 'middlewareDeadLettered');
    assert.deepEqual(port.log, [
      'deadLetter Tenant unknown',
      'send ErrorResponse',
      'setState r=2',
      'send ProcessDeferredRequest until=3',
    ]);
  });

  test('a copy that does not end its pass only moves the cursor; a new (not replayed) message changes no state', async () => {
    const port = replayPort({ ...draining(), NextReplaySequence: 0 });
    await dispatcher(async () => {
      throw new Error('boom');
    }).dispatch(
      { ...lastCopy, applicationProperties: { ...lastCopy.applicationProperties, ReplaySequence: 0 } },
      port,
      signal,
    );
    assert.deepEqual(port.log, [
      'send ErrorResponse',
      'deadLetter Failed to handle message.',
      'setState r=1',
    ]);
    const fresh = replayPort(emptySessionState());
    await dispatcher(async (ctx) => {
      await ctx.deadLetter('Tenant unknown');
      throw new MessageAlreadyDeadLetteredError('Tenant unknown');
    }).dispatch(
      {
        ...lastCopy,
        applicationProperties: { ...lastCopy.applicationProperties, ReplaySequence: undefined },
      } as never,
      fresh,
      signal,
    );
    assert.deepEqual(fresh.log, ['deadLetter Tenant unknown', 'send ErrorResponse']);
  });
});

describe('a parked copy missing in the middle of a pass', () => {
  // Parked sequences 0, 1 and 2, one pass up to 3; sequence 0 came back, sequence 1 was lost on the Deferred
  // subscription (deleted, dead-lettered, expired or not visible to the pass), so the next copy is sequence 2.
  const copy = (sequence: number, passEnd: boolean) => ({
    ...lastCopy,
    messageId: `m${sequence}~parked~replayed`,
    applicationProperties: {
      ...lastCopy.applicationProperties,
      EventId: `e${sequence}`,
      ReplaySequence: sequence,
      ReplayUntil: 3,
      ...(passEnd ? { ReplayPassEnd: true } : {}),
    },
  });
  const afterFirst = (): SessionState => ({
    ...emptySessionState(),
    NextReplaySequence: 1,
    NextDeferralSequence: 3,
    DeferredCount: 3,
  });
  const handled = () =>
    new Dispatcher({ endpointId: 'billing', handlers: new HandlerRegistry().on('OrderPlaced', () => undefined) });
  const notices = (port: FakeDeliveryPort) => port.sent.filter((m) => m.props.DeadLetterReason === 'ReplayGap');

  for (const passEnd of [true, false]) {
    test(`the copy after it (${passEnd ? 'ending' : 'not ending'} the pass) sends a ReplayGap notice for it, then runs`, async () => {
      // Before: the cursor moved from 1 to 3 with no notice; only a gap after the pass's last copy was reported.
      const port = replayPort(afterFirst());
      assert.equal(await handled().dispatch(copy(2, passEnd), port, signal), 'completed');
      const [notice, ...more] = notices(port);
      assert.ok(notice, `a ReplayGap notice: ${port.log.join(', ')}`);
      assert.equal(more.length, 0, 'one notice');
      assert.equal(notice.props.MessageType, 'ErrorResponse');
      assert.equal(notice.props.EventId, 'e2', 'recorded on the event whose copy found the gap');
      assert.match(
        String(notice.props.DeadLetterErrorDescription),
        /^parked sequence 1 of session s1 did not come back ahead of sequence 2 in its replay pass up to 3 /,
      );
      assert.deepEqual(port.log, ['send ErrorResponse', 'send ResolutionResponse', 'setState r=3', 'complete']);
    });
  }

  test('the notice is one message: sent again by the redelivery with the same MessageId, and not after the cursor moved', async () => {
    const port = replayPort(afterFirst());
    port.failOn = 'setState';
    assert.equal(await handled().dispatch(copy(2, false), port, signal), 'transient');
    port.failOn = 'complete';
    assert.equal(await handled().dispatch(copy(2, false), port, signal), 'transient');
    port.failOn = undefined;
    assert.equal(await handled().dispatch(copy(2, false), port, signal), 'completed');
    const ids = notices(port).map((m) => m.messageId);
    assert.equal(ids.length, 2, 'the second redelivery finds the cursor past the gap: no notice');
    assert.equal(ids[0], ids[1], 'the Resolver records it once (its audit is keyed by the MessageId)');
    assert.equal(port.state.NextReplaySequence, 3);
  });

  test('copies in order send no notice', async () => {
    const port = replayPort({ ...afterFirst(), NextReplaySequence: 0 });
    for (const [sequence, passEnd] of [[0, false], [1, false], [2, true]] as const)
      assert.equal(await handled().dispatch(copy(sequence, passEnd), port, signal), 'completed');
    assert.deepEqual(notices(port), []);
    assert.equal(port.state.NextReplaySequence, 3);
  });
});
