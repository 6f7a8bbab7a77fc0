// The chart range in the URL (Monitor's, and the Endpoint page's beside its event filters): parsed with the page's
// schema, turned into a range, and written back.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { endpointSearch, eventListSearch, monitorSearch, parseSearch, toSearch } from '../urlState.ts';
import { failuresHref } from './metricsApi.ts';
import { endpointSearchFromRange, rangeFromEndpointSearch, rangeFromSearch, searchFromRange, withEndpointRange } from './rangeUrl.ts';

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

describe('the Endpoint page', () => {
  const parse = (qs: string) => parseSearch(endpointSearch, new URLSearchParams(qs));
  const from = Date.parse('2026-12-03T10:00:00Z');
  const to = Date.parse('2026-12-03T12:30:00Z');

  test('a custom range\'s ends are rangeFrom/rangeTo; the events\' from/to are not the chart\'s', () => {
    const qs = toSearch(endpointSearch, { ...parse('status=Failed&from=2026-01-01T00:00:00Z'), ...endpointSearchFromRange({ key: 'custom', from, to }, 'utc') });
    assert.equal(qs, 'status=Failed&from=2026-01-01T00%3A00%3A00Z&range=custom&rangeFrom=2026-12-03T10%3A00%3A00Z&rangeTo=2026-12-03T12%3A30%3A00Z');
    assert.deepEqual(rangeFromEndpointSearch(parse(qs)), { key: 'custom', from, to });
    // from/to alone filter the events: a custom range without its own ends is the default.
    assert.deepEqual(rangeFromEndpointSearch(parse('range=custom&from=2026-12-03T10:00:00Z&to=2026-12-03T12:30:00Z')), { key: '1h' });
  });

  test('presets, the default and bad values parse as on Monitor', () => {
    assert.deepEqual(rangeFromEndpointSearch(parse('range=7d&status=Failed')), { key: '7d' });
    assert.deepEqual(rangeFromEndpointSearch(parse('')), { key: '1h' });
    for (const qs of ['range=2w', 'range=custom&rangeFrom=yesterday&rangeTo=2026-12-03T12:00:00Z', 'range=custom&rangeFrom=2026-12-03T12:00:00Z&rangeTo=2026-12-03T10:00:00Z']) {
      assert.deepEqual(rangeFromEndpointSearch(parse(qs)), { key: '1h' }, qs);
    }
    // Choosing a preset (or the default) drops a custom range's ends and leaves the filters.
    const custom = parse(`status=Failed&range=custom&rangeFrom=2026-12-03T10:00:00Z&rangeTo=2026-12-03T12:30:00Z`);
    assert.equal(toSearch(endpointSearch, { ...custom, ...endpointSearchFromRange({ key: '24h' }, 'utc') }), 'status=Failed&range=24h');
    assert.equal(toSearch(endpointSearch, { ...custom, ...endpointSearchFromRange({ key: '1h' }, 'utc') }), 'status=Failed');
  });

  test('the range is not part of the event list\'s query (its query key and the API\'s query string)', () => {
    const qs = 'status=Failed&q=card&range=custom&rangeFrom=2026-12-03T10:00:00Z&rangeTo=2026-12-03T12:30:00Z';
    assert.equal(toSearch(eventListSearch, parseSearch(eventListSearch, new URLSearchParams(qs))), 'status=Failed&q=card');
  });
});

describe('links to the Endpoint page carry the range shown', () => {
  const from = Date.parse('2026-12-03T10:00:00Z');
  const to = Date.parse('2026-12-03T12:30:00Z');
  const parse = (href: string) => parseSearch(endpointSearch, new URLSearchParams(href.split('?')[1] ?? ''));

  test('a preset adds its key, the default adds nothing, a custom range its ends as rangeFrom/rangeTo', () => {
    assert.equal(withEndpointRange('/endpoints/billing', { key: '24h' }, 'utc'), '/endpoints/billing?range=24h');
    assert.equal(withEndpointRange('/endpoints/billing', { key: '1h' }, 'utc'), '/endpoints/billing');
    const custom = withEndpointRange('/endpoints/billing', { key: 'custom', from, to }, 'utc');
    assert.equal(custom, '/endpoints/billing?range=custom&rangeFrom=2026-12-03T10%3A00%3A00Z&rangeTo=2026-12-03T12%3A30%3A00Z');
    assert.deepEqual(rangeFromEndpointSearch(parse(custom)), { key: 'custom', from, to });
    // Written on the local wall clock: the same instants.
    assert.deepEqual(rangeFromEndpointSearch(parse(withEndpointRange('/endpoints/billing', { key: 'custom', from, to }, 'local'))), { key: 'custom', from, to });
  });

  test('the link\'s own filters stay (a failure bar\'s bucket, a session) and a range in it is replaced', () => {
    const bar = withEndpointRange(failuresHref('billing', from, 60), { key: '7d' }, 'utc');
    const sp = new URLSearchParams(bar.split('?')[1]);
    assert.equal(bar.split('?')[0], '/endpoints/billing');
    assert.deepEqual([sp.get('status'), Date.parse(sp.get('from') ?? ''), Date.parse(sp.get('to') ?? ''), sp.get('range')], ['Failed,DeadLettered,Unsupported', from, from + 60_000, '7d']);
    assert.equal(withEndpointRange('/endpoints/a%2Fb?sessionId=ORD-1', { key: '30d' }, 'utc'), '/endpoints/a%2Fb?sessionId=ORD-1&range=30d');
    assert.equal(withEndpointRange('/endpoints/billing?sessionId=S&range=custom&rangeFrom=2026-12-03T10%3A00%3A00Z&rangeTo=2026-12-03T12%3A30%3A00Z', { key: '1h' }, 'utc'), '/endpoints/billing?sessionId=S');
  });
});
