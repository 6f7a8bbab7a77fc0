// The enqueue time a message is recorded with (pure): a throttled message's scheduled replacement carries the
// original broker time in OriginalEnqueuedTimeUtc, and reading prefers it only on a Resolver replacement
// (ThrottleRetryCount set) and only when it is a plausible instant: any sender can set the property.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServiceBusReceivedMessage } from '@azure/service-bus';
import { encodeBody, MessageType as T, Prop } from '@nimbus/sdk/contract';
import { DEFAULT_BUDGET } from './budget.ts';
import { maxReplacementAgeMs, readResolverMessage } from './read.ts';
import { replacementOf } from './processor.ts';

const ORIGINAL = '2026-12-02T10:00:00.000Z';
/** When a replacement's schedule came due: what the broker stamps on it. */
const REPLACEMENT_ACTIVE = new Date('2026-12-02T10:05:00.000Z');

/** A received message; `enqueuedTimeUtc` null: the broker gave none. */
const received = (props: Record<string, unknown>, enqueuedTimeUtc: Date | null = REPLACEMENT_ACTIVE) =>
  ({
    body: Buffer.from(encodeBody({})),
    messageId: 'm-1',
    sessionId: 's-1',
    deliveryCount: 0,
    enqueuedTimeUtc: enqueuedTimeUtc ?? undefined,
    applicationProperties: { [Prop.MessageType]: T.EventRequest, [Prop.EventId]: 'e-1', ...props },
  }) as unknown as ServiceBusReceivedMessage;

describe('reading the enqueue time', () => {
  test("a replacement is recorded with the original's time, not its own", () => {
    const m = readResolverMessage(received({ [Prop.OriginalEnqueuedTimeUtc]: ORIGINAL, [Prop.ThrottleRetryCount]: 1 }));
    assert.equal(m.enqueuedAt, ORIGINAL);
    assert.deepEqual(m.problems, []);
  });

  test("an unreadable or later-than-the-broker value falls back to the broker's time and is named, never fatal", () => {
    for (const [value, problem] of [
      ['yesterday', 'OriginalEnqueuedTimeUtc is not an ISO-8601 date-time'],
      [42, 'OriginalEnqueuedTimeUtc is not an ISO-8601 date-time'],
      [true, 'OriginalEnqueuedTimeUtc is not an ISO-8601 date-time'],
      ['2026-12-02T10:05:00.001Z', "OriginalEnqueuedTimeUtc is later than the broker's enqueue time"],
    ] as const) {
      const m = readResolverMessage(received({ [Prop.OriginalEnqueuedTimeUtc]: value, [Prop.ThrottleRetryCount]: 1 }));
      assert.equal(m.enqueuedAt, REPLACEMENT_ACTIVE.toISOString(), String(value));
      assert.deepEqual(m.problems, [problem], String(value));
    }
    // An offset is an instant too: normalised to UTC as the store keeps it.
    assert.equal(
      readResolverMessage(received({ [Prop.OriginalEnqueuedTimeUtc]: '2026-12-02T11:00:00.000+01:00', [Prop.ThrottleRetryCount]: '2' })).enqueuedAt,
      ORIGINAL,
    );
  });

  test("a value on a message that is no Resolver replacement is not honoured: the broker's time, and the problem named", () => {
    // A sender backdating its message (SDK extra properties, a raw client); a dead-letter replay strips
    // ThrottleRetryCount too. Absent, 0 and unreadable all say "not a replacement".
    for (const throttle of [undefined, 0, '0', 'many'] as const) {
      const props = { [Prop.OriginalEnqueuedTimeUtc]: '2000-01-01T00:00:00.000Z', ...(throttle === undefined ? {} : { [Prop.ThrottleRetryCount]: throttle }) };
      const m = readResolverMessage(received(props));
      assert.equal(m.enqueuedAt, REPLACEMENT_ACTIVE.toISOString(), String(throttle));
      assert.ok(
        m.problems.includes('OriginalEnqueuedTimeUtc is set on a message that is not a Resolver replacement (no ThrottleRetryCount)'),
        `${String(throttle)}: ${m.problems.join('; ')}`,
      );
    }
  });

  test("a replacement's value further back than the reschedules and the backlog margin can reach is not honoured either", () => {
    const broker = REPLACEMENT_ACTIVE.getTime();
    const bound = maxReplacementAgeMs(DEFAULT_BUDGET);
    const beyond = readResolverMessage(received({ [Prop.OriginalEnqueuedTimeUtc]: new Date(broker - bound - 1).toISOString(), [Prop.ThrottleRetryCount]: 9 }));
    assert.equal(beyond.enqueuedAt, REPLACEMENT_ACTIVE.toISOString());
    assert.deepEqual(beyond.problems, ["OriginalEnqueuedTimeUtc is more than 168.75 h before the broker's enqueue time"]);
    const years = readResolverMessage(received({ [Prop.OriginalEnqueuedTimeUtc]: '2000-01-01T00:00:00.000Z', [Prop.ThrottleRetryCount]: 1 }));
    assert.equal(years.enqueuedAt, REPLACEMENT_ACTIVE.toISOString());
    assert.equal(years.problems.length, 1);
    // At the bound itself it is still the replacement's original time; the bound covers nine full reschedules.
    const atBound = new Date(broker - bound).toISOString();
    assert.equal(readResolverMessage(received({ [Prop.OriginalEnqueuedTimeUtc]: atBound, [Prop.ThrottleRetryCount]: 9 })).enqueuedAt, atBound);
    assert.ok(bound > 9 * 300_000);
  });

  test('a replacement whose original waited behind a long backlog keeps the original\'s time, without a problem', () => {
    // The original sat three hours in its session (the Resolver down or behind) before its first throttle: its
    // replacement is read three hours and a few seconds after the original's broker time. The bound was 60 min.
    for (const hours of [3, 30, 72]) {
      const original = new Date(REPLACEMENT_ACTIVE.getTime() - hours * 3_600_000).toISOString();
      const m = readResolverMessage(received({ [Prop.OriginalEnqueuedTimeUtc]: original, [Prop.ThrottleRetryCount]: 1 }));
      assert.equal(m.enqueuedAt, original, `${hours} h`);
      assert.deepEqual(m.problems, [], `${hours} h`);
    }
  });

  test('the bound follows the budget the Resolver runs with, not the default one', () => {
    // A 2 h backoff cap: nine reschedules may add 18 h on top of the backlog margin.
    const budget = { maxAttempts: 10, maxDelayMs: 2 * 3_600_000 };
    assert.equal(maxReplacementAgeMs(budget) - maxReplacementAgeMs(DEFAULT_BUDGET), 9 * (2 * 3_600_000 - DEFAULT_BUDGET.maxDelayMs));
    const original = new Date(REPLACEMENT_ACTIVE.getTime() - maxReplacementAgeMs(DEFAULT_BUDGET) - 3_600_000).toISOString();
    const props = { [Prop.OriginalEnqueuedTimeUtc]: original, [Prop.ThrottleRetryCount]: 9 };
    const running = readResolverMessage(received(props), undefined, budget);
    assert.equal(running.enqueuedAt, original);
    assert.deepEqual(running.problems, []);
    // The same value under the default budget is past its bound.
    assert.equal(readResolverMessage(received(props)).enqueuedAt, REPLACEMENT_ACTIVE.toISOString());
    const copy = replacementOf(received(props), 10, budget);
    assert.equal(copy.applicationProperties?.[Prop.OriginalEnqueuedTimeUtc], original, 'a further replacement carries it on');
    // Fewer attempts, shorter reach: with 2 attempts one reschedule of at most 1 s.
    assert.equal(maxReplacementAgeMs({ maxAttempts: 2, maxDelayMs: 1_000 }), 1_000 + maxReplacementAgeMs({ maxAttempts: 1, maxDelayMs: 1_000 }));
  });

  test('a misconfigured backoff cap does not turn the check off: the bound stops at 30 days', () => {
    // maxDelayMs has no upper limit in the options: a year's cap would reach back nine years.
    const budget = { maxAttempts: 10, maxDelayMs: 365 * 24 * 3_600_000 };
    assert.equal(maxReplacementAgeMs(budget), 30 * 24 * 3_600_000);
    const years = readResolverMessage(received({ [Prop.OriginalEnqueuedTimeUtc]: '2020-01-01T00:00:00.000Z', [Prop.ThrottleRetryCount]: 9 }), undefined, budget);
    assert.equal(years.enqueuedAt, REPLACEMENT_ACTIVE.toISOString());
    assert.deepEqual(years.problems, ["OriginalEnqueuedTimeUtc is more than 720 h before the broker's enqueue time"]);
    // Within the cap, as before.
    const weeks = new Date(REPLACEMENT_ACTIVE.getTime() - 20 * 24 * 3_600_000).toISOString();
    assert.equal(readResolverMessage(received({ [Prop.OriginalEnqueuedTimeUtc]: weeks, [Prop.ThrottleRetryCount]: 9 }), undefined, budget).enqueuedAt, weeks);
  });

  test("without the property (or the broker's time), as before: the broker's time, else the time of reading", () => {
    assert.equal(readResolverMessage(received({})).enqueuedAt, REPLACEMENT_ACTIVE.toISOString());
    const now = new Date('2026-12-02T12:00:00.000Z');
    assert.equal(readResolverMessage(received({}, null), () => now).enqueuedAt, now.toISOString());
  });
});

describe('a replacement whose original time is unknown', () => {
  test('is marked (the store asks rule 8 without its bound), and its own replacement stays unknown', () => {
    // Missing (an older Resolver's replacement, a property stripped) or rejected: enqueuedAt is the replacement's own
    // broker time, later than the retry the SDK sent beside the failure, so rule 8's bound at it found no retry.
    for (const props of [
      { [Prop.ThrottleRetryCount]: 1 },
      { [Prop.ThrottleRetryCount]: 2, [Prop.OriginalEnqueuedTimeUtc]: 'yesterday' },
      { [Prop.ThrottleRetryCount]: '3', [Prop.OriginalEnqueuedTimeUtc]: '2000-01-01T00:00:00.000Z' },
    ]) {
      const m = readResolverMessage(received(props));
      assert.equal(m.originalTimeUnknown, true, JSON.stringify(props));
      assert.equal(m.enqueuedAt, REPLACEMENT_ACTIVE.toISOString());
      // Carried on as the original's, its own time would read as plausible on the next replacement: not carried.
      const next = replacementOf(received(props), 4);
      assert.equal(next.applicationProperties?.[Prop.OriginalEnqueuedTimeUtc], undefined, JSON.stringify(props));
      assert.equal(readResolverMessage(received({ ...next.applicationProperties })).originalTimeUnknown, true);
    }
    // Known: an honoured replacement, a first delivery, a message that is no replacement (a value on it is a problem,
    // not an unknown original: the broker's time is its own).
    assert.equal(readResolverMessage(received({ [Prop.OriginalEnqueuedTimeUtc]: ORIGINAL, [Prop.ThrottleRetryCount]: 1 })).originalTimeUnknown, false);
    assert.equal(readResolverMessage(received({})).originalTimeUnknown, false);
    assert.equal(readResolverMessage(received({ [Prop.OriginalEnqueuedTimeUtc]: 'yesterday' })).originalTimeUnknown, false);
  });
});

describe("a throttled message's replacement", () => {
  test("the first stamps the original's broker time; later ones keep it through every reschedule", () => {
    const first = replacementOf(received({}, new Date(ORIGINAL)), 1);
    assert.equal(first.applicationProperties?.[Prop.OriginalEnqueuedTimeUtc], ORIGINAL);
    assert.equal(first.applicationProperties?.[Prop.ThrottleRetryCount], 1);
    // The first replacement, delivered when its schedule came due, throttled again.
    const second = replacementOf(received({ ...first.applicationProperties }, REPLACEMENT_ACTIVE), 2);
    assert.equal(second.applicationProperties?.[Prop.OriginalEnqueuedTimeUtc], ORIGINAL);
    assert.equal(second.applicationProperties?.[Prop.ThrottleRetryCount], 2);
  });

  test("a forged value on a first throttle is not carried on: the replacement gets the broker's time", () => {
    const copy = replacementOf(received({ [Prop.OriginalEnqueuedTimeUtc]: '2000-01-01T00:00:00.000Z' }, new Date(ORIGINAL)), 1);
    assert.equal(copy.applicationProperties?.[Prop.OriginalEnqueuedTimeUtc], ORIGINAL);
  });

  test('an unreadable value is replaced by the time the message is recorded with, not carried on', () => {
    const copy = replacementOf(received({ [Prop.OriginalEnqueuedTimeUtc]: 'yesterday' }), 1);
    assert.equal(copy.applicationProperties?.[Prop.OriginalEnqueuedTimeUtc], REPLACEMENT_ACTIVE.toISOString());
    const noTime = replacementOf(received({ [Prop.OriginalEnqueuedTimeUtc]: 'yesterday' }, null), 1);
    assert.equal(noTime.applicationProperties?.[Prop.OriginalEnqueuedTimeUtc], undefined);
  });
});
