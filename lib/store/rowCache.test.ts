// The row cache forgets a version on a failed write only while it is still the version that write decided from.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RowCache } from './rowCache.ts';
import type { StatusRow } from './schemas.ts';

const row = (lastMessageId: string) => ({ lastMessageId }) as unknown as StatusRow;

test('forgetIfStill drops the entry the failed write used, and keeps one cached after it', () => {
  const cache = new RowCache(10);
  cache.set('ep/a', row('m1'), 'e1');
  cache.forgetIfStill('ep/a', 'e1');
  assert.equal(cache.get('ep/a'), undefined, 'the version the write used may be stale: forgotten');

  cache.set('ep/b', row('m1'), 'e1');
  cache.set('ep/b', row('m2'), 'e2'); // a concurrent write landed and cached its version
  cache.forgetIfStill('ep/b', 'e1');
  assert.equal(cache.get('ep/b')?.etag, 'e2', 'the newer version is kept');

  cache.set('ep/c', row('m1'), 'e1'); // cached by another write while a create (no etag) was in flight
  cache.forgetIfStill('ep/c', undefined);
  assert.equal(cache.get('ep/c')?.etag, 'e1', 'a failed create had no cached version to forget');
});
