// The enqueue time a message is recorded with (pure): a throttled message's scheduled replacement carries the
// original broker time in OriginalEnqueuedTimeUtc, and reading prefers it only when it is a plausible instant.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServiceBusReceivedMessage } from '@azure/service-bus';
import { encodeBody, MessageType as T, Prop } from '@nimbus/sdk/contract';
import { readResolverMessage } from './read.ts';
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
      const m = readResolverMessage(received({ [Prop.OriginalEnqueuedTimeUtc]: value }));
      assert.equal(m.enqueuedAt, REPLACEMENT_ACTIVE.toISOString(), String(value));
      assert.deepEqual(m.problems, [problem], String(value));
    }
    // An offset is an instant too: normalised to UTC as the store keeps it.
    assert.equal(readResolverMessage(received({ [Prop.OriginalEnqueuedTimeUtc]: '2026-12-02T11:00:00.000+01:00' })).enqueuedAt, ORIGINAL);
  });

  test("without the property (or the broker's time), as before: the broker's time, else the time of reading", () => {
    assert.equal(readResolverMessage(received({})).enqueuedAt, REPLACEMENT_ACTIVE.toISOString());
    const now = new Date('2026-12-02T12:00:00.000Z');
    assert.equal(readResolverMessage(received({}, null), () => now).enqueuedAt, now.toISOString());
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

  test('an unreadable value is replaced by the time the message is recorded with, not carried on', () => {
    const copy = replacementOf(received({ [Prop.OriginalEnqueuedTimeUtc]: 'yesterday' }), 1);
    assert.equal(copy.applicationProperties?.[Prop.OriginalEnqueuedTimeUtc], REPLACEMENT_ACTIVE.toISOString());
    const noTime = replacementOf(received({ [Prop.OriginalEnqueuedTimeUtc]: 'yesterday' }, null), 1);
    assert.equal(noTime.applicationProperties?.[Prop.OriginalEnqueuedTimeUtc], undefined);
  });
});
