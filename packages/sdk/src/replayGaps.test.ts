// A replayed copy that ends outside the decision procedure (a behaviour dead-letters it, or throws) still moves the
// session's replay cursor and asks for the next pass, or the session would drain forever (issue 12 item 6). Pure
// logic over a fake DeliveryPort; the broker paths are in e2e/replay.test.ts.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { emptySessionState, eventBody } from './contract/index.ts';
import type { SessionState } from './contract/index.ts';
import { Dispatcher } from './dispatcher.ts';
import type { DeliveryPort } from './dispatcher.ts';
import { MessageAlreadyDeadLetteredError } from './errors.ts';
import { HandlerRegistry } from './handlers.ts';
import type { PipelineBehavior } from './pipeline.ts';

class FakePort implements DeliveryPort {
  log: string[] = [];
  constructor(public state: SessionState) {}
  async readState() {
    return this.state;
  }
  async writeState(s: SessionState) {
    this.log.push(`setState r=${s.NextReplaySequence}`);
    this.state = s;
  }
  async send(m: { applicationProperties: Record<string, unknown> }) {
    const p = m.applicationProperties;
    this.log.push(`send ${p.MessageType}${p.ReplayUntil !== undefined ? ` until=${p.ReplayUntil}` : ''}`);
  }
  async schedule() {
    this.log.push('schedule');
  }
  async complete() {
    this.log.push('complete');
  }
  async deadLetter(reason: string) {
    this.log.push(`deadLetter ${reason}`);
  }
}

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
    const port = new FakePort(draining());
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
    const port = new FakePort(draining());
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
    const port = new FakePort({ ...draining(), NextReplaySequence: 0 });
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
    const fresh = new FakePort(emptySessionState());
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
