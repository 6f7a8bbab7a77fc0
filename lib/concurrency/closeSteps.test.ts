// closeSteps: the bounded, run-every-step close of the test harnesses (pure logic, no servers). A hung step is a
// promise that never settles, so the bound below decides nothing about speed: the step can only end by the bound.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSteps, CloseStepsError } from './closeSteps.ts';

const never = () => new Promise<void>(() => undefined);

test('runs every step in order when all end', async () => {
  const ran: string[] = [];
  await closeSteps(
    ['a', 'b', 'c'].map((name) => ({ name, run: async () => void ran.push(name) })),
    60_000,
  );
  assert.deepEqual(ran, ['a', 'b', 'c']);
});

test('a step that throws (or rejects) is named, and the steps after it still run before the error', async () => {
  const ran: string[] = [];
  const err = await closeSteps(
    [
      { name: 'first', run: () => void ran.push('first') },
      {
        name: 'throws',
        run: () => {
          throw new TypeError('sync boom');
        },
      },
      { name: 'rejects', run: () => Promise.reject(new Error('async boom')) },
      { name: 'last', run: () => void ran.push('last') },
    ],
    60_000,
  ).then(
    () => assert.fail('closeSteps resolved'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof CloseStepsError);
  assert.deepEqual(err.failures, ['throws: TypeError: sync boom', 'rejects: Error: async boom']);
  assert.match(err.message, /throws: TypeError: sync boom; rejects: Error: async boom/);
  assert.deepEqual(ran, ['first', 'last']);
});

test('a step that never ends is named after its bound, and the steps after it still run', async () => {
  const ran: string[] = [];
  await assert.rejects(
    closeSteps(
      [
        { name: 'hangs', run: never },
        { name: 'after', run: () => void ran.push('after') },
      ],
      20,
    ),
    (e: unknown) => e instanceof CloseStepsError && e.failures.length === 1 && e.failures[0] === 'hangs: did not end within 20 ms',
  );
  assert.deepEqual(ran, ['after']);
});
