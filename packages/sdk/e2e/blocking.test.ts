// Flows 2-6: a failure blocks its session, later siblings park on Deferred, and resubmit / skip / a successful
// retry releases the session and replays the parked messages in order - checked on the Resolver topic and in
// the session state afterwards.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventBody, MessageType } from '@nimbus/sdk/contract';
import { HandlerRegistry } from '@nimbus/sdk';
import { RetryPolicies } from '@nimbus/sdk';
import type { Harness } from './harness.ts';
import { eventually, story, storyOf, withHarness } from './harness.ts';

type Customer = { customerId: string; n: number; fixed?: boolean };

/** crm handler that fails E1 until `fixed` (or until `failures` attempts are used up), recording every call. */
function failingFirst(calls: string[], options: { failures?: number } = {}) {
  let failuresLeft = options.failures ?? Number.POSITIVE_INFINITY;
  return new HandlerRegistry().on<Customer>('CustomerUpdated', (e, ctx) => {
    calls.push(`E${e.n}:${ctx.messageType}`);
    if (e.n === 1 && !e.fixed && failuresLeft > 0) {
      failuresLeft--;
      throw new Error('CRM rejected the customer');
    }
  });
}

async function blockWithTwoParked(
  h: Harness,
  session: string,
): Promise<{ e1EventId: string; messageIds: string[] }> {
  const pub = h.publisher('shop');
  for (const n of [1, 2, 3]) await pub.publish('CustomerUpdated', { customerId: session, n });
  const first = await h.resolver(session, 6);
  assert.deepEqual(storyOf(first), {
    requests: ['EventRequest:E1', 'EventRequest:E2', 'EventRequest:E3'],
    responses: ['ErrorResponse:E1', 'DeferralResponse:E2', 'DeferralResponse:E3'],
  });
  return {
    e1EventId: String(first[0]!.props.EventId),
    messageIds: first.filter((r) => r.type === 'EventRequest').map((r) => r.messageId),
  };
}

describe('failure blocks the session; siblings park and replay in order', () => {
  test('after a resubmission that succeeds', async () => {
    await withHarness(async (h) => {
      const calls: string[] = [];
      const host = h.host({ endpointId: 'crm', handlers: failingFirst(calls) });
      h.deferredProcessor('crm');
      const { e1EventId } = await blockWithTwoParked(h, 'B-1');

      await h.managerCommand(
        'crm',
        MessageType.ResubmissionRequest,
        { eventId: e1EventId, sessionId: 'B-1', eventTypeId: 'CustomerUpdated' },
        eventBody('CustomerUpdated', { customerId: 'B-1', n: 1, fixed: true }),
      );
      const after = await h.resolver('B-1', 6);
      assert.deepEqual(storyOf(after), {
        requests: ['ResubmissionRequest:E1', 'EventRequest:E2', 'EventRequest:E3'],
        responses: ['ResolutionResponse:E1', 'ResolutionResponse:E2', 'ResolutionResponse:E3'],
      });
      assert.equal(after[0]!.props.From, 'Manager');
      assert.deepEqual(calls, [
        'E1:EventRequest',
        'E1:ResubmissionRequest',
        'E2:EventRequest',
        'E3:EventRequest',
      ]);

      await host.stop();
      const state = await h.sessionState('crm', 'B-1');
      assert.deepEqual(
        {
          blocked: state.BlockedByEventId,
          parked: state.NextDeferralSequence,
          count: state.DeferredCount,
          replayed: state.NextReplaySequence,
        },
        { blocked: null, parked: 2, count: 2, replayed: 2 },
      );
    });
  });

  test('after a skip: the failed event is not run again', async () => {
    await withHarness(async (h) => {
      const calls: string[] = [];
      h.host({ endpointId: 'crm', handlers: failingFirst(calls) });
      h.deferredProcessor('crm');
      const { e1EventId } = await blockWithTwoParked(h, 'B-2');
      await h.managerCommand('crm', MessageType.SkipRequest, { eventId: e1EventId, sessionId: 'B-2' });
      const after = await h.resolver('B-2', 6);
      const skipStory = storyOf(after);
      assert.deepEqual(
        {
          requests: skipStory.requests.map((x) => x.replace(':?', ':E1')),
          responses: skipStory.responses.map((x) => x.replace(':?', ':E1')),
        },
        {
          requests: ['SkipRequest:E1', 'EventRequest:E2', 'EventRequest:E3'],
          responses: ['SkipResponse:E1', 'ResolutionResponse:E2', 'ResolutionResponse:E3'],
        },
      );
      assert.equal(after.find((r) => r.type === 'SkipResponse')!.props.EventId, e1EventId);
      assert.deepEqual(calls, ['E1:EventRequest', 'E2:EventRequest', 'E3:EventRequest']);
    });
  });

  test('after a scheduled retry that succeeds', async () => {
    await withHarness(async (h) => {
      const calls: string[] = [];
      // Long enough for E2 to arrive and park before the retry comes.
      const retryPolicies = new RetryPolicies().setDefaultPolicy({ maxRetries: 2, baseDelayMs: 2000 });
      const host = h.host({
        endpointId: 'crm',
        handlers: failingFirst(calls, { failures: 1 }),
        retryPolicies,
      });
      h.deferredProcessor('crm');
      const pub = h.publisher('shop');
      await pub.publish('CustomerUpdated', { customerId: 'B-3', n: 1 });
      await h
        .resolver('B-3', 2)
        .then((r) =>
          assert.deepEqual(storyOf(r), { requests: ['EventRequest:E1'], responses: ['ErrorResponse:E1'] }),
        );
      await pub.publish('CustomerUpdated', { customerId: 'B-3', n: 2 });
      const rest = await h.resolver('B-3', 6);
      // E2 parks while E1 waits for its retry; the retry's success releases the session and E2 replays.
      assert.deepEqual(storyOf(rest).responses, [
        'DeferralResponse:E2',
        'ResolutionResponse:E1',
        'ResolutionResponse:E2',
      ]);
      assert.deepEqual(storyOf(rest).requests.sort(), [
        'EventRequest:E2',
        'EventRequest:E2',
        'RetryRequest:E1',
      ]);
      const retry = rest.find((r) => r.type === 'RetryRequest')!;
      assert.equal(retry.props.From, 'Retry');
      assert.equal(retry.props.RetryCount, 1);
      assert.deepEqual(calls, ['E1:EventRequest', 'E1:RetryRequest', 'E2:EventRequest']);
      await host.stop();
      const state = await h.sessionState('crm', 'B-3');
      assert.equal(state.BlockedByEventId, null);
      assert.equal(state.NextReplaySequence, state.NextDeferralSequence);
    });
  });

  test('a new message arriving during the replay does not overtake the parked ones', async () => {
    await withHarness(async (h) => {
      const calls: string[] = [];
      h.host({ endpointId: 'crm', handlers: failingFirst(calls) });
      const { e1EventId } = await blockWithTwoParked(h, 'B-4');
      // The deferred processor is not running yet: after the resubmission the session is unblocked but draining.
      await h.managerCommand(
        'crm',
        MessageType.ResubmissionRequest,
        { eventId: e1EventId, sessionId: 'B-4', eventTypeId: 'CustomerUpdated' },
        eventBody('CustomerUpdated', { customerId: 'B-4', n: 1, fixed: true }),
      );
      await h.resolver('B-4', 2).then((r) =>
        assert.deepEqual(storyOf(r), {
          requests: ['ResubmissionRequest:E1'],
          responses: ['ResolutionResponse:E1'],
        }),
      );
      await h.publisher('shop').publish('CustomerUpdated', { customerId: 'B-4', n: 4 });
      await h
        .resolver('B-4', 2)
        .then((r) =>
          assert.deepEqual(storyOf(r), { requests: ['EventRequest:E4'], responses: ['DeferralResponse:E4'] }),
        );
      h.deferredProcessor('crm');
      const replay = await h.resolver('B-4', 6);
      assert.deepEqual(storyOf(replay), {
        requests: ['EventRequest:E2', 'EventRequest:E3', 'EventRequest:E4'],
        responses: ['ResolutionResponse:E2', 'ResolutionResponse:E3', 'ResolutionResponse:E4'],
      });
      assert.deepEqual(calls, [
        'E1:EventRequest',
        'E1:ResubmissionRequest',
        'E2:EventRequest',
        'E3:EventRequest',
        'E4:EventRequest',
      ]);
    });
  });

  test('a replayed copy of a sequence already handled (a replay sent twice) is completed without running again', async () => {
    await withHarness(async (h) => {
      const calls: string[] = [];
      h.host({ endpointId: 'crm', handlers: failingFirst(calls) });
      h.deferredProcessor('crm');
      const { e1EventId, messageIds } = await blockWithTwoParked(h, 'B-7');
      await h.managerCommand('crm', MessageType.SkipRequest, { eventId: e1EventId, sessionId: 'B-7' });
      const replay = await h.resolver('B-7', 6);
      const e2 = replay.find(
        (r) => r.type === 'EventRequest' && r.content.EventContent?.EventJson?.includes('"n":2'),
      )!;
      assert.equal(e2.props.ReplaySequence, 0);
      assert.equal(
        e2.messageId,
        `${messageIds[1]}~parked~replayed`,
        'the replayed copy carries a stable id derived from the original MessageId (DESIGN.md §5)',
      );
      // The same replayed copy once more, as after a crash between sending it and completing the parked one.
      await h.send('crm', {
        sessionId: 'B-7',
        messageId: e2.messageId,
        body: eventBody('CustomerUpdated', { customerId: 'B-7', n: 2 }),
        props: { ...(e2.props as Record<string, string | number>) },
      });
      assert.deepEqual(story(await h.resolver('B-7', 1)), ['EventRequest:E2']);
      assert.deepEqual(await h.resolverRestAfterMarker('B-7', ['crm']), [], 'no second response');
      assert.deepEqual(calls, ['E1:EventRequest', 'E2:EventRequest', 'E3:EventRequest']);
    });
  });

  test('a delivery of the blocking event itself is completed without running the handler or answering', async () => {
    await withHarness(async (h) => {
      const calls: string[] = [];
      const host = h.host({ endpointId: 'crm', handlers: failingFirst(calls) });
      await h.publisher('shop').publish('CustomerUpdated', { customerId: 'B-5', n: 1 });
      const first = await h.resolver('B-5', 2);
      const eventId = String(first[0]!.props.EventId);
      // A second copy of the same event (as after a crash between block and complete).
      await h.send('crm', {
        sessionId: 'B-5',
        body: eventBody('CustomerUpdated', { customerId: 'B-5', n: 1 }),
        props: {
          To: 'crm',
          From: 'shop',
          MessageType: 'EventRequest',
          EventId: eventId,
          EventTypeId: 'CustomerUpdated',
        },
      });
      const copy = await h.resolver('B-5', 1);
      assert.deepEqual(story(copy), ['EventRequest:E1']);
      assert.deepEqual(await h.resolverRestAfterMarker('B-5', ['crm']), []);
      assert.deepEqual(calls, ['E1:EventRequest']);
      await host.stop();
      const state = await h.sessionState('crm', 'B-5');
      assert.equal(state.BlockedByEventId, eventId);
      assert.equal(state.NextDeferralSequence, 0, 'not parked behind itself');
    });
  });

  test('a session blocked by one event does not hold up another session', async () => {
    await withHarness(async (h) => {
      const calls: string[] = [];
      h.host({ endpointId: 'crm', handlers: failingFirst(calls) });
      const pub = h.publisher('shop');
      await pub.publish('CustomerUpdated', { customerId: 'B-6a', n: 1 });
      await pub.publish('CustomerUpdated', { customerId: 'B-6b', n: 2 });
      assert.deepEqual(storyOf(await h.resolver('B-6b', 2)), {
        requests: ['EventRequest:E2'],
        responses: ['ResolutionResponse:E2'],
      });
      assert.deepEqual(storyOf(await h.resolver('B-6a', 2)), {
        requests: ['EventRequest:E1'],
        responses: ['ErrorResponse:E1'],
      });
      await eventually(() => (calls.length === 2 ? true : undefined), 'both handlers');
    });
  });
});
