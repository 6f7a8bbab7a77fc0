// Latency is stored in ms; after a restart a p99 near 2,000,000 ms was drawn as "2000000 ms". The formatter picks
// the unit by magnitude (ms → s → min → h), for a single value (legend, tooltip, tables) and for an axis' ticks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DURATION_TICK_STEPS, durationUnit, formatMs, formatMsTicks } from './duration.ts';

test('one value in the unit its size calls for', () => {
  assert.equal(formatMs(0), '0 ms');
  assert.equal(formatMs(12.345), '12.35 ms');
  assert.equal(formatMs(999), '999 ms');
  assert.equal(formatMs(1000), '1 s');
  assert.equal(formatMs(1234), '1.23 s');
  assert.equal(formatMs(59_999), '60 s');
  assert.equal(formatMs(60_000), '1 min');
  assert.equal(formatMs(2_000_000), '33.33 min');
  assert.equal(formatMs(3_600_000), '1 h');
  assert.equal(formatMs(90_000_000), '25 h');
  assert.equal(formatMs(-1500), '-1.5 s');
  assert.equal(formatMs(null), '–');
  assert.equal(formatMs(undefined), '–');
  assert.equal(formatMs(Number.NaN), '–');
  assert.deepEqual(durationUnit(Number.POSITIVE_INFINITY), ['ms', 1]);
});

test('an axis: every tick in the unit of the largest, so the labels read as one scale', () => {
  assert.deepEqual(formatMsTicks([0, 500, 1000, 1500]), ['0 s', '0.5 s', '1 s', '1.5 s']);
  assert.deepEqual(formatMsTicks([0, 200, 400]), ['0 ms', '200 ms', '400 ms']);
  assert.deepEqual(formatMsTicks([0, 600_000, 1_200_000, 1_800_000]), ['0 min', '10 min', '20 min', '30 min']);
  assert.deepEqual(formatMsTicks([0, 3_600_000, 7_200_000]), ['0 h', '1 h', '2 h']);
  assert.deepEqual(formatMsTicks([]), []);
  // No label is ever the raw millisecond count of a long latency.
  assert.ok(formatMsTicks([0, 500_000, 1_000_000, 1_500_000, 2_000_000]).every((l) => l.length <= 9), 'short labels');
});

test('tick steps are round in their own unit and increasing', () => {
  for (let i = 1; i < DURATION_TICK_STEPS.length; i++) assert.ok(DURATION_TICK_STEPS[i]! > DURATION_TICK_STEPS[i - 1]!);
  for (const step of DURATION_TICK_STEPS) {
    const [label] = formatMsTicks([step]);
    assert.match(label!, /^\d+(\.\d)? (ms|s|min|h)$/, `${step} ms reads ${label}`);
  }
});
