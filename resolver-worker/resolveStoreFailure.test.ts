// How the Resolver classifies a failed store call (classifyStoreFailure in resolve.ts), for the failures that are
// neither transient nor the message's fault: a container it opens on first use (leases, metrics, failure groups)
// that Cosmos will not let it create (ContainerMissingError) or even read (ContainerAccessDeniedError) fails every
// message alike, as a raw 401/403 does. Those are 'denied' (the worker halts and says why) - not 'refused', which
// dead-letters each message as InvalidMessage until the deployment is fixed. Pure logic: the classifier on errors
// made by lib/store's own classes, and by a second copy of the module (a process can hold two).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as StoreErrors from '../lib/store/errors.ts';
import { classifyStoreFailure } from './resolve.ts';

async function otherCopy(): Promise<typeof StoreErrors> {
  return (await import(new URL('../lib/store/errors.ts?copy=resolveStoreFailure', import.meta.url).href)) as typeof StoreErrors;
}

test('a container the Resolver may not create or may not read is denied (403), naming the container: the worker halts', async () => {
  for (const m of [StoreErrors, await otherCopy()]) {
    for (const err of [new m.ContainerMissingError('nimbus', 'leases'), new m.ContainerAccessDeniedError('nimbus', 'leases')]) {
      const failure = classifyStoreFailure(err);
      assert.equal(failure.kind, 'denied', `${err.name}: ${failure.kind}`);
      assert.equal(failure.kind === 'denied' && failure.status, 403, err.name);
      assert.match(failure.kind === 'denied' ? (failure.detail ?? '') : '', /container leases/, `${err.name}: the halt says which container`);
    }
  }
});

test('a raw 401/403 from Cosmos is denied with its status; a store error about the input is refused', () => {
  assert.deepEqual(classifyStoreFailure(Object.assign(new Error('Unauthorized'), { code: 401 })), { kind: 'denied', status: 401 });
  assert.deepEqual(classifyStoreFailure(Object.assign(new Error('Forbidden'), { code: 403 })), { kind: 'denied', status: 403 });
  assert.deepEqual(classifyStoreFailure(new StoreErrors.StoreInputError('bad endpoint id')), { kind: 'refused' });
  assert.deepEqual(classifyStoreFailure(new StoreErrors.CorruptDocumentError('events', 'x', 'bad')), { kind: 'refused' });
  assert.deepEqual(classifyStoreFailure(new StoreErrors.StoreTransientError('timed out')), { kind: 'transient' });
});
