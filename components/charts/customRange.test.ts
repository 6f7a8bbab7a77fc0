// The custom range's boxes: when they hold a range, what the custom button opens when they do not, and the boxes
// after a switch between local time and UTC. In a zone that is neither UTC nor whole hours, so local and UTC
// differ visibly (Node takes a TZ set while running; each test file is its own process).
process.env.TZ = 'Asia/Kathmandu';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { customButtonChoice, FALLBACK_SPAN_MS, inputsInZone, inputsOfRange, readRangeInputs } from './customRange.ts';

const T10 = Date.parse('2026-12-03T10:00:00Z');
const T12 = Date.parse('2026-12-03T12:00:00Z');

test('the boxes are read on the wall clock the viewer chose', () => {
  assert.deepEqual(readRangeInputs({ from: '2026-12-03T10:00', to: '2026-12-03T12:00' }, 'utc'), { ok: true, range: { key: 'custom', from: T10, to: T12 } });
  // Kathmandu is UTC+5:45.
  assert.deepEqual(readRangeInputs({ from: '2026-12-03T15:45', to: '2026-12-03T17:45' }, 'local'), { ok: true, range: { key: 'custom', from: T10, to: T12 } });
  assert.deepEqual(inputsOfRange({ from: T10, to: T12 }, 'utc'), { from: '2026-12-03T10:00', to: '2026-12-03T12:00' });
  assert.deepEqual(inputsOfRange({ from: T10, to: T12 }, 'local'), { from: '2026-12-03T15:45', to: '2026-12-03T17:45' });
});

test('a cleared box, a reversed or empty range is no range, and says why', () => {
  const problem = (from: string, to: string) => {
    const r = readRangeInputs({ from, to }, 'utc');
    assert.equal(r.ok, false, `${from} – ${to}`);
    return r.ok ? '' : r.problem;
  };
  assert.equal(problem('', '2026-12-03T12:00'), 'Enter a date and time in From.');
  assert.equal(problem('2026-12-03T10:00', ''), 'Enter a date and time in To.');
  assert.equal(problem('', ''), 'Enter a date and time in both From and To.');
  assert.equal(problem('yesterday', '2026-12-03T12:00'), 'Enter a date and time in From.');
  assert.equal(problem('2026-12-03T12:00', '2026-12-03T10:00'), 'From must be before To.');
  assert.equal(problem('2026-12-03T12:00', '2026-12-03T12:00'), 'From must be before To.');
});

test('the custom button opens the boxes\' range, else the last hour ending now with the boxes reset to it', () => {
  const now = Date.parse('2026-12-04T08:30:20Z');
  const good = { from: '2026-12-03T10:00', to: '2026-12-03T12:00' };
  assert.deepEqual(customButtonChoice(good, 'utc', now), { range: { key: 'custom', from: T10, to: T12 }, inputs: good });
  for (const bad of [
    { from: '', to: '2026-12-03T12:00' },
    { from: '2026-12-03T12:00', to: '' },
    { from: '2026-12-03T12:00', to: '2026-12-03T10:00' },
  ]) {
    const choice = customButtonChoice(bad, 'utc', now);
    assert.deepEqual(choice.range, { key: 'custom', from: now - FALLBACK_SPAN_MS, to: now }, JSON.stringify(bad));
    assert.deepEqual(choice.inputs, { from: '2026-12-04T07:30', to: '2026-12-04T08:30' }, 'the boxes show the range opened');
  }
  assert.deepEqual(customButtonChoice({ from: '', to: '' }, 'local', now).inputs, { from: '2026-12-04T13:15', to: '2026-12-04T14:15' }, 'on the local wall clock');
});

test('switching between local time and UTC moves the boxes to the same instants on the other clock', () => {
  const utc = { from: '2026-12-03T10:00', to: '2026-12-03T12:00' };
  const local = { from: '2026-12-03T15:45', to: '2026-12-03T17:45' };
  assert.deepEqual(inputsInZone(utc, 'utc', 'local'), local);
  assert.deepEqual(inputsInZone(local, 'local', 'utc'), utc);
  assert.deepEqual(inputsInZone(utc, 'utc', 'utc'), utc);
  // A cleared box stays cleared.
  assert.deepEqual(inputsInZone({ from: '', to: '2026-12-03T12:00' }, 'utc', 'local'), { from: '', to: '2026-12-03T17:45' });
});
