// withLinkedSignal: the child follows the parent (with its reason) and leaves no listener on it after the call.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { withLinkedSignal } from './abortScope.ts';

describe('withLinkedSignal', () => {
  test('the child aborts with the parent’s reason while the call runs', async () => {
    const parent = new AbortController();
    const reason = new Error('stopping');
    const seen = await withLinkedSignal(parent.signal, async (signal) => {
      assert.equal(signal.aborted, false);
      parent.abort(reason);
      return signal.reason as unknown;
    });
    assert.equal(seen, reason);
  });

  test('an already aborted parent gives an already aborted child', async () => {
    const parent = new AbortController();
    parent.abort('gone');
    const child = await withLinkedSignal(parent.signal, async (signal) => signal);
    assert.equal(child.aborted, true);
    assert.equal(child.reason, 'gone');
  });

  test('no listener stays on the parent after the call, also when it throws', async () => {
    const parent = new AbortController();
    await withLinkedSignal(parent.signal, async () => {
      assert.equal(getEventListeners(parent.signal, 'abort').length, 1);
    });
    await assert.rejects(
      withLinkedSignal(parent.signal, async () => {
        throw new Error('call failed');
      }),
      /call failed/,
    );
    assert.equal(getEventListeners(parent.signal, 'abort').length, 0);
  });

  test('with several parents the child follows the first that aborts, and leaves no listener on any', async () => {
    const stop = new AbortController();
    const circuit = new AbortController();
    const reason = new Error('circuit opened');
    const seen = await withLinkedSignal([stop.signal, circuit.signal], async (signal) => {
      assert.equal(getEventListeners(stop.signal, 'abort').length, 1);
      assert.equal(getEventListeners(circuit.signal, 'abort').length, 1);
      circuit.abort(reason);
      stop.abort(new Error('stopping'));
      return signal.reason as unknown;
    });
    assert.equal(seen, reason);
    assert.equal(getEventListeners(stop.signal, 'abort').length, 0);
    assert.equal(getEventListeners(circuit.signal, 'abort').length, 0);
  });
});
