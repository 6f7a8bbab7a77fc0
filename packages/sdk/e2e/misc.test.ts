// Flow 7 (legacy ContinuationRequest), message types a subscriber does not accept, and a replay trigger without a
// session, on the emulator.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventBody, MessageType } from '@nimbus/sdk/contract';
import { HandlerRegistry } from '@nimbus/sdk';
import type { ReplayPass } from '@nimbus/sdk';
import { eventually, withHarness } from './harness.ts';

describe('other message types', () => {
  test('a ContinuationRequest (routed through the Continuation subscription) is logged and completed', async () => {
    await withHarness(async (h) => {
      const results: string[] = [];
      h.host({ endpointId: 'crm', handlers: new HandlerRegistry(), onDelivery: (r) => void results.push(r) });
      await h.send('crm', {
        sessionId: 'K-1',
        props: {
          To: 'Continuation',
          MessageType: MessageType.ContinuationRequest,
          EventId: 'ev-k1',
          EventTypeId: 'CustomerUpdated',
        },
      });
      const records = await h.resolver('K-1', 1);
      assert.equal(records[0]!.type, 'ContinuationRequest');
      assert.equal(records[0]!.props.From, 'Continuation');
      await eventually(() => (results.length === 1 ? true : undefined), 'the delivery');
      assert.deepEqual(results, ['completed']);
      assert.deepEqual(await h.resolverRestAfterMarker('K-1', ['crm']), []);
      assert.equal((await h.deadLetters('crm', 'crm', 10, 300)).length, 0);
    });
  });

  for (const type of [MessageType.ErrorResponse, MessageType.ProcessDeferredRequest, 'NotAType']) {
    test(`a ${type} on the main subscription is dead-lettered with a notification`, async () => {
      await withHarness(async (h) => {
        h.host({ endpointId: 'crm', handlers: new HandlerRegistry().on('CustomerUpdated', () => undefined) });
        await h.send('crm', {
          sessionId: 'K-2',
          body: eventBody('CustomerUpdated', {}),
          props: {
            To: 'crm',
            From: 'shop',
            MessageType: type,
            EventId: 'ev-k2',
            EventTypeId: 'CustomerUpdated',
          },
        });
        const records = await h.resolver('K-2', 2);
        assert.equal(records[1]!.type, 'ErrorResponse');
        assert.equal(records[1]!.props.DeadLetterReason, 'Failed to handle message.');
        const dead = await h.awaitDeadLetters('crm', 'crm');
        assert.equal(dead[0]!.deadLetterReason, 'Failed to handle message.');
      });
    });
  }

  test('a replay trigger without a session id is dead-lettered "No SessionId"', async () => {
    await withHarness(async (h) => {
      const passes: ReplayPass[] = [];
      h.deferredProcessor('crm', { onPass: (p) => void passes.push(p) });
      await h.send('crm', {
        props: { To: 'DeferredProcessor', MessageType: MessageType.ProcessDeferredRequest, EventId: 'ev-k3' },
      });
      await eventually(() => (passes.length === 1 ? true : undefined), 'the trigger');
      assert.deepEqual(passes, [{ sessionId: undefined, replayed: 0, outcome: 'no-session-id' }]);
      const dead = await h.deadLetters('crm', 'DeferredProcessor', 10, 500);
      assert.equal(dead.length, 1);
      assert.equal(dead[0]!.deadLetterReason, 'No SessionId');
    });
  });
});
