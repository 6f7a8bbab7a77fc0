import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import {
  classifier,
  classifySafely,
  defaultPermanentFailureClassifier,
  retryEverythingClassifier,
} from './dispositions.ts';
import { toOutcome } from './handlerOutcome.ts';
import { EventHandlerNotFoundError, PermanentFailureError, TransientError } from './errors.ts';

class CustomerValidationError extends Error {
  override name = 'CustomerValidationError';
}
class OrderDeserializationFailure extends Error {
  override name = 'OrderDeserializationFailure';
}
class NotSupportedError extends Error {
  override name = 'NotSupportedError';
}
class PartnerDown extends Error {}

describe('default permanent classifier', () => {
  const c = defaultPermanentFailureClassifier();
  const classify = (e: unknown) => c.classify(e, 'OrderPlaced', 'billing');

  test('malformed-message kinds dead-letter', () => {
    let jsonError: unknown;
    try {
      JSON.parse('{oops');
    } catch (e) {
      jsonError = e;
    }
    assert.equal(classify(jsonError), 'DeadLetter');
    assert.equal(classify(new TypeError('Cannot read properties of undefined')), 'DeadLetter');
    assert.equal(classify(new RangeError('Invalid time value')), 'DeadLetter');
    assert.equal(classify(new NotSupportedError('v1 payloads')), 'DeadLetter');
    assert.equal(classify(new CustomerValidationError('bad email')), 'DeadLetter');
    assert.equal(classify(new OrderDeserializationFailure('x')), 'DeadLetter');
    const zodError = z.object({ a: z.string() }).safeParse({}).error;
    assert.equal(classify(zodError), 'DeadLetter');
  });

  test('an inner cause counts; message text does not', () => {
    assert.equal(classify(new Error('wrapper', { cause: new SyntaxError('x') })), 'DeadLetter');
    assert.equal(classify(new Error('Validation failed upstream')), 'Retry');
    assert.equal(classify(new PartnerDown('503')), 'Retry');
  });

  test('extensible by type and name pattern', () => {
    const ext = defaultPermanentFailureClassifier({ types: [PartnerDown], namePatterns: ['Poison'] });
    assert.equal(ext.classify(new PartnerDown('x'), 'A', 'e'), 'DeadLetter');
    class PoisonPill extends Error {
      override name = 'PoisonPill';
    }
    assert.equal(ext.classify(new PoisonPill('x'), 'A', 'e'), 'DeadLetter');
  });

  test('without a classifier everything ordinary is retried', () => {
    assert.equal(retryEverythingClassifier.classify(new SyntaxError('x'), 'A', 'e'), 'Retry');
  });

  test('a classifier that throws or answers nonsense falls back to Retry', () => {
    const broken = classifier('Broken', () => {
      throw new Error('bug');
    });
    assert.equal(classifySafely(broken, new Error('x'), 'A', 'e'), 'Retry');
    const odd = classifier('Odd', () => 'Maybe' as never);
    assert.equal(classifySafely(odd, new Error('x'), 'A', 'e'), 'Retry');
  });
});

describe('handler outcome', () => {
  const opts = { classifier: defaultPermanentFailureClassifier(), eventTypeId: 'A', endpointId: 'e' };
  test('typed errors choose their path before the classifier', () => {
    assert.equal(toOutcome({ ok: false, error: new TransientError('lock lost') }, opts).kind, 'transient');
    assert.equal(
      toOutcome({ ok: false, error: new EventHandlerNotFoundError('none') }, opts).kind,
      'notFound',
    );
    assert.equal(toOutcome({ ok: false, error: new PermanentFailureError('bad') }, opts).kind, 'permanent');
    const failed = toOutcome({ ok: false, error: new SyntaxError('x') }, opts);
    assert.deepEqual(failed.kind === 'failed' && [failed.disposition, failed.classifierName], [
      'DeadLetter',
      'DefaultPermanentFailureClassifier',
    ]);
  });

  test("only the processor's own cancellation leaves the message unsettled", () => {
    const controller = new AbortController();
    const abortError = new DOMException('aborted', 'AbortError');
    assert.equal(
      toOutcome({ ok: false, error: abortError }, { ...opts, signal: controller.signal }).kind,
      'failed',
      'signal not aborted: ordinary failure',
    );
    controller.abort();
    assert.equal(
      toOutcome({ ok: false, error: abortError }, { ...opts, signal: controller.signal }).kind,
      'failed',
      "an AbortError that is not the signal's reason (the handler's own abort) is a failure",
    );
    assert.equal(
      toOutcome(
        { ok: false, error: new Error('aborted', { cause: controller.signal.reason }) },
        { ...opts, signal: controller.signal },
      ).kind,
      'cancelled',
      "the signal's reason as a cause",
    );
    assert.equal(
      toOutcome({ ok: false, error: controller.signal.reason }, { ...opts, signal: controller.signal }).kind,
      'cancelled',
    );
  });

  test('a handoff is carried on success', () => {
    const o = toOutcome({ ok: true, handoff: { reason: 'DMF import' } }, opts);
    assert.deepEqual(o, { kind: 'success', handoff: { reason: 'DMF import' } });
  });
});
