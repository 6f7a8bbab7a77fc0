import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { describeError, HttpError, readJsonBody } from './http.ts';
import { MAX_BODY_BYTES, bodyTooLarge } from './auth/hardening.ts';
import { HttpErrorCopy } from './testing/httpErrorCopy.ts';
import * as StoreErrors from '../lib/store/errors.ts';
import { storeErrorSamples } from '../lib/store/testing/storeErrorSamples.ts';

/** A streamed (chunked) request body: no Content-Length for the proxy's check to see. */
function streamed(chunks: Uint8Array[]): Request {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const c of chunks) controller.enqueue(c);
      controller.close();
    },
  });
  return new Request('http://127.0.0.1/api/x', { method: 'POST', body, duplex: 'half' } as RequestInit);
}

test('a streamed body over the limit is refused with 413 without reading it all', async () => {
  const chunk = new Uint8Array(256 * 1024).fill(0x20);
  let pulled = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulled++;
      if (pulled > 40) controller.close(); // 10 MB if read to the end
      else controller.enqueue(chunk);
    },
  });
  const request = new Request('http://127.0.0.1/api/x', { method: 'POST', body, duplex: 'half' } as RequestInit);
  await assert.rejects(readJsonBody(request, z.unknown()), (err: unknown) => err instanceof HttpError && err.status === 413);
  assert.ok(pulled < 10, `read ${pulled} chunks of 256 KiB before refusing`);
});

test('a body split inside a multi-byte character decodes intact', async () => {
  const bytes = new TextEncoder().encode(JSON.stringify({ note: 'Ærø – 東京' }));
  const cut = bytes.indexOf(0xe6) + 1; // inside the three bytes of 東
  const value = await readJsonBody(streamed([bytes.slice(0, cut), bytes.slice(cut)]), z.object({ note: z.string() }));
  assert.equal(value.note, 'Ærø – 東京');
});

test('an empty body reads as undefined; bad JSON is a 400', async () => {
  assert.equal(await readJsonBody(new Request('http://127.0.0.1/api/x', { method: 'POST' }), z.undefined()), undefined);
  await assert.rejects(
    readJsonBody(streamed([new TextEncoder().encode('{nope')]), z.unknown()),
    (err: unknown) => err instanceof HttpError && err.status === 400,
  );
});

test("the streamed limit is the proxy's: both accept the limit exactly and refuse one byte more", async () => {
  const sized = (n: number) => streamed([new TextEncoder().encode(`"${'x'.repeat(n - 2)}"`)]);
  assert.equal((await readJsonBody(sized(MAX_BODY_BYTES), z.string())).length, MAX_BODY_BYTES - 2);
  assert.equal(bodyTooLarge('POST', String(MAX_BODY_BYTES)), null);
  await assert.rejects(readJsonBody(sized(MAX_BODY_BYTES + 1), z.string()), (err: unknown) => {
    assert.ok(err instanceof HttpError && err.status === 413);
    assert.match(err.detail, new RegExp(`at most ${MAX_BODY_BYTES} bytes`));
    return true;
  });
  assert.match(bodyTooLarge('POST', String(MAX_BODY_BYTES + 1)) ?? '', new RegExp(`at most ${MAX_BODY_BYTES} bytes`));
});

// The built console holds several copies of http.ts and lib/store (Next.js bundles them into each route chunk, and
// the launcher imports its own): an error thrown by an object one copy made reaches a handler of another copy, so
// it is not an instance of the class the handler imported. HttpErrorCopy is such a copy (same name, another class);
// the store's errors come from a second copy of lib/store/errors.ts itself (imported under another URL).
test('an HttpError from another copy of http.ts is answered as its own class would be', () => {
  assert.deepEqual(describeError(new HttpErrorCopy(409, 'conflict', 'skip is not possible for an event that is Completed')), {
    status: 409,
    error: 'conflict',
    detail: 'skip is not possible for an event that is Completed',
  });
});

// Every StoreError class, made by another copy of the module (storeErrorSamples has one of each exported class and
// fails on a class it lacks): answered as the same class of this copy is, by its `transient` flag. Before, a
// hand-kept list of names had missed StoreClosedError and CounterRecoveryIncompleteError (transient, answered 500).
test('every store error from another copy of lib/store is answered as its own class would be', async () => {
  const copyUrl = new URL('../lib/store/errors.ts?another-copy', import.meta.url).href;
  const copy = (await import(copyUrl)) as typeof StoreErrors;
  assert.notEqual(copy.StoreError, StoreErrors.StoreError, 'a second copy of the module');
  const own = storeErrorSamples(StoreErrors);
  for (const [name, err] of storeErrorSamples(copy)) {
    const ownErr = own.get(name)!;
    assert.deepEqual(describeError(err), describeError(ownErr), name);
    // A container Cosmos refused to create, or refused this identity to read, is a 503 "not configured" (an incomplete
    // deployment), though not transient.
    const notConfigured = name === 'ContainerMissingError' || name === 'ContainerAccessDeniedError';
    const expected = name === 'StoreInputError' ? 400 : notConfigured || ownErr.transient ? 503 : 500;
    assert.equal(describeError(err).status, expected, `${name} (transient: ${ownErr.transient})`);
  }
  assert.deepEqual(describeError(storeErrorSamples(copy).get('StoreThrottledError')), {
    status: 503,
    error: 'busy',
    detail: 'the store is throttling; try again shortly',
    headers: { 'retry-after': '2' },
  });
  assert.deepEqual(describeError(new copy.StoreClosedError('the store is closing')), {
    status: 503,
    error: 'unavailable',
    detail: 'the store did not answer; try again',
  });
  // Not transient, not input: an internal error, answered without its text.
  assert.equal(describeError(new copy.CorruptDocumentError('events', 'x', 'bad')).internal, true);
  assert.equal(describeError(new copy.CountsRecoveredError('billing')).internal, true);
});
