// Scheduled retries end to end (typed exception rules, budget, RetryCount on the wire), a failing resubmission,
// and the settlement rule while the host stops.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventBody, MessageType } from '@nimbus/sdk/contract';
import { HandlerRegistry } from '@nimbus/sdk';
import { RetryPolicies } from '@nimbus/sdk';
import { eventually, storyOf, withHarness } from './harness.ts';

class PartnerUnavailableError extends Error {
  override name = 'PartnerUnavailableError';
}

type Customer = { customerId: string; n: number };

describe('scheduled retries', () => {
  test('a typed exception rule retries until the handler succeeds; RetryCount counts on the wire', async () => {
    await withHarness(async (h) => {
      let failures = 2;
      const retryCounts: number[] = [];
      const retryPolicies = new RetryPolicies().addExceptionRule(PartnerUnavailableError, {
        maxRetries: 3,
        strategy: 'Exponential',
        baseDelayMs: 100,
      });
      const host = h.host({
        endpointId: 'crm',
        retryPolicies,
        handlers: new HandlerRegistry().on<Customer>('CustomerUpdated', (_e, ctx) => {
          retryCounts.push(ctx.retryCount);
          if (failures-- > 0)
            throw new Error('wrapper', { cause: new PartnerUnavailableError('partner answered 503') });
        }),
      });
      await h.publisher('shop').publish('CustomerUpdated', { customerId: 'R-1', n: 1 });
      const records = await h.resolver('R-1', 6);
      assert.deepEqual(storyOf(records), {
        requests: ['EventRequest:E1', 'RetryRequest:E1', 'RetryRequest:E1'],
        responses: ['ErrorResponse:E1', 'ErrorResponse:E1', 'ResolutionResponse:E1'],
      });
      assert.deepEqual(
        records.filter((r) => r.type === 'RetryRequest').map((r) => r.props.RetryCount),
        [1, 2],
      );
      assert.deepEqual(
        records.filter((r) => r.type.endsWith('Response')).map((r) => r.props.RetryCount),
        [0, 1, 2],
      );
      assert.deepEqual(retryCounts, [0, 1, 2]);
      await host.stop();
      assert.equal((await h.sessionState('crm', 'R-1')).BlockedByEventId, null);
    });
  });

  test('each retry is enqueued no earlier than its exponential backoff after the failure (lower bound only)', async () => {
    await withHarness(async (h) => {
      let failures = 2;
      const retryPolicies = new RetryPolicies().setDefaultPolicy({
        maxRetries: 2,
        strategy: 'Exponential',
        baseDelayMs: 400,
      });
      const thrownAt: number[] = [];
      h.host({
        endpointId: 'crm',
        retryPolicies,
        handlers: new HandlerRegistry().on('CustomerUpdated', () => {
          if (failures-- > 0) {
            thrownAt.push(Date.now());
            throw new Error('not yet');
          }
        }),
      });
      await h.publisher('shop').publish('CustomerUpdated', { customerId: 'R-4', n: 1 });
      const records = await h.resolver('R-4', 6);
      const errors = records.filter((r) => r.type === 'ErrorResponse');
      const retries = records.filter((r) => r.type === 'RetryRequest');
      assert.equal(errors.length, 2);
      assert.equal(retries.length, 2);
      // The retry is scheduled at (a moment after the handler threw) + backoff, so the broker (in this process, same
      // clock) must not enqueue it earlier than 400 ms, then 800 ms, after the throw.
      const gap = (i: number) => retries[i]!.enqueuedTime!.getTime() - thrownAt[i]!;
      assert.ok(gap(0) >= 400 - 1, `first retry after ${gap(0)} ms`);
      assert.ok(gap(1) >= 800 - 1, `second retry after ${gap(1)} ms`);
    });
  });

  test('an error no rule matches is not retried; an exhausted budget leaves the session blocked', async () => {
    await withHarness(async (h) => {
      const retryPolicies = new RetryPolicies().addExceptionRule(PartnerUnavailableError, {
        maxRetries: 1,
        baseDelayMs: 100,
      });
      const host = h.host({
        endpointId: 'crm',
        retryPolicies,
        handlers: new HandlerRegistry().on<Customer>('CustomerUpdated', (e) => {
          throw e.n === 1 ? new PartnerUnavailableError('still down') : new Error('data rejected');
        }),
      });
      const pub = h.publisher('shop');
      await pub.publish('CustomerUpdated', { customerId: 'R-2a', n: 1 });
      await pub.publish('CustomerUpdated', { customerId: 'R-2b', n: 2 });
      const a = await h.resolver('R-2a', 4);
      assert.deepEqual(storyOf(a), {
        requests: ['EventRequest:E1', 'RetryRequest:E1'],
        responses: ['ErrorResponse:E1', 'ErrorResponse:E1'],
      });
      const b = await h.resolver('R-2b', 2);
      assert.deepEqual(storyOf(b), { requests: ['EventRequest:E2'], responses: ['ErrorResponse:E2'] });
      assert.deepEqual(
        await h.resolverRestAfterMarker('R-2a', ['crm'], { scheduledWithinMs: 100 }),
        [],
        'no second RetryRequest after the budget is spent',
      );
      await host.stop();
      assert.equal((await h.sessionState('crm', 'R-2a')).BlockedByEventId, a[0]!.props.EventId);
      assert.equal((await h.sessionState('crm', 'R-2b')).BlockedByEventId, b[0]!.props.EventId);
    });
  });

  test('a failing resubmission answers Failed, schedules no retry, and the block stays', async () => {
    await withHarness(async (h) => {
      // The resubmission fails with an error a rule would retry (3 retries, 100 ms apart): only the rule that an
      // operator's resubmission is exactly one attempt keeps a RetryRequest from being scheduled. The first delivery
      // fails with an error no rule matches, so nothing is scheduled before the resubmission either.
      const retryPolicies = new RetryPolicies().addExceptionRule(PartnerUnavailableError, {
        maxRetries: 3,
        baseDelayMs: 100,
      });
      const host = h.host({
        endpointId: 'crm',
        retryPolicies,
        handlers: new HandlerRegistry().on('CustomerUpdated', (_e, ctx) => {
          if (ctx.messageType === MessageType.ResubmissionRequest)
            throw new PartnerUnavailableError('still wrong');
          throw new Error('data rejected');
        }),
      });
      await h.publisher('shop').publish('CustomerUpdated', { customerId: 'R-3', n: 1 });
      const first = await h.resolver('R-3', 2);
      const eventId = String(first[0]!.props.EventId);
      await h.managerCommand(
        'crm',
        MessageType.ResubmissionRequest,
        { eventId, sessionId: 'R-3', eventTypeId: 'CustomerUpdated' },
        eventBody('CustomerUpdated', { customerId: 'R-3', n: 1 }),
      );
      const after = await h.resolver('R-3', 2);
      assert.deepEqual(storyOf(after), {
        requests: ['ResubmissionRequest:E1'],
        responses: ['ErrorResponse:E1'],
      });
      assert.equal(after[1]!.content.ErrorContent?.ErrorText, 'still wrong');
      // A RetryRequest scheduled up to 100 ms ahead would reach the Resolver before a marker scheduled that far.
      assert.deepEqual(
        await h.resolverRestAfterMarker('R-3', ['crm'], { scheduledWithinMs: 100 }),
        [],
        'no RetryRequest',
      );
      await host.stop();
      assert.equal((await h.sessionState('crm', 'R-3')).BlockedByEventId, eventId);
    });
  });
});

describe('stopping', () => {
  test('a handler that gets its outcome while the host stops still has its delivery settled in full', async () => {
    await withHarness(async (h) => {
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      let started = false;
      const host = h.host({
        endpointId: 'crm',
        handlers: new HandlerRegistry().on('CustomerUpdated', async () => {
          started = true;
          await gate;
          throw new Error('failed after stop was requested');
        }),
      });
      await h.publisher('shop').publish('CustomerUpdated', { customerId: 'ST-1', n: 1 });
      await eventually(() => (started ? true : undefined), 'the handler to start');
      const stopping = host.stop();
      release();
      await stopping;
      const records = await h.resolver('ST-1', 2);
      assert.deepEqual(storyOf(records), { requests: ['EventRequest:E1'], responses: ['ErrorResponse:E1'] });
      const state = await h.sessionState('crm', 'ST-1');
      assert.equal(state.BlockedByEventId, records[0]!.props.EventId);
    });
  });
});
