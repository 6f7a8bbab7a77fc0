// The set-up and the ending the batch tests share (batchCircuit, batchUnsettled, batchLockLost, batchGivenUpStop), on the harness's
// embedded emulator: three events of one session on crm's subscription, a delivery budget small enough for a test
// to spend, and the dead letters the SDK's budget path leaves behind.
import assert from 'node:assert/strict';
import Long from 'long';
import { MessageType } from '@nimbus/sdk/contract';
import { customerBody, eventually, type Harness } from '../harness.ts';

/** Sets crm's subscription to `maxDeliveryCount` deliveries a message (the harness provisions ten). */
export async function setDeliveryBudget(h: Harness, maxDeliveryCount: number): Promise<void> {
  const sub = await h.clients.admin.getSubscription('crm', 'crm');
  await h.clients.admin.updateSubscription({ ...sub, maxDeliveryCount });
}

/** EventRequests ev-1, ev-2 and ev-3 (payload `n` 1, 2, 3) from shop to crm, sent in that order in session S-1. */
export async function sendThreeInSession(h: Harness): Promise<void> {
  await sendInSession(h, 3);
}

/** EventRequests ev-1 .. ev-`count` (payload `n` 1 .. count) from shop to crm, sent in that order in session S-1. */
export async function sendInSession(h: Harness, count: number): Promise<void> {
  for (let n = 1; n <= count; n++) {
    await h.send('crm', {
      sessionId: 'S-1',
      body: customerBody({ customerId: 'S-1', n }),
      props: { To: 'crm', From: 'shop', MessageType: MessageType.EventRequest, EventId: `ev-${n}`, EventTypeId: 'CustomerUpdated' },
    });
  }
}

/**
 * With a budget of three (setDeliveryBudget) and ev-1..ev-3 sent (sendThreeInSession): spends deliveries as hosts
 * would, so that ev-1 has one delivery left and ev-2 and ev-3 behind it are on their last.
 */
export async function spendToLastBehindFirst(h: Harness): Promise<void> {
  await spendToLast(h, 3, [2, 3]);
}

/**
 * With a budget of three (setDeliveryBudget) and ev-1..ev-`count` sent (sendInSession): spends deliveries as hosts
 * would, so that the events numbered in `onLast` are on their last delivery and every other one has a delivery left.
 * Those in `onLast` are given back (a delivery each) while the others stay locked, taken again, then all go back
 * with the session.
 */
export async function spendToLast(h: Harness, count: number, onLast: readonly number[]): Promise<void> {
  const receiver = await h.client.acceptSession('crm', 'crm', 'S-1');
  await eventually(async () => ((await receiver.peekMessages(count + 1)).length === count ? true : undefined), 'the messages to be in the session');
  const take = async (n: number) => {
    const got = [];
    while (got.length < n) got.push(...(await receiver.receiveMessages(n - got.length, { maxWaitTimeInMs: 1000 })));
    return got;
  };
  const first = await take(count);
  for (const m of first) if (onLast.includes(eventNumber(m.applicationProperties?.EventId))) await receiver.abandonMessage(m);
  await take(onLast.length);
  await receiver.close();
  const check = await h.client.acceptSession('crm', 'crm', 'S-1');
  const peeked = await eventually(async () => {
    const got = await check.peekMessages(count + 1, { fromSequenceNumber: Long.ZERO });
    return got.length === count ? got : undefined;
  }, 'the messages to be back in the session');
  const counts = peeked.map((m) => [m.applicationProperties?.EventId, m.deliveryCount]);
  await check.close();
  const expected = Array.from({ length: count }, (_, i) => [`ev-${i + 1}`, onLast.includes(i + 1) ? 2 : 1]);
  assert.deepEqual(counts, expected, 'the set-up: those on their last delivery have spent two, the others one');
}

const eventNumber = (eventId: unknown): number => Number(String(eventId).replace(/^ev-/, ''));

/** Waits for crm's dead letters until there are at least two; each as [EventId, reason, description]. */
export async function deadLettersOfTwo(h: Harness): Promise<unknown[][]> {
  const dead = await h.awaitDeadLetters('crm', 'crm');
  while (dead.length < 2) dead.push(...(await h.deadLetters('crm', 'crm', 10, 500)));
  return dead.map((m) => [m.applicationProperties?.EventId, m.deadLetterReason, m.deadLetterErrorDescription]);
}
