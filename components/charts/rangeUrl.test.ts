// Monitor's chart range in the URL: parsed with the page's schema, turned into a range, and written back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { monitorSearch, parseSearch, toSearch } from '../urlState.ts';
import { rangeFromSearch, searchFromRange } from './rangeUrl.ts';

const rangeOf = (qs: string) => rangeFromSearch(parseSearch(monitorSearch, new URLSearchParams(qs)));

test('a preset range parses from the URL and the default leaves the URL bare', () => {
  assert.deepEqual(rangeOf('range=7d'), { key: '7d' });
  assert.deepEqual(rangeOf(''), { key: '1h' });
  assert.equal(toSearch(monitorSearch, searchFromRange({ key: '24h' }, 'utc')), 'range=24h');
  assert.equal(toSearch(monitorSearch, searchFromRange({ key: '1h' }, 'utc')), '', 'the default is the bare path');
});

test('a custom range round-trips through the URL with both ends', () => {
  const from = Date.parse('2026-12-03T10:00:00Z');
  const to = Date.parse('2026-12-03T12:30:00Z');
  const qs = toSearch(monitorSearch, searchFromRange({ key: 'custom', from, to }, 'utc'));
  assert.equal(qs, 'range=custom&from=2026-12-03T10%3A00%3A00Z&to=2026-12-03T12%3A30%3A00Z');
  assert.deepEqual(rangeOf(qs), { key: 'custom', from, to });
  // Written on the local wall clock: another offset, the same instants.
  assert.deepEqual(rangeOf(toSearch(monitorSearch, searchFromRange({ key: 'custom', from, to }, 'local'))), { key: 'custom', from, to });
  assert.deepEqual(rangeOf('range=custom&from=2026-12-03T11:00:00%2B01:00&to=2026-12-03T12:30:00Z'), { key: 'custom', from, to });
});

test('values the URL cannot honour fall back to the default range instead of breaking the page', () => {
  for (const qs of [
    'range=2w',
    'range=',
    'range=custom',
    'range=custom&from=2026-12-03T10:00:00Z',
    'range=custom&from=yesterday&to=2026-12-03T12:00:00Z',
    'range=custom&from=2026-12-03T10:00&to=2026-12-03T12:00',
    'range=custom&from=2026-12-03T12:00:00Z&to=2026-12-03T10:00:00Z',
    'range=custom&from=2026-12-03T12:00:00Z&to=2026-12-03T12:00:00Z',
    'range=__proto__&from=%00',
  ]) {
    assert.deepEqual(rangeOf(qs), { key: '1h' }, qs);
  }
  // The ends of a custom range mean nothing to a preset.
  assert.deepEqual(rangeOf('range=24h&from=2026-12-03T10:00:00Z&to=2026-12-03T12:00:00Z'), { key: '24h' });
});
