// The seeders' bulk-create retry policy, against a fake bulk call (pure logic: which operations are sent again,
// how long it waits, when it gives up). Results are shaped as @azure/cosmos 4.9 returns them: a landed operation
// as `response` with its `statusCode`, a failed one as `error` (an ErrorResponse) with its status in `code`, a
// throttled one's hint in `retryAfterInMs`; a batch whose request failed has every operation's error `code` 500.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { BulkOperationResult, OperationInput } from '@azure/cosmos';
import { bulkCreate, type BulkTarget } from './bulkRetry.ts';

type Answer = { status: number; retryAfterInMs?: number; message?: string };

function op(id: string): OperationInput {
  return { operationType: 'Create', partitionKey: id, resourceBody: { id } };
}
const idOf = (o: OperationInput) => (o as unknown as { resourceBody: { id: string } }).resourceBody.id;

function result(o: OperationInput, a: Answer): BulkOperationResult {
  const ok = a.status >= 200 && a.status < 300;
  return (ok
    ? { operationInput: o, response: { statusCode: a.status, requestCharge: 1 } }
    : {
        operationInput: o,
        error: Object.assign(new Error(a.message ?? `status ${a.status}`), { code: a.status, retryAfterInMs: a.retryAfterInMs }),
      }) as unknown as BulkOperationResult;
}

/** A fake bulk call: `answer(id, send)` says what each operation gets on the n-th send (1-based); sends are recorded. */
function fakeTarget(answer: (id: string, send: number) => Answer): BulkTarget & { sent: string[][] } {
  const sent: string[][] = [];
  return {
    sent,
    items: {
      executeBulkOperations: async (ops) => {
        sent.push(ops.map(idOf));
        return ops.map((o) => result(o, answer(idOf(o), sent.length)));
      },
    },
  };
}

function recorder() {
  const waits: number[] = [];
  return { waits, sleep: async (ms: number) => void waits.push(ms) };
}

test('throttled operations are sent again, alone, after the retry-after the server gave when it is longer than the backoff', async () => {
  const t = fakeTarget((id, send) => (send === 1 && id !== 'a' ? { status: 429, retryAfterInMs: id === 'b' ? 1500 : 300 } : { status: 201 }));
  const s = recorder();
  const r = await bulkCreate(t, [op('a'), op('b'), op('c')], { sleep: s.sleep });
  assert.deepEqual(t.sent, [['a', 'b', 'c'], ['b', 'c']]);
  assert.deepEqual(s.waits, [1500], 'the longest hint of the throttled operations, over the first backoff (200 ms)');
  assert.deepEqual(r, { attempts: 2, waits: [1500] });
});

test('a dropped batch waits longer before each retry (doubling, capped); a 409 after it means the earlier send had landed', async () => {
  // 'a' landed on send 1 but its answer was lost with the connection (500); sent again it is a conflict.
  const t = fakeTarget((id, send) => (send <= 4 ? { status: 500, message: 'socket hang up' } : id === 'a' ? { status: 409 } : { status: 201 }));
  const s = recorder();
  const r = await bulkCreate(t, [op('a'), op('b')], { sleep: s.sleep, baseDelayMs: 100, maxDelayMs: 500 });
  assert.deepEqual(s.waits, [100, 200, 400, 500]);
  assert.equal(r.attempts, 5);
  assert.equal(t.sent.length, 5);
});

test('it gives up after maxAttempts sends, naming how many operations were left and the last failure', async () => {
  const t = fakeTarget((id) => (id === 'a' ? { status: 201 } : { status: 503, message: 'service unavailable' }));
  const s = recorder();
  await assert.rejects(bulkCreate(t, [op('a'), op('b'), op('c')], { sleep: s.sleep, maxAttempts: 3 }), {
    message: 'bulk create gave up after 3 attempts: 2 of 3 operations not written (last: 503, service unavailable)',
  });
  assert.equal(t.sent.length, 3);
  assert.deepEqual(s.waits, [200, 400], 'no wait after the last send');
});

test('a failure retrying cannot help ends it at once, without a wait; a 409 on the first send is such a failure', async () => {
  const bad = fakeTarget((id) => (id === 'b' ? { status: 400, message: 'bad partition key' } : { status: 201 }));
  const s = recorder();
  await assert.rejects(bulkCreate(bad, [op('a'), op('b')], { sleep: s.sleep }), {
    message: 'bulk create refused (400): bad partition key; 1 of 2 operations not written',
  });
  const exists = fakeTarget(() => ({ status: 409, message: 'conflict' }));
  await assert.rejects(bulkCreate(exists, [op('a')], { sleep: s.sleep }), { message: 'bulk create refused (409): conflict; 1 of 1 operations not written' });
  assert.deepEqual(s.waits, []);
  assert.equal(bad.sent.length + exists.sent.length, 2);
});
