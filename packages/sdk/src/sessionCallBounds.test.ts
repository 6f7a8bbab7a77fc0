// The default bound on a delivery's broker calls against the host's own session connection's retries: a call that
// is still retrying as the client should must not be given up (and its healthy connection taken for lost).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { RetryMode } from '@azure/service-bus';
import {
  defaultOperationTimeoutMs,
  dedicatedRetryOptions,
  retryWorstCaseMs,
} from './sessionCallBounds.ts';

describe('session call bounds', () => {
  test('the worst case follows the client’s retries: its defaults, fixed and exponential delays', () => {
    // Only a timeout set: 4 attempts of it and 3 sleeps of the client's default 30 s.
    assert.equal(retryWorstCaseMs({ timeoutInMs: 3000 }), 4 * 3000 + 3 * 30_000);
    assert.equal(retryWorstCaseMs({ timeoutInMs: 1000, maxRetries: 0 }), 1000);
    assert.equal(
      retryWorstCaseMs({ timeoutInMs: 1000, maxRetries: 2, retryDelayInMs: 100, mode: RetryMode.Exponential }),
      3 * 1000 + 1.2 * 100 * 1 + 1.2 * 100 * 3,
    );
  });

  for (const acceptWaitMs of [undefined, 1000, 3000, 10_000]) {
    test(`acceptWaitMs ${acceptWaitMs ?? 'default'}: the default bound is above the dedicated connection's worst case`, () => {
      const worst = retryWorstCaseMs(dedicatedRetryOptions(acceptWaitMs));
      assert.ok(
        defaultOperationTimeoutMs(acceptWaitMs) > worst,
        `default bound ${defaultOperationTimeoutMs(acceptWaitMs)} ms, client worst case ${worst} ms`,
      );
    });
  }
});
