// Flows 8, 11, 12, 13 and the error-handling table on the emulator: dead letter with the Resolver notification
// first, pending handoff settled by the handoff client (complete and fail), heartbeat, Manager-only commands,
// transient redelivery, validation, discard, and the lifecycle observers.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventBody, HEARTBEAT_EVENT_TYPE_ID, MessageType } from '@nimbus/sdk/contract';
import { classifier } from '@nimbus/sdk';
import { PermanentFailureError, TransientError } from '@nimbus/sdk';
import { HandoffClient } from '@nimbus/sdk';
import { isHandoffToken, readHandoffToken } from '@nimbus/sdk';
import type { HandoffToken } from '@nimbus/sdk';
import { HandlerRegistry } from '@nimbus/sdk';
import { SDK_VERSION } from '@nimbus/sdk';
import { eventually, recorder, storyOf, withHarness } from './harness.ts';

type Customer = { customerId: string; n: number };

describe('dead letter', () => {
  test('a permanent failure sends the notification first, then dead-letters; the session is not blocked', async () => {
    await withHarness(async (h) => {
      const { events, observer } = recorder();
      const handlers = new HandlerRegistry().on<Customer>('CustomerUpdated', (e) => {
        if (e.n === 1) throw new PermanentFailureError('customer record is corrupt');
      });
      h.host({ endpointId: 'crm', handlers, observers: [observer] });
      const pub = h.publisher('shop');
      await pub.publish('CustomerUpdated', { customerId: 'D-1', n: 1 });
      await pub.publish('CustomerUpdated', { customerId: 'D-1', n: 2 });
      const records = await h.resolver('D-1', 4);
      assert.deepEqual(storyOf(records).responses, ['ErrorResponse:E1', 'ResolutionResponse:E2']);
      const note = records.find((r) => r.type === 'ErrorResponse')!;
      assert.equal(
        note.props.DeadLetterReason,
        'Permanent failure: PermanentFailureError: customer record is corrupt',
      );
      assert.equal(note.props.DeadLetterErrorDescription, 'customer record is corrupt');
      const dead = await h.awaitDeadLetters('crm', 'crm');
      assert.equal(dead.length, 1);
      assert.equal(
        dead[0]!.deadLetterReason,
        'Permanent failure: PermanentFailureError: customer record is corrupt',
      );
      assert.equal(dead[0]!.applicationProperties?.EventId, note.props.EventId);
      await eventually(() => (events.length >= 5 ? true : undefined), 'observer calls');
      assert.deepEqual(events.slice(0, 3), [
        'received:EventRequest',
        'failed:EventRequest:PermanentFailureError',
        'deadLettered:EventRequest:Permanent failure: PermanentFailureError: customer record is corrupt',
      ]);
      assert.deepEqual(events.slice(3), ['received:EventRequest', 'completed:EventRequest']);
    });
  });

  test('malformed payload: dead-lettered as permanent, handler never runs, no retry though a policy matches', async () => {
    await withHarness(async (h) => {
      let calls = 0;
      const { RetryPolicies } = await import('@nimbus/sdk');
      h.host({
        endpointId: 'crm',
        handlers: new HandlerRegistry().on('CustomerUpdated', () => void calls++),
        retryPolicies: new RetryPolicies().setDefaultPolicy({ maxRetries: 3, baseDelayMs: 100 }),
      });
      await h.send('crm', {
        sessionId: 'D-2',
        body: JSON.stringify({
          EventContent: { EventTypeId: 'CustomerUpdated', EventJson: '{"customerId":' },
          ErrorContent: null,
        }),
        props: {
          To: 'crm',
          From: 'shop',
          MessageType: 'EventRequest',
          EventId: 'ev-d2',
          EventTypeId: 'CustomerUpdated',
        },
      });
      const records = await h.resolver('D-2', 2);
      assert.deepEqual(
        records.map((r) => r.type),
        ['EventRequest', 'ErrorResponse'],
      );
      assert.match(String(records[1]!.props.DeadLetterReason), /^Permanent failure: .*not valid JSON/);
      assert.deepEqual(await h.resolverRestAfterMarker('D-2', ['crm'], { scheduledWithinMs: 100 }), []);
      assert.equal(calls, 0);
    });
  });

  test('EventTypeId property disagreeing with the body is dead-lettered without running the handler', async () => {
    await withHarness(async (h) => {
      let calls = 0;
      h.host({
        endpointId: 'crm',
        handlers: new HandlerRegistry()
          .on('CustomerUpdated', () => void calls++)
          .on('OrderPlaced', () => void calls++),
      });
      await h.send('crm', {
        sessionId: 'D-3',
        body: eventBody('OrderPlaced', { orderId: 'x' }),
        props: {
          To: 'crm',
          From: 'shop',
          MessageType: 'EventRequest',
          EventId: 'ev-d3',
          EventTypeId: 'CustomerUpdated',
        },
      });
      const records = await h.resolver('D-3', 2);
      assert.match(String(records[1]!.props.DeadLetterReason), /disagrees with the body/);
      assert.equal(calls, 0);
    });
  });

  test('validation: an EventRequest without EventId is dead-lettered with the stable reason and one notification', async () => {
    await withHarness(async (h) => {
      const { events, observer } = recorder();
      h.host({
        endpointId: 'crm',
        handlers: new HandlerRegistry().on('CustomerUpdated', () => undefined),
        observers: [observer],
      });
      await h.send('crm', {
        sessionId: 'D-4',
        body: eventBody('CustomerUpdated', { customerId: 'D-4' }),
        props: { To: 'crm', From: 'shop', MessageType: 'EventRequest', EventTypeId: 'CustomerUpdated' },
      });
      const records = await h.resolver('D-4', 2);
      assert.deepEqual(
        records.map((r) => r.type),
        ['EventRequest', 'ErrorResponse'],
      );
      assert.equal(records[1]!.props.DeadLetterReason, 'Validation failed: EventId is required');
      const dead = await h.awaitDeadLetters('crm', 'crm');
      assert.equal(dead.length, 1);
      assert.equal(dead[0]!.deadLetterReason, 'Validation failed: EventId is required');
      await eventually(() => (events.length >= 3 ? true : undefined), 'observers');
      assert.deepEqual(events, [
        'received:EventRequest',
        'failed:EventRequest:MessageAlreadyDeadLetteredError',
        'deadLettered:EventRequest:Validation failed: EventId is required',
      ]);
    });
  });
});

describe('Manager commands', () => {
  test('commands without From = Manager are refused: CommandRefused dead letter + notice, session state unchanged', async () => {
    await withHarness(async (h) => {
      const calls: number[] = [];
      const host = h.host({
        endpointId: 'crm',
        handlers: new HandlerRegistry().on<Customer>('CustomerUpdated', (e) => {
          calls.push(e.n);
          throw new Error('no');
        }),
      });
      await h.publisher('shop').publish('CustomerUpdated', { customerId: 'M-1', n: 1 });
      const first = await h.resolver('M-1', 2);
      const eventId = String(first[0]!.props.EventId);
      // Straight to the endpoint topic with a forged sender, bypassing the Manager topic.
      for (const type of [
        MessageType.SkipRequest,
        MessageType.ResubmissionRequest,
        MessageType.HandoffCompletedRequest,
        MessageType.HandoffFailedRequest,
      ]) {
        await h.send('crm', {
          sessionId: 'M-1',
          body: eventBody('CustomerUpdated', { customerId: 'M-1', n: 9 }),
          props: {
            To: 'crm',
            From: 'shop',
            MessageType: type,
            EventId: eventId,
            EventTypeId: 'CustomerUpdated',
          },
        });
      }
      const refused = await h.resolver('M-1', 8);
      const notes = refused.filter((r) => r.type === 'ErrorResponse');
      assert.equal(notes.length, 4);
      // The stable reason tells the Resolver that the notice is a refused command, not an outcome of the event.
      for (const n of notes) assert.equal(n.props.DeadLetterReason, 'CommandRefused');
      assert.deepEqual(
        notes.map((n) => String(n.props.DeadLetterErrorDescription).split(' ')[0]),
        ['SkipRequest', 'ResubmissionRequest', 'HandoffCompletedRequest', 'HandoffFailedRequest'],
      );
      assert.ok(!refused.some((r) => r.type === 'SkipResponse' || r.type === 'ResolutionResponse'));
      assert.deepEqual(calls, [1]);
      await host.stop();
      const state = await h.sessionState('crm', 'M-1');
      assert.equal(state.BlockedByEventId, eventId);
    });
  });
});

describe('pending handoff', () => {
  async function parkHandoff(
    h: Parameters<Parameters<typeof withHarness>[0]>[0],
    session: string,
    calls: string[],
  ) {
    h.host({
      endpointId: 'crm',
      handlers: new HandlerRegistry().on<Customer>('CustomerUpdated', (e, ctx) => {
        calls.push(`E${e.n}`);
        if (e.n === 1) ctx.markPendingHandoff('DMF import', 'job-42', 5 * 60_000);
      }),
    });
    h.deferredProcessor('crm');
    const pub = h.publisher('shop');
    await pub.publish('CustomerUpdated', { customerId: session, n: 1 });
    await pub.publish('CustomerUpdated', { customerId: session, n: 2 });
    const records = await h.resolver(session, 4);
    assert.deepEqual(storyOf(records).responses, ['PendingHandoffResponse:E1', 'DeferralResponse:E2']);
    const parked = records.find((r) => r.type === 'PendingHandoffResponse')!;
    assert.equal(parked.props.HandoffReason, 'DMF import');
    assert.equal(parked.props.ExternalJobId, 'job-42');
    assert.ok(!Number.isNaN(Date.parse(String(parked.props.ExpectedBy))));
    return {
      eventId: String(parked.props.EventId),
      messageId: String(parked.props.ParentMessageId),
      correlationId: parked.correlationId,
    };
  }

  test('complete: Resolution with the result, the parked sibling replays; the handler is not run again', async () => {
    await withHarness(async (h) => {
      const calls: string[] = [];
      const c = await parkHandoff(h, 'H-1', calls);
      const handoff = new HandoffClient(h.client);
      await handoff.complete(
        {
          endpointId: 'crm',
          eventId: c.eventId,
          sessionId: 'H-1',
          messageId: c.messageId,
          eventTypeId: 'CustomerUpdated',
          correlationId: c.correlationId,
        },
        { imported: 12 },
      );
      const after = await h.resolver('H-1', 4);
      assert.deepEqual(
        storyOf(after).responses.map((x) => x.replace(':?', ':E1')),
        ['ResolutionResponse:E1', 'ResolutionResponse:E2'],
      );
      const resolution = after.find((r) => r.type === 'ResolutionResponse' && r.props.EventId === c.eventId)!;
      assert.equal(resolution.content.EventContent?.EventJson, '{"imported":12}');
      assert.ok(after.some((r) => r.type === 'HandoffCompletedRequest' && r.props.From === 'Manager'));
      assert.deepEqual(calls, ['E1', 'E2']);
      await handoff.close();
    });
  });

  test('complete with a string that is not JSON: the Resolution carries it as a JSON string, as through the console', async () => {
    await withHarness(async (h) => {
      const calls: string[] = [];
      const c = await parkHandoff(h, 'H-S', calls);
      const handoff = new HandoffClient(h.client);
      try {
        const where = {
          endpointId: 'crm',
          eventId: c.eventId,
          sessionId: 'H-S',
          messageId: c.messageId,
          eventTypeId: 'CustomerUpdated',
          correlationId: c.correlationId,
        };
        await handoff.complete(where, 'imported by hand');
        const after = await h.resolver('H-S', 4);
        const resolution = after.find((r) => r.type === 'ResolutionResponse' && r.props.EventId === c.eventId)!;
        assert.equal(resolution.content.EventContent?.EventJson, '"imported by hand"');
        assert.deepEqual(calls, ['E1', 'E2']);
      } finally {
        await handoff.close();
      }
    });
  });

  test('the token markPendingHandoff returns settles the handoff; a wrong event id is refused and the real handoff stays pending', async () => {
    await withHarness(async (h) => {
      const tokens: HandoffToken[] = [];
      h.host({
        endpointId: 'crm',
        handlers: new HandlerRegistry().on<Customer>('CustomerUpdated', (e, ctx) => {
          if (e.n === 1) tokens.push(ctx.markPendingHandoff('DMF import', 'job-7'));
        }),
      });
      await h.publisher('shop').publish('CustomerUpdated', { customerId: 'H-9', n: 1 });
      const parked = await h.resolver('H-9', 2);
      assert.deepEqual(storyOf(parked).responses, ['PendingHandoffResponse:E1']);
      const [token] = tokens;
      assert.ok(token && isHandoffToken(token));
      const where = readHandoffToken(token);
      assert.equal(where.eventId, String(parked[1]!.props.EventId));
      assert.equal(where.messageId, String(parked[1]!.props.ParentMessageId));
      const handoff = new HandoffClient(h.client);
      try {
        // A typo in the event id: refused visibly (CommandRefused), no Resolution for an event that does not exist,
        // and the real session stays blocked by its handoff.
        await handoff.complete({ ...where, eventId: 'no-such-event' }, { imported: 1 });
        const refused = await h.resolver('H-9', 2);
        assert.deepEqual(
          refused.map((r) => r.type),
          ['HandoffCompletedRequest', 'ErrorResponse'],
        );
        assert.equal(refused[1]!.props.DeadLetterReason, 'CommandRefused');
        assert.match(
          String(refused[1]!.props.DeadLetterErrorDescription),
          /no-such-event is not the pending handoff/,
        );
        assert.equal((await h.sessionState('crm', 'H-9')).BlockedByEventId, where.eventId);
        // The token cannot name the wrong event; a damaged one is refused before anything is sent.
        await assert.rejects(handoff.complete(`${token}x` as HandoffToken), /handoff token is damaged/);
        await assert.rejects(handoff.complete('job-7' as HandoffToken), /not a handoff token/);
        await handoff.complete(token, { imported: 12 });
        const settled = await h.resolver('H-9', 2);
        assert.deepEqual(
          settled.map((r) => r.type),
          ['HandoffCompletedRequest', 'ResolutionResponse'],
        );
        assert.equal(settled[1]!.props.EventId, where.eventId);
        await eventually(
          async () => ((await h.sessionState('crm', 'H-9')).BlockedByEventId === null ? true : undefined),
          'the session to be released',
        );
      } finally {
        await handoff.close();
      }
    });
  });

  test('commands for an event that is not the pending handoff: a completion is refused (no Resolution), a failure is answered with its own type', async () => {
    await withHarness(async (h) => {
      const calls: string[] = [];
      const host = h.host({
        endpointId: 'crm',
        handlers: new HandlerRegistry().on<Customer>('CustomerUpdated', (e) => void calls.push(`E${e.n}`)),
      });
      await h.publisher('shop').publish('CustomerUpdated', { customerId: 'H-3', n: 1 });
      const first = await h.resolver('H-3', 2);
      const eventId = String(first[0]!.props.EventId);
      const where = { endpointId: 'crm', eventId, sessionId: 'H-3', messageId: first[0]!.messageId };
      const handoff = new HandoffClient(h.client);
      try {
        // E1 was handled and blocks nothing: the session is not waiting for any handoff.
        await handoff.complete(where, { importedLines: 1 });
        const refused = await h.resolver('H-3', 2);
        assert.deepEqual(
          refused.map((r) => r.type),
          ['HandoffCompletedRequest', 'ErrorResponse'],
        );
        assert.equal(refused[1]!.props.DeadLetterReason, 'CommandRefused');
        assert.match(
          String(refused[1]!.props.DeadLetterErrorDescription),
          /is not the pending handoff of session H-3 \(the session is not blocked\)/,
        );
        const [dead] = await h.awaitDeadLetters('crm', 'crm');
        assert.equal(dead!.deadLetterReason, 'CommandRefused');

        await handoff.fail(where, 'DMF job 43 rejected', 'DmfRejected');
        const answered = await h.resolver('H-3', 2);
        assert.deepEqual(
          answered.map((r) => r.type),
          ['HandoffFailedRequest', 'ErrorResponse'],
        );
        assert.equal(answered[1]!.props.DeadLetterReason, undefined);
        assert.equal(answered[1]!.content.ErrorContent?.ErrorText, 'DMF job 43 rejected');
        assert.equal(answered[1]!.content.ErrorContent?.ErrorType, 'DmfRejected');
      } finally {
        await handoff.close();
      }
      assert.deepEqual(calls, ['E1']);
      await host.stop();
      const state = await h.sessionState('crm', 'H-3');
      assert.deepEqual([state.BlockedByEventId, state.NextDeferralSequence], [null, 0]);
    });
  });

  test('fail: ErrorResponse with the text verbatim, the session stays blocked until a skip', async () => {
    await withHarness(async (h) => {
      const calls: string[] = [];
      const c = await parkHandoff(h, 'H-2', calls);
      const handoff = new HandoffClient(h.client);
      await handoff.fail(
        { endpointId: 'crm', eventId: c.eventId, sessionId: 'H-2', messageId: c.messageId },
        'DMF job 42 rejected 3 lines',
        'DmfRejected',
      );
      const failed = await h.resolver('H-2', 2);
      assert.deepEqual(
        failed.map((r) => r.type),
        ['HandoffFailedRequest', 'ErrorResponse'],
      );
      assert.equal(failed[1]!.content.ErrorContent?.ErrorText, 'DMF job 42 rejected 3 lines');
      // The caller's error type is kept (HandoffFailedException only stands in when it gives none).
      assert.equal(failed[1]!.content.ErrorContent?.ErrorType, 'DmfRejected');
      assert.deepEqual(await h.resolverRest('H-2', 500), [], 'E2 stays parked');
      await h.managerCommand('crm', MessageType.SkipRequest, { eventId: c.eventId, sessionId: 'H-2' });
      const released = await h.resolver('H-2', 4);
      assert.deepEqual(
        released.map((r) => r.type).filter((t) => t.endsWith('Response')),
        ['SkipResponse', 'ResolutionResponse'],
      );
      assert.deepEqual(calls, ['E1', 'E2']);
      await handoff.close();
    });
  });
});

describe('heartbeat', () => {
  test('answered with SDK version and timestamps by an endpoint without any handler', async () => {
    await withHarness(async (h) => {
      h.host({ endpointId: 'crm', handlers: new HandlerRegistry() });
      const sent = '2026-12-02T09:00:00.000Z';
      await h.send('crm', {
        sessionId: 'Heartbeat',
        body: eventBody(HEARTBEAT_EVENT_TYPE_ID, { ForwardSendTime: sent }),
        props: {
          To: 'crm',
          From: 'Manager',
          MessageType: 'EventRequest',
          EventId: 'probe-1',
          EventTypeId: HEARTBEAT_EVENT_TYPE_ID,
          OriginatingFrom: 'Manager',
        },
      });
      const records = await h.resolver('Heartbeat', 2);
      assert.deepEqual(
        records.map((r) => r.type),
        ['EventRequest', 'ResolutionResponse'],
      );
      const reply = records[1]!;
      assert.equal(reply.props.From, 'crm');
      assert.equal(reply.content.EventContent?.EventTypeId, HEARTBEAT_EVENT_TYPE_ID);
      const hb = JSON.parse(reply.content.EventContent!.EventJson!);
      assert.equal(hb.ForwardSendTime, sent);
      assert.equal(hb.Endpoint, 'crm');
      assert.equal(hb.SdkVersion, SDK_VERSION);
      assert.ok(Date.parse(hb.ForwardReceivedTime) >= Date.parse(sent));
      assert.equal(hb.BackwardSendTime, hb.ForwardReceivedTime);
    });
  });
});

describe('transient and discard', () => {
  test('a TransientError settles nothing: no Resolver record, the message comes back after a lock duration and then succeeds', async () => {
    await withHarness(async (h) => {
      const { events, observer } = recorder();
      const deliveries: Array<{ at: number; count: number }> = [];
      let first = true;
      h.host({
        endpointId: 'crm',
        observers: [
          observer,
          {
            onMessageReceived: (m) => void deliveries.push({ at: Date.now(), count: m.deliveryCount ?? -1 }),
          },
        ],
        handlers: new HandlerRegistry().on('CustomerUpdated', () => {
          if (first) {
            first = false;
            throw new TransientError('session lock lost');
          }
        }),
      });
      await h.publisher('shop').publish('CustomerUpdated', { customerId: 'T-1', n: 1 });
      const records = await h.resolver('T-1', 2, 30_000);
      assert.deepEqual(
        records.map((r) => r.type),
        ['EventRequest', 'ResolutionResponse'],
      );
      // One redelivery, counted by the broker, and only once the host has held the session for a lock duration
      // (the harness's 5 s lock, observed at accept; a little less arrives, never more than the lock).
      assert.deepEqual(
        deliveries.map((d) => d.count),
        [0, 1],
      );
      const gap = deliveries[1]!.at - deliveries[0]!.at;
      assert.ok(gap >= 4_000, `redelivered after ${gap} ms; the lock is 5 s`);
      assert.deepEqual(events, [
        'received:EventRequest',
        'failed:EventRequest:TransientError',
        'received:EventRequest',
        'completed:EventRequest',
      ]);
    });
  });

  test('Discard: enriched SkipResponse, completed, the session continues', async () => {
    await withHarness(async (h) => {
      class RetiredVersion extends Error {
        override name = 'RetiredVersion';
      }
      h.host({
        endpointId: 'crm',
        classifier: classifier('AdapterClassifier', (e) =>
          e instanceof RetiredVersion ? 'Discard' : 'Retry',
        ),
        handlers: new HandlerRegistry().on<Customer>('CustomerUpdated', (e) => {
          if (e.n === 1) throw new RetiredVersion('v1 customers are retired');
        }),
      });
      const pub = h.publisher('shop');
      await pub.publish('CustomerUpdated', { customerId: 'X-1', n: 1 });
      await pub.publish('CustomerUpdated', { customerId: 'X-1', n: 2 });
      const records = await h.resolver('X-1', 4);
      assert.deepEqual(storyOf(records).responses, ['SkipResponse:E1', 'ResolutionResponse:E2']);
      const skip = records.find((r) => r.type === 'SkipResponse')!;
      assert.equal(
        skip.content.ErrorContent?.ErrorText,
        'RetiredVersion: v1 customers are retired Classified as Discard by AdapterClassifier.',
      );
    });
  });
});

describe('inbox', () => {
  test('an identical re-publish is answered DuplicateDetected and the handler runs once', async () => {
    await withHarness(async (h) => {
      const { MemoryInboxStore } = await import('@nimbus/sdk');
      let calls = 0;
      h.host({
        endpointId: 'crm',
        inbox: new MemoryInboxStore(),
        handlers: new HandlerRegistry().on('CustomerUpdated', () => void calls++),
      });
      const pub = h.publisher('shop');
      const a = await pub.publish('CustomerUpdated', { customerId: 'I-1', n: 1 });
      const b = await pub.publish('CustomerUpdated', { customerId: 'I-1', n: 1 });
      assert.equal(a.messageId, b.messageId);
      const records = await h.resolver('I-1', 4);
      assert.deepEqual(storyOf(records).responses, ['ResolutionResponse:E1', 'SkipResponse:E1']);
      assert.equal(
        records.find((r) => r.type === 'SkipResponse')!.content.ErrorContent?.ErrorText,
        'DuplicateDetected',
      );
      assert.equal(calls, 1);
    });
  });
});
