import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_DURATION_MS } from '../broker/api.ts';
import { DurationFormatError, formatDuration, INFINITE_DURATION, parseDuration } from './duration.ts';

describe('ISO 8601 durations', () => {
  test('parses the forms the admin client sends', () => {
    assert.equal(parseDuration('PT1M'), 60_000);
    assert.equal(parseDuration('PT5S'), 5_000);
    assert.equal(parseDuration('PT0.5S'), 500);
    assert.equal(parseDuration('P14D'), 14 * 86_400_000);
    assert.equal(parseDuration('P1DT2H3M4.25S'), 86_400_000 + 2 * 3_600_000 + 3 * 60_000 + 4_250);
    assert.equal(parseDuration('P1W'), 7 * 86_400_000);
  });

  test('reads TimeSpan.MaxValue (and anything larger) as the infinite duration', () => {
    assert.equal(parseDuration(INFINITE_DURATION), MAX_DURATION_MS);
    assert.equal(parseDuration('P99999999D'), MAX_DURATION_MS);
  });

  test('rejects what is not a duration', () => {
    for (const bad of ['', 'P', 'PT', '1M', 'PT1X', '00:01:00', 'PT-1S', 'P1H']) {
      assert.throws(() => parseDuration(bad), DurationFormatError, bad);
    }
  });

  test('formats the shortest form, as Azure writes it', () => {
    assert.equal(formatDuration(0), 'PT0S');
    assert.equal(formatDuration(60_000), 'PT1M');
    assert.equal(formatDuration(500), 'PT0.5S');
    assert.equal(formatDuration(14 * 86_400_000), 'P14D');
    assert.equal(formatDuration(86_400_000 + 3_600_000 + 1_250), 'P1DT1H1.25S');
    assert.equal(formatDuration(MAX_DURATION_MS), INFINITE_DURATION);
  });

  test('round-trips', () => {
    for (const ms of [1, 999, 1_000, 61_001, 3_600_000, 10 * 86_400_000 + 7]) {
      assert.equal(parseDuration(formatDuration(ms)), ms);
    }
  });
});
