import { test } from 'node:test';
import assert from 'node:assert/strict';
import { axisWidth } from './axisSize.ts';

// 7 px per character: about the width of uPlot's 12 px axis font.
const measure = (text: string) => text.length * 7;
const spacing = { tickSize: 10, gap: 5, min: 50 };

test('a y axis is as wide as its widest label needs, ticks and gap included', () => {
  const labels = ['0 ms', '500 ms', '1000 ms', '1500 ms'];
  const width = axisWidth(measure, labels, spacing);
  for (const label of labels) assert.ok(width - spacing.tickSize - spacing.gap >= measure(label), `${label} fits in ${width} px`);
  assert.ok(width > 50, 'wider than the fixed 50 px that cut "1000 ms" to "00 ms"');
});

test('short labels, or none yet, keep the minimum width', () => {
  assert.equal(axisWidth(measure, ['0', '10', '20'], spacing), 50);
  assert.equal(axisWidth(measure, [], spacing), 50);
  assert.equal(axisWidth(measure, null, spacing), 50);
});
