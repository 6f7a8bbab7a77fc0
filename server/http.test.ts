import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { describeError, HttpError, readJsonBody } from './http.ts';
import { MAX_BODY_BYTES, bodyTooLarge } from './auth/hardening.ts';
import { HttpErrorCopy } from './testing/httpErrorCopy.ts';

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
// it is not an instance of the class the handler imported. Each class here, and the shared HttpErrorCopy, is such a
// copy: same name, another class.
class StoreThrottledErrorCopy extends Error {
  override readonly name = 'StoreThrottledError';
  readonly transient = true;
  constructor(readonly retryAfterMs: number | undefined) {
    super('store throttled (429) during read');
  }
}
class StoreTransientErrorCopy extends Error {
  override readonly name = 'StoreTransientError';
  readonly transient = true;
}
class CorruptDocumentErrorCopy extends Error {
  override readonly name = 'CorruptDocumentError';
  readonly transient = false;
}

test('errors from another copy of http.ts or the store are answered as their own class would be', () => {
  assert.deepEqual(describeError(new HttpErrorCopy(409, 'conflict', 'skip is not possible for an event that is Completed')), {
    status: 409,
    error: 'conflict',
    detail: 'skip is not possible for an event that is Completed',
  });
  assert.deepEqual(describeError(new StoreThrottledErrorCopy(1500)), {
    status: 503,
    error: 'busy',
    detail: 'the store is throttling; try again shortly',
    headers: { 'retry-after': '2' },
  });
  assert.deepEqual(describeError(new StoreTransientErrorCopy('store timed out during read')), {
    status: 503,
    error: 'unavailable',
    detail: 'the store did not answer; try again',
  });
  // Not transient, not known: an internal error, answered without its text.
  assert.equal(describeError(new CorruptDocumentErrorCopy('corrupt document events/x: bad')).internal, true);
});
