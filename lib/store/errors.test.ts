import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
// esbuild comes with tsx (a pinned dev dependency); used here only to minify one module as a production bundle does.
import { transform } from 'esbuild';
import * as StoreErrors from './errors.ts';
import { storeErrorSamples } from './testing/storeErrorSamples.ts';

// The console's production bundle minifies class names (`class n extends t`), and holds several copies of this
// module (one per route chunk, one in the launcher). server/http.ts recognises a store error made by another copy
// with isStoreError, and tells StoreInputError and StoreThrottledError by their `name` (the Resolver's
// isStoreErrorNamed checks the mark and the name together): both must survive minification, for every exported class (storeErrorSamples fails on
// a class it has no sample of).
test('every store error of a minified copy keeps its name and is recognised as a store error', async () => {
  const source = await readFile(new URL('./errors.ts', import.meta.url), 'utf8');
  const { code } = await transform(source, { loader: 'ts', format: 'esm', minify: true });
  const minified = (await import(`data:text/javascript;base64,${Buffer.from(code).toString('base64')}`)) as typeof StoreErrors;
  const samples = storeErrorSamples(minified);
  const own = storeErrorSamples(StoreErrors);
  for (const [name, err] of samples) {
    assert.equal(err.name, name);
    assert.equal(err instanceof StoreErrors.StoreError, false, `${name}: another copy's class`);
    assert.equal(StoreErrors.isStoreError(err), true, `${name} of another copy is a store error`);
    if (name !== 'StoreError') {
      assert.equal(StoreErrors.isStoreErrorNamed(err, name as 'StoreInputError'), true, `${name} of another copy is told by its name`);
    }
    assert.equal(err.transient, own.get(name)?.transient, `${name}: transient as this copy's`);
  }
});

test('isStoreError: an error of the same name and shape without the mark is not a store error', () => {
  class Lookalike extends Error {
    override readonly name = 'StoreTransientError';
    readonly transient = true;
  }
  assert.equal(StoreErrors.isStoreError(new Lookalike('x')), false);
  assert.equal(StoreErrors.isStoreErrorNamed(new Lookalike('x'), 'StoreTransientError'), false);
  assert.equal(StoreErrors.isStoreErrorNamed(new StoreErrors.StoreClosedError('closing'), 'StoreTransientError'), false);
  assert.equal(StoreErrors.isStoreError({ name: 'StoreError', transient: true, message: 'x' }), false);
  assert.equal(StoreErrors.isStoreError(new StoreErrors.StoreClosedError('closing')), true);
  // The mark does not show when an error is serialised or its fields are listed (name and transient are own fields).
  assert.deepEqual(Object.keys(new StoreErrors.StoreInputError('bad')).sort(), ['name', 'transient']);
});
