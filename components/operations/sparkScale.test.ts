// The failure spark's scale (components/operations/sparkScale.ts): the busiest bucket, the total and the bucket's
// length, so the bars' heights can be read. Pure logic, so no browser.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sparkScale } from './sparkScale.ts';

const day = { from: '2026-12-04T07:00:00.000Z', to: '2026-12-05T07:00:00.000Z', buckets: 24 };

test('hourly buckets: the top is arrivals per hour, the caption the total over the day', () => {
  const s = sparkScale([0, 2, 3, 0], day);
  assert.equal(s.max, 3);
  assert.equal(s.total, 5);
  assert.equal(s.maxLabel, '3/h');
  assert.equal(s.caption, '5 in 24 h');
  assert.equal(s.label, 'Arrivals per hour over 24 h: 5 failed events in all, at most 3 in one hour.');
});

test('a longer window: the bucket length is said, not assumed to be an hour', () => {
  const week = { from: '2026-11-28T07:00:00.000Z', to: '2026-12-05T07:00:00.000Z', buckets: 24 };
  const s = sparkScale([1, 1], week);
  assert.equal(s.maxLabel, '1 per 7 h');
  assert.equal(s.caption, '2 in 7 d');
  assert.match(s.label, /^Arrivals per 7 h over 7 d: 2 failed events in all, at most 1 in one bucket\.$/);
});

test('"the last 7 days" as the server sends it (from the hour of `since` to the end of the current hour) reads as 7 d', () => {
  const s = sparkScale([1], { from: '2026-11-28T06:00:00.000Z', to: '2026-12-05T07:00:00.000Z', buckets: 24 });
  assert.equal(s.caption, '1 in 7 d');
  assert.equal(s.maxLabel, '1 per 7 h');
});

test('no window from the server: the numbers alone, never a made-up span', () => {
  const s = sparkScale([0, 0], undefined);
  assert.equal(s.maxLabel, '0');
  assert.equal(s.caption, '0');
  assert.equal(s.label, 'Arrivals: 0 failed events in all, at most 0 in one bucket.');
});
