// The outage circuit's own logic (outage.ts) with a fake probe: no store, no broker. A store that flaps (answers a
// worker's probe for a moment, then fails the next one) while the recovery loop sleeps must not start a second
// loop beside the first: each loop probes every probeEveryMs, so loops piling up multiply the probe traffic
// against a store that is struggling already, and stop() (closed()) waited only for the latest of them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { pino } from 'pino';
import { StoreTransientError } from '../lib/store/index.ts';
import { StoreOutage } from './outage.ts';

test('a store that flaps while the recovery loop sleeps keeps one probe loop', async () => {
  let up = false;
  let probeTimes: number[] = [];
  const stop = new AbortController();
  const every = 200;
  const outage = new StoreOutage({
    probe: async () => {
      probeTimes.push(performance.now());
      if (!up) throw new StoreTransientError('down', 503);
    },
    probeEveryMs: every,
    signal: stop.signal,
    log: pino({ level: 'silent' }),
  });
  assert.equal(await outage.confirmDown(), true, 'down: the circuit opens');
  // Five blips within the first loop's sleep: each closes the circuit and opens it again.
  for (let i = 0; i < 5; i++) {
    up = true;
    assert.equal(await outage.confirmDown(), false);
    assert.equal(outage.down, undefined);
    up = false;
    assert.equal(await outage.confirmDown(), true);
  }
  // From here only recovery loops probe. One loop sleeps probeEveryMs between its probes, so over any span it
  // probes at most span / probeEveryMs + 1 times (timers never fire early by more than a millisecond); six loops
  // would probe about six times as often.
  probeTimes = [];
  const from = performance.now();
  await delay(10 * every);
  const seen = probeTimes.filter((t) => t >= from);
  const span = performance.now() - from;
  assert.ok(seen.length >= 1, 'the recovery loop probes');
  assert.ok(seen.length <= Math.floor(span / (every - 2)) + 1, `${seen.length} probes in ${Math.round(span)} ms: more than one loop`);
  for (let i = 1; i < seen.length; i++) {
    assert.ok(seen[i]! - seen[i - 1]! >= every - 2, `probes ${Math.round(seen[i]! - seen[i - 1]!)} ms apart: more than one loop`);
  }

  // The one loop still sees the store come back, and ends.
  up = true;
  const start = outage.recoveries;
  while (outage.down) await delay(20);
  assert.equal(outage.recoveries, start + 1);
  stop.abort();
  await outage.closed();
});

test('waitUntilUp ends at a horizon that moves earlier while it waits', async () => {
  const stop = new AbortController();
  const outage = new StoreOutage({
    probe: () => Promise.reject(new StoreTransientError('down', 503)),
    probeEveryMs: 50,
    signal: stop.signal,
    log: pino({ level: 'silent' }),
  });
  assert.equal(await outage.confirmDown(), true);
  // The session is lost (the receiver closed) while the message is held: the hold ends then, not at the planned horizon.
  let lost = false;
  const waiting = outage.waitUntilUp(() => (lost ? 0 : Date.now() + 60_000));
  await delay(100);
  lost = true;
  assert.equal(await waiting, 'timeout');
  stop.abort();
  await outage.closed();
});
