// One instance of every StoreError class a copy of lib/store/errors.ts exports, for the tests that check how such
// errors are recognised across copies of the module (the console's bundle holds several). Exhaustive by
// construction: a StoreError subclass exported without a sample here throws, so a new class cannot be left out of
// those tests.
import type * as StoreErrors from '../errors.ts';

type ErrorsModule = typeof StoreErrors;

/** Export name → one instance made by that module's class of that name. */
export function storeErrorSamples(m: ErrorsModule): Map<string, StoreErrors.StoreError> {
  const samples = new Map<string, StoreErrors.StoreError>([
    ['StoreError', new m.StoreError('store failed', false)],
    ['StoreThrottledError', new m.StoreThrottledError('read', 1500)],
    ['StoreTransientError', new m.StoreTransientError('store timed out during read')],
    ['StoreClosedError', new m.StoreClosedError('the store is closing')],
    ['CorruptDocumentError', new m.CorruptDocumentError('events', 'x', 'bad')],
    ['StoreInputError', new m.StoreInputError('bad endpoint id')],
    ['CounterRecoveryIncompleteError', new m.CounterRecoveryIncompleteError('owner-1', 2, ['billing'], 'timed out')],
    ['CountsRecoveredError', new m.CountsRecoveredError('billing')],
    ['ContainerMissingError', new m.ContainerMissingError('nimbus', 'agentPublishes')],
    ['ContainerAccessDeniedError', new m.ContainerAccessDeniedError('nimbus', 'agentPublishes')],
  ]);
  // Export names, not class names: a minified copy's classes are called `n`, `t`, ...
  for (const [exported, value] of Object.entries(m)) {
    const isStoreErrorClass =
      typeof value === 'function' && (value === m.StoreError || value.prototype instanceof m.StoreError);
    if (!isStoreErrorClass) continue;
    const sample = samples.get(exported);
    if (sample?.constructor !== value) throw new Error(`storeErrorSamples: no sample of the exported class ${exported}`);
  }
  return samples;
}
