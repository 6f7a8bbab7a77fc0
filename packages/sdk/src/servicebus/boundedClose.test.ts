// boundedClose: a close that never settles (rhea-promise's on a dropped connection) is abandoned at its bound with
// a warning and leaves no timer behind, so the caller closes the rest and the process can exit; a close that ends
// in time is answered as it ended. The real close meeting a drop: packages/sdk/e2e/closeDrop.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { boundedClose, type CloseLogger } from './boundedClose.ts';

function recording(): { warned: Array<{ details: object; message: string }>; logger: CloseLogger } {
  const warned: Array<{ details: object; message: string }> = [];
  return { warned, logger: { warn: (details, message) => warned.push({ details, message }) } };
}

const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

test('a close that ends in time is answered "closed", with nothing logged', async () => {
  const { warned, logger } = recording();
  assert.equal(await boundedClose('closing the sender', async () => undefined, { timeoutMs: 60_000, logger }), 'closed');
  assert.deepEqual(warned, []);
});

test('a close that fails in time rejects with its error', async () => {
  const failure = new Error('link detached with an error');
  await assert.rejects(
    boundedClose('closing the sender', () => Promise.reject(failure), { timeoutMs: 60_000 }),
    (e) => e === failure,
  );
  // A close that throws at once fails the same way.
  await assert.rejects(
    boundedClose('closing the sender', () => {
      throw failure;
    }),
    (e) => e === failure,
  );
});

test('a close that never settles is abandoned at its bound with a warning, leaving no timer behind', async () => {
  const { warned, logger } = recording();
  const before = timers();
  const outcome = await boundedClose('closing the sender', () => new Promise<never>(() => undefined), {
    timeoutMs: 20,
    logger,
    details: { endpointId: 'crm' },
  });
  assert.equal(outcome, 'abandoned');
  assert.equal(warned.length, 1);
  assert.deepEqual(warned[0]!.details, { endpointId: 'crm', close: 'closing the sender', timeoutMs: 20 });
  assert.match(warned[0]!.message, /^closing the sender did not end within 20 ms .*abandoned/);
  // The bound's timer is gone: nothing of the wait keeps the process alive.
  assert.equal(timers(), before);
});

test('a close abandoned that fails later is dropped (no unhandled rejection)', async () => {
  let fail!: (e: Error) => void;
  const late = new Promise<never>((_, reject) => (fail = reject));
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  try {
    assert.equal(await boundedClose('closing the client', () => late, { timeoutMs: 1 }), 'abandoned');
    fail(new Error('connection closed'));
    // An unhandled rejection is reported after the microtasks of this turn; a macrotask later it would have been.
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(unhandled, []);
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
});

test('a bound above the longest timer delay (or Infinity) waits for the close instead of giving up after 1 ms', async () => {
  // Node fires a setTimeout over 2^31-1 ms after 1 ms: before, `closeTimeoutMs: Infinity` abandoned a healthy close.
  const slow = () => new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(await boundedClose('closing the sender', slow, { timeoutMs: 2 ** 31 }), 'closed');
  assert.equal(await boundedClose('closing the client', slow, { timeoutMs: Number.POSITIVE_INFINITY }), 'closed');
});
