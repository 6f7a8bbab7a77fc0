// The liveness warnings log a store error's own message, and of anything else its name and status only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CounterRecoveryIncompleteError, StoreThrottledError } from '../lib/store/index.ts';
import type * as StoreErrors from '../lib/store/errors.ts';
import { logSafeError } from './liveness.ts';

test("a service's own error text is not logged; the store's errors are", () => {
  const cosmos = Object.assign(new Error('Forbidden: account nimbus-prod-eu rejected the request from 10.0.0.4'), { code: 403 });
  assert.equal(logSafeError(cosmos), 'Error (403)');
  assert.equal(logSafeError(Object.assign(new Error('secret text'), { name: 'RestError', statusCode: 400 })), 'RestError (400)');
  assert.equal(logSafeError(new TypeError('x of undefined')), 'TypeError');
  assert.equal(logSafeError('a string'), 'unknown error');
  const throttled = new StoreThrottledError('recoverCounters', 100);
  assert.equal(logSafeError(throttled), 'store throttled (429) during recoverCounters; retry after 100 ms');
  assert.equal(logSafeError(new CounterRecoveryIncompleteError('host:1:ab', 2, ['billingendpoint'], 'billingendpoint')), 'counter recovery of host:1:ab failed on 1 endpoint(s) (first: billingendpoint)');
});

// A process can hold two copies of lib/store (the console's bundle holds several, a launcher its own): an error of
// the other copy is still the store's, and is logged by its message, as server/http.ts recognises it (isStoreError).
test("another copy of the store's errors module: its errors are logged by their message too", async () => {
  // A query string makes the loader evaluate the module again: a second copy, with its own classes.
  const otherCopy = new URL('../lib/store/errors.ts?copy=2', import.meta.url).href;
  const other = (await import(otherCopy)) as typeof StoreErrors;
  const throttled = new other.StoreThrottledError('recoverCounters', 100);
  assert.equal(throttled instanceof StoreThrottledError, false, "the other copy's class");
  assert.equal(logSafeError(throttled), 'store throttled (429) during recoverCounters; retry after 100 ms');
});
