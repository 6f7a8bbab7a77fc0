// More rows of the error-handling reference and corners of the flows, each on the emulator with the real client:
// retry-after hints, validation of EventTypeId, a middleware that dead-letters itself, pending handoff precedence
// and last-call-wins, payload safety (null, over-deep), a heartbeat on a blocked session, Discard on a
// resubmission, a failure at one consumer not touching another, custom DeadLetter classification, and the inbox
// covering the blocker after a successful resubmission.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeBody, eventBody, HEARTBEAT_EVENT_TYPE_ID, MessageType } from '@nimbus/sdk/contract';
import { classifier } from '@nimbus/sdk';
import { MessageAlreadyDeadLetteredError } from '@nimbus/sdk';
import type { RetryAfterHint } from '@nimbus/sdk';
import { HandlerRegistry } from '@nimbus/sdk';
import { MemoryInboxStore } from '@nimbus/sdk';
import type { PipelineBehavior } from '@nimbus/sdk';
import { RetryPolicies } from '@nimbus/sdk';
import { eventually, recorder, storyOf, withHarness } from './harness.ts';

type Customer = { customerId: string; n: number; fixed?: boolean };

class PartnerThrottledError extends Error implements RetryAfterHint {
  override name = 'PartnerThrottledError';
  constructor(readonly retryAfterMs: number) {
    super(`throttled for ${retryAfterMs} ms`);
  }
}
class PoisonVersion extends Error {
  override name = 'PoisonVersion';
}
class InvariantViolation extends Error {
  override name = 'InvariantViolation';
}

describe('error-handling rows', () => {
  test('a RetryAfterHint longer than the policy delay makes the retry wait for it (lower bound only)', async () => {
    await withHarness(async (h) => {
      const thrownAt: number[] = [];
      h.host({
        endpointId: 'crm',
        retryPolicies: new RetryPolicies().addExceptionRule(PartnerThrottledError, {
          maxRetries: 1,
          baseDelayMs: 100,
        }),
        handlers: new HandlerRegistry().on('CustomerUpdated', (_e, ctx) => {
          if (ctx.retryCount === 0) {
            thrownAt.push(Date.now());
            throw new PartnerThrottledError(1500);
          }
        }),
      });
      await h.publisher('shop').publish('CustomerUpdated', { customerId: 'RA-1', n: 1 });
      const records = await h.resolver('RA-1', 4);
      assert.deepEqual(storyOf(records), {
        requests: ['EventRequest:E1', 'RetryRequest:E1'],
        responses: ['ErrorResponse:E1', 'ResolutionResponse:E1'],
      });
      const retry = records.find((r) => r.type === 'RetryRequest')!;
      assert.equal(retry.props.RetryCount, 1);
      const gap = retry.enqueuedTime!.getTime() - thrownAt[0]!;
      assert.ok(gap >= 1500 - 1, `retry enqueued ${gap} ms after the throw, the hint said 1500`);
    });
  });

  test('validation: an EventRequest with no EventTypeId anywhere is dead-lettered; the body alone still counts (legacy)', async () => {
    await withHarness(async (h) => {
      const calls: string[] = [];
      const { events, observer } = recorder();
      h.host({
        endpointId: 'crm',
        observers: [observer],
        handlers: new HandlerRegistry().on<Customer>('CustomerUpdated', (e) => void calls.push(e.customerId)),
      });
      const props = (id: string) => ({ To: 'crm', From: 'shop', MessageType: 'EventRequest', EventId: id });
      // A message from before the property existed: the body's EventTypeId is used.
      await h.send('crm', {
        sessionId: 'V-2',
        body: eventBody('CustomerUpdated', { customerId: 'V-2', n: 1 }),
        props: props('ev-v2'),
      });
      assert.deepEqual(storyOf(await h.resolver('V-2', 2)).responses, ['ResolutionResponse:E1']);
      // Neither the property nor the body names the type.
      await h.send('crm', {
        sessionId: 'V-3',
        body: JSON.stringify({
          EventContent: { EventJson: '{"customerId":"V-3","n":1}' },
          ErrorContent: null,
        }),
        props: props('ev-v3'),
      });
      const records = await h.resolver('V-3', 2);
      assert.deepEqual(
        records.map((r) => r.type),
        ['EventRequest', 'ErrorResponse'],
      );
      const reason = 'Validation failed: EventTypeId is required for EventRequest';
      assert.equal(records[1]!.props.DeadLetterReason, reason);
      const dead = await h.awaitDeadLetters('crm', 'crm');
      assert.equal(dead.length, 1);
      assert.equal(dead[0]!.deadLetterReason, reason);
      assert.deepEqual(calls, ['V-2']);
      await eventually(() => (events.length >= 5 ? true : undefined), 'observer calls');
      assert.deepEqual(events.slice(2), [
        'received:EventRequest',
        'failed:EventRequest:MessageAlreadyDeadLetteredError',
        `deadLettered:EventRequest:${reason}`,
      ]);
    });
  });

  test('custom middleware that dead-letters itself: one dead letter, one notification, the handler never runs', async () => {
    await withHarness(async (h) => {
      let calls = 0;
      const tenantGuard: PipelineBehavior = async (ctx, next) => {
        if (ctx.message.sessionId === 'MW-bad') {
          await ctx.deadLetter('Unknown tenant');
          throw new MessageAlreadyDeadLetteredError('Unknown tenant');
        }
        await next();
      };
      h.host({
        endpointId: 'crm',
        behaviors: [tenantGuard],
        handlers: new HandlerRegistry().on('CustomerUpdated', () => void calls++),
      });
      const pub = h.publisher('shop');
      await pub.publish('CustomerUpdated', { customerId: 'MW-bad', n: 1 });
      await pub.publish('CustomerUpdated', { customerId: 'MW-ok', n: 1 });
      const bad = await h.resolver('MW-bad', 2);
      assert.deepEqual(storyOf(bad), { requests: ['EventRequest:E1'], responses: ['ErrorResponse:E1'] });
      assert.equal(bad[1]!.props.DeadLetterReason, 'Unknown tenant');
      assert.deepEqual(storyOf(await h.resolver('MW-ok', 2)).responses, ['ResolutionResponse:E1']);
      const dead = await h.awaitDeadLetters('crm', 'crm');
      assert.equal(dead.length, 1, 'not dead-lettered a second time');
      assert.equal(dead[0]!.deadLetterReason, 'Unknown tenant');
      assert.equal(calls, 1);
    });
  });

  test('a custom classifier answering DeadLetter: notification then dead letter, no block, no retry', async () => {
    await withHarness(async (h) => {
      const host = h.host({
        endpointId: 'crm',
        retryPolicies: new RetryPolicies().setDefaultPolicy({ maxRetries: 3, baseDelayMs: 100 }),
        classifier: classifier('Adapter', (e) => (e instanceof InvariantViolation ? 'DeadLetter' : 'Retry')),
        handlers: new HandlerRegistry().on<Customer>('CustomerUpdated', (e) => {
          if (e.n === 1) throw new InvariantViolation('total below zero');
        }),
      });
      const pub = h.publisher('shop');
      await pub.publish('CustomerUpdated', { customerId: 'CL-1', n: 1 });
      await pub.publish('CustomerUpdated', { customerId: 'CL-1', n: 2 });
      const records = await h.resolver('CL-1', 4);
      assert.deepEqual(storyOf(records).responses, ['ErrorResponse:E1', 'ResolutionResponse:E2']);
      const note = records.find((r) => r.type === 'ErrorResponse')!;
      assert.equal(note.props.DeadLetterReason, 'Permanent failure: InvariantViolation: total below zero');
      assert.deepEqual(
        await h.resolverRestAfterMarker('CL-1', ['crm'], { scheduledWithinMs: 100 }),
        [],
        'no RetryRequest',
      );
      await host.stop();
      assert.equal((await h.sessionState('crm', 'CL-1')).BlockedByEventId ?? null, null);
    });
  });

  test('payload safety: a null payload and one deeper than 32 levels are dead-lettered, never handled or retried', async () => {
    await withHarness(async (h) => {
      let calls = 0;
      h.host({
        endpointId: 'crm',
        retryPolicies: new RetryPolicies().setDefaultPolicy({ maxRetries: 3, baseDelayMs: 100 }),
        handlers: new HandlerRegistry().on('CustomerUpdated', () => void calls++),
      });
      let deep: unknown = { customerId: 'P-deep' };
      for (let i = 0; i < 40; i++) deep = { inner: deep };
      const bodies: Array<[string, string]> = [
        ['P-null', encodeBody({ EventContent: { EventTypeId: 'CustomerUpdated', EventJson: 'null' } })],
        ['P-deep', eventBody('CustomerUpdated', deep)],
      ];
      for (const [session, body] of bodies) {
        await h.send('crm', {
          sessionId: session,
          body,
          props: {
            To: 'crm',
            From: 'shop',
            MessageType: 'EventRequest',
            EventId: `ev-${session}`,
            EventTypeId: 'CustomerUpdated',
          },
        });
      }
      for (const [session] of bodies) {
        const records = await h.resolver(session, 2);
        assert.deepEqual(
          records.map((r) => r.type),
          ['EventRequest', 'ErrorResponse'],
        );
        assert.match(String(records[1]!.props.DeadLetterReason), /^Permanent failure: /);
        assert.deepEqual(
          await h.resolverRestAfterMarker(session, ['crm'], { scheduledWithinMs: 100 }),
          [],
          `${session}: no retry`,
        );
      }
      assert.equal(calls, 0);
    });
  });
});

describe('pending handoff corners', () => {
  test('markPendingHandoff then throw: the failure wins (ErrorResponse, blocked), no PendingHandoffResponse', async () => {
    await withHarness(async (h) => {
      const host = h.host({
        endpointId: 'crm',
        handlers: new HandlerRegistry().on('CustomerUpdated', (_e, ctx) => {
          ctx.markPendingHandoff('DMF import', 'job-1', 60_000);
          throw new Error('DMF refused the job');
        }),
      });
      await h.publisher('shop').publish('CustomerUpdated', { customerId: 'PH-1', n: 1 });
      const records = await h.resolver('PH-1', 2);
      assert.deepEqual(storyOf(records), { requests: ['EventRequest:E1'], responses: ['ErrorResponse:E1'] });
      assert.equal(records[1]!.content.ErrorContent?.ErrorText, 'DMF refused the job');
      assert.equal(records[1]!.props.HandoffReason, undefined);
      assert.deepEqual(await h.resolverRestAfterMarker('PH-1', ['crm']), []);
      await host.stop();
      assert.equal((await h.sessionState('crm', 'PH-1')).BlockedByEventId, records[0]!.props.EventId);
    });
  });

  test('markPendingHandoff called twice: the last call wins', async () => {
    await withHarness(async (h) => {
      h.host({
        endpointId: 'crm',
        handlers: new HandlerRegistry().on('CustomerUpdated', (_e, ctx) => {
          ctx.markPendingHandoff('first try', 'job-1', 60_000);
          ctx.markPendingHandoff('DMF import', 'job-2', 120_000);
        }),
      });
      await h.publisher('shop').publish('CustomerUpdated', { customerId: 'PH-2', n: 1 });
      const records = await h.resolver('PH-2', 2);
      assert.deepEqual(storyOf(records).responses, ['PendingHandoffResponse:E1']);
      assert.equal(records[1]!.props.HandoffReason, 'DMF import');
      assert.equal(records[1]!.props.ExternalJobId, 'job-2');
    });
  });
});

describe('flow corners', () => {
  test('a heartbeat on a blocked session is answered and neither parks nor releases the session', async () => {
    await withHarness(async (h) => {
      const host = h.host({
        endpointId: 'crm',
        handlers: new HandlerRegistry().on('CustomerUpdated', () => {
          throw new Error('CRM rejected the customer');
        }),
      });
      await h.publisher('shop').publish('CustomerUpdated', { customerId: 'HB-1', n: 1 });
      const first = await h.resolver('HB-1', 2);
      const blocker = first[0]!.props.EventId;
      await h.send('crm', {
        sessionId: 'HB-1',
        body: eventBody(HEARTBEAT_EVENT_TYPE_ID, { ForwardSendTime: new Date().toISOString() }),
        props: {
          To: 'crm',
          From: 'Manager',
          MessageType: 'EventRequest',
          EventId: 'probe-hb-1',
          EventTypeId: HEARTBEAT_EVENT_TYPE_ID,
        },
      });
      const probe = await h.resolver('HB-1', 2);
      assert.deepEqual(
        probe.map((r) => `${r.type}:${String(r.props.EventId)}`),
        ['EventRequest:probe-hb-1', 'ResolutionResponse:probe-hb-1'],
      );
      await host.stop();
      const state = await h.sessionState('crm', 'HB-1');
      assert.equal(state.BlockedByEventId, blocker);
      assert.equal(state.NextDeferralSequence, 0, 'the heartbeat was not parked');
    });
  });

  test('Discard on a resubmission releases the session and replays the parked sibling', async () => {
    await withHarness(async (h) => {
      const calls: string[] = [];
      h.host({
        endpointId: 'crm',
        classifier: classifier('Adapter', (e) => (e instanceof PoisonVersion ? 'Discard' : 'Retry')),
        handlers: new HandlerRegistry().on<Customer>('CustomerUpdated', (e, ctx) => {
          calls.push(`E${e.n}:${ctx.messageType}`);
          if (e.n !== 1) return;
          if (ctx.messageType === MessageType.ResubmissionRequest) throw new PoisonVersion('v1 is retired');
          throw new Error('partner down');
        }),
      });
      h.deferredProcessor('crm');
      const pub = h.publisher('shop');
      await pub.publish('CustomerUpdated', { customerId: 'DR-1', n: 1 });
      await pub.publish('CustomerUpdated', { customerId: 'DR-1', n: 2 });
      const first = await h.resolver('DR-1', 4);
      assert.deepEqual(storyOf(first).responses, ['ErrorResponse:E1', 'DeferralResponse:E2']);
      await h.managerCommand(
        'crm',
        MessageType.ResubmissionRequest,
        { eventId: String(first[0]!.props.EventId), sessionId: 'DR-1', eventTypeId: 'CustomerUpdated' },
        eventBody('CustomerUpdated', { customerId: 'DR-1', n: 1 }),
      );
      const after = await h.resolver('DR-1', 4);
      assert.deepEqual(storyOf(after), {
        requests: ['ResubmissionRequest:E1', 'EventRequest:E2'],
        responses: ['SkipResponse:E1', 'ResolutionResponse:E2'],
      });
      assert.match(
        String(after.find((r) => r.type === 'SkipResponse')!.content.ErrorContent?.ErrorText),
        /^PoisonVersion: v1 is retired Classified as Discard by Adapter\.$/,
      );
      assert.deepEqual(calls, ['E1:EventRequest', 'E1:ResubmissionRequest', 'E2:EventRequest']);
    });
  });

  test('two consumers of one event: a failure at one blocks only its own session, the other completes', async () => {
    await withHarness(async (h) => {
      const billing: string[] = [];
      const crm: string[] = [];
      h.host({
        endpointId: 'billing',
        handlers: new HandlerRegistry().on<{ orderId: string; n: number }>('OrderPlaced', (e) => {
          billing.push(`E${e.n}`);
          throw new Error('ledger closed');
        }),
      });
      h.host({
        endpointId: 'crm',
        handlers: new HandlerRegistry().on<{ orderId: string; n: number }>(
          'OrderPlaced',
          (e) => void crm.push(`E${e.n}`),
        ),
      });
      const pub = h.publisher('shop');
      await pub.publish('OrderPlaced', { orderId: 'TC-1', n: 1 });
      await pub.publish('OrderPlaced', { orderId: 'TC-1', n: 2 });
      // One Resolver session holds both consumers' stories; split them by the answering endpoint.
      const records = await h.resolver('TC-1', 8);
      const answers = (from: string) =>
        storyOf(records.filter((r) => r.props.From === from && r.type !== 'EventRequest')).responses;
      assert.deepEqual(answers('billing'), ['ErrorResponse:E1', 'DeferralResponse:E2']);
      assert.deepEqual(answers('crm'), ['ResolutionResponse:E1', 'ResolutionResponse:E2']);
      assert.deepEqual(billing, ['E1']);
      assert.deepEqual(crm, ['E1', 'E2']);
    });
  });

  test('inbox: after a successful resubmission the original delivery counts as handled (BlockedByMessageId)', async () => {
    await withHarness(async (h) => {
      const calls: string[] = [];
      h.host({
        endpointId: 'crm',
        inbox: new MemoryInboxStore(),
        handlers: new HandlerRegistry().on<Customer>('CustomerUpdated', (e, ctx) => {
          calls.push(`E${e.n}:${ctx.messageType}`);
          if (e.n === 1 && !e.fixed) throw new Error('CRM rejected the customer');
        }),
      });
      const pub = h.publisher('shop');
      const original = await pub.publish('CustomerUpdated', { customerId: 'IB-1', n: 1 });
      const first = await h.resolver('IB-1', 2);
      await h.managerCommand(
        'crm',
        MessageType.ResubmissionRequest,
        { eventId: String(first[0]!.props.EventId), sessionId: 'IB-1', eventTypeId: 'CustomerUpdated' },
        eventBody('CustomerUpdated', { customerId: 'IB-1', n: 1, fixed: true }),
      );
      assert.deepEqual(storyOf(await h.resolver('IB-1', 2)).responses, ['ResolutionResponse:E1']);
      // The same publish again (same payload, so the same MessageId as the delivery that blocked).
      const again = await pub.publish('CustomerUpdated', { customerId: 'IB-1', n: 1 });
      assert.equal(again.messageId, original.messageId);
      const dup = await h.resolver('IB-1', 2);
      assert.deepEqual(storyOf(dup).responses, ['SkipResponse:E1']);
      assert.equal(
        dup.find((r) => r.type === 'SkipResponse')!.content.ErrorContent?.ErrorText,
        'DuplicateDetected',
      );
      assert.deepEqual(calls, ['E1:EventRequest', 'E1:ResubmissionRequest']);
    });
  });
});
