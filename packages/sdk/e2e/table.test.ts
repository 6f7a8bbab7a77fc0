// Rows of the error-handling tables end to end: the default permanent classifier, a raw middleware throw, and the
// Discard and DeadLetter dispositions on the retry path.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { classifier, defaultPermanentFailureClassifier } from '@nimbus/sdk';
import { HandlerRegistry } from '@nimbus/sdk';
import type { PipelineBehavior } from '@nimbus/sdk';
import { RetryPolicies } from '@nimbus/sdk';
import { storyOf, withHarness } from './harness.ts';

type Customer = { customerId: string; n: number };
class RetiredVersion extends Error {
  override name = 'RetiredVersion';
}
class CorruptRecord extends Error {
  override name = 'CorruptRecord';
}

describe('error-handling table', () => {
  test('default permanent classifier: a SyntaxError from the handler is dead-lettered, not retried', async () => {
    await withHarness(async (h) => {
      let calls = 0;
      h.host({
        endpointId: 'crm',
        classifier: defaultPermanentFailureClassifier(),
        retryPolicies: new RetryPolicies().setDefaultPolicy({ maxRetries: 3, baseDelayMs: 100 }),
        handlers: new HandlerRegistry().on('CustomerUpdated', () => {
          calls++;
          JSON.parse('{partner sent html');
        }),
      });
      await h.publisher('shop').publish('CustomerUpdated', { customerId: 'TB-1', n: 1 });
      const records = await h.resolver('TB-1', 2);
      assert.deepEqual(
        records.map((r) => r.type),
        ['EventRequest', 'ErrorResponse'],
      );
      assert.match(String(records[1]!.props.DeadLetterReason), /^Permanent failure: SyntaxError: /);
      assert.deepEqual(await h.resolverRestAfterMarker('TB-1', ['crm'], { scheduledWithinMs: 100 }), []);
      assert.equal(calls, 1);
    });
  });

  test('a raw middleware throw dead-letters the delivery with a notification; the handler never runs', async () => {
    await withHarness(async (h) => {
      let calls = 0;
      const serviceMode: PipelineBehavior = async (ctx, next) => {
        if (ctx.message.eventTypeId === 'CustomerUpdated') throw new Error('endpoint is in service mode');
        await next();
      };
      h.host({
        endpointId: 'crm',
        behaviors: [serviceMode],
        handlers: new HandlerRegistry().on('CustomerUpdated', () => void calls++),
      });
      await h.publisher('shop').publish('CustomerUpdated', { customerId: 'TB-2', n: 1 });
      const records = await h.resolver('TB-2', 2);
      assert.equal(records[1]!.props.DeadLetterReason, 'Failed to handle message.');
      assert.equal(records[1]!.props.DeadLetterErrorDescription, 'endpoint is in service mode');
      const dead = await h.awaitDeadLetters('crm', 'crm');
      assert.equal(dead.length, 1);
      assert.equal(calls, 0);
    });
  });

  test('Discard on the retry path releases the session and replays what was parked', async () => {
    await withHarness(async (h) => {
      let attempts = 0;
      h.host({
        endpointId: 'crm',
        // Long enough for E2 to arrive and park before the retry comes.
        retryPolicies: new RetryPolicies().setDefaultPolicy({ maxRetries: 2, baseDelayMs: 2000 }),
        classifier: classifier('Adapter', (e) => (e instanceof RetiredVersion ? 'Discard' : 'Retry')),
        handlers: new HandlerRegistry().on<Customer>('CustomerUpdated', (e) => {
          if (e.n !== 1) return;
          attempts++;
          throw attempts === 1 ? new Error('partner down') : new RetiredVersion('v1 customers are retired');
        }),
      });
      h.deferredProcessor('crm');
      const pub = h.publisher('shop');
      await pub.publish('CustomerUpdated', { customerId: 'TB-3', n: 1 });
      await h.resolver('TB-3', 2);
      await pub.publish('CustomerUpdated', { customerId: 'TB-3', n: 2 });
      const rest = await h.resolver('TB-3', 6);
      assert.deepEqual(storyOf(rest).responses, [
        'DeferralResponse:E2',
        'SkipResponse:E1',
        'ResolutionResponse:E2',
      ]);
      assert.match(
        String(rest.find((r) => r.type === 'SkipResponse')!.content.ErrorContent?.ErrorText),
        /Classified as Discard by Adapter\.$/,
      );
    });
  });

  test('DeadLetter on the retry path dead-letters the retry and leaves the session blocked for the operator', async () => {
    await withHarness(async (h) => {
      let attempts = 0;
      const host = h.host({
        endpointId: 'crm',
        retryPolicies: new RetryPolicies().setDefaultPolicy({ maxRetries: 2, baseDelayMs: 300 }),
        classifier: classifier('Adapter', (e) => (e instanceof CorruptRecord ? 'DeadLetter' : 'Retry')),
        handlers: new HandlerRegistry().on<Customer>('CustomerUpdated', () => {
          attempts++;
          throw attempts === 1 ? new Error('partner down') : new CorruptRecord('record 7 is corrupt');
        }),
      });
      await h.publisher('shop').publish('CustomerUpdated', { customerId: 'TB-4', n: 1 });
      const records = await h.resolver('TB-4', 4);
      assert.deepEqual(storyOf(records), {
        requests: ['EventRequest:E1', 'RetryRequest:E1'],
        responses: ['ErrorResponse:E1', 'ErrorResponse:E1'],
      });
      assert.equal(
        records.filter((r) => r.type === 'ErrorResponse')[1]!.props.DeadLetterReason,
        'Permanent failure: CorruptRecord: record 7 is corrupt',
      );
      await host.stop();
      assert.equal((await h.sessionState('crm', 'TB-4')).BlockedByEventId, records[0]!.props.EventId);
    });
  });
});
