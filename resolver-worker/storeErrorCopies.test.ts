// The Resolver tells store errors apart (throttled, closing, transient, refused; an outage or not) for errors of
// any copy of lib/store/errors.ts: a process can hold two (the console's bundle holds several, a launcher its own),
// and `instanceof` knows only the classes of the copy it imported. Pure logic: errors made by a second copy (a query
// string makes the loader evaluate the module again), classified as the same errors of this copy are.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import * as StoreErrors from '../lib/store/errors.ts';
import { storeErrorSamples } from '../lib/store/testing/storeErrorSamples.ts';
import { StoreOutage } from './outage.ts';
import { classifyStoreFailure } from './resolve.ts';

async function otherCopy(): Promise<typeof StoreErrors> {
  const copy = (await import(new URL('../lib/store/errors.ts?copy=resolver', import.meta.url).href)) as typeof StoreErrors;
  assert.notEqual(copy.StoreError, StoreErrors.StoreError, 'a second copy of the module');
  return copy;
}

test("a store failure of another copy's class is classified as this copy's (throttled, closed, transient, refused)", async () => {
  const own = storeErrorSamples(StoreErrors);
  const differ = [...storeErrorSamples(await otherCopy())].filter(
    ([name, err]) => JSON.stringify(classifyStoreFailure(err)) !== JSON.stringify(classifyStoreFailure(own.get(name))),
  );
  assert.deepEqual(differ.map(([name, err]) => `${name}: ${classifyStoreFailure(err).kind}`), []);
  const copy = await otherCopy();
  assert.deepEqual(classifyStoreFailure(new copy.StoreClosedError('the store is closing')), { kind: 'closed' });
  assert.deepEqual(classifyStoreFailure(new copy.StoreThrottledError('read', 700)), { kind: 'throttled', retryAfterMs: 700 });
  assert.deepEqual(classifyStoreFailure(new copy.CorruptDocumentError('events', 'x', 'bad')), { kind: 'refused' });
});

/** What the outage circuit makes of a probe failing with `err`: true when it takes the store for down. */
async function probeSaysDown(err: Error): Promise<boolean> {
  const stop = new AbortController();
  const outage = new StoreOutage({ probe: () => Promise.reject(err), probeEveryMs: 60_000, signal: stop.signal, log: pino({ level: 'silent' }) });
  try {
    return await outage.confirmDown();
  } finally {
    stop.abort();
    await outage.closed();
  }
}

test("a probe failing with another copy's store error opens the outage circuit as this copy's would", async () => {
  const own = storeErrorSamples(StoreErrors);
  const differ: string[] = [];
  for (const [name, err] of storeErrorSamples(await otherCopy())) {
    const down = await probeSaysDown(err);
    if (down !== (await probeSaysDown(own.get(name)!))) differ.push(`${name}: ${down ? 'down' : 'up'}`);
  }
  assert.deepEqual(differ, []);
  // Transient and not a 429: the store does not answer. A 429 is an answer (the throttle budget's case).
  const copy = await otherCopy();
  assert.equal(await probeSaysDown(new copy.StoreClosedError('the store is closing')), true);
  assert.equal(await probeSaysDown(new copy.StoreTransientError('store timed out during probe')), true);
  assert.equal(await probeSaysDown(new copy.StoreThrottledError('probe', 100)), false);
});
