// The set-up and the ending the batch tests share (batchCircuit, batchUnsettled, batchLockLost), on the harness's
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
  for (const n of [1, 2, 3]) {
    await h.send('crm', {
      sessionId: 'S-1',
      body: customerBody({ customerId: 'S-1', n }),
      props: { To: 'crm', From: 'shop', MessageType: MessageType.EventRequest, EventId: `ev-${n}`, EventTypeId: 'CustomerUpdated' },
    });
  }
}

/**
 * With a budget of three (setDeliveryBudget) and ev-1..ev-3 sent (sendThreeInSession): spends deliveries as hosts
 * would, so that ev-1 has one delivery left and ev-2 and ev-3 behind it are on their last. ev-2 and ev-3 are given
 * back (a delivery each) while ev-1 stays locked, taken again, then all three go back with the session.
 */
export async function spendToLastBehindFirst(h: Harness): Promise<void> {
  const receiver = await h.client.acceptSession('crm', 'crm', 'S-1');
  await eventually(async () => ((await receiver.peekMessages(10)).length === 3 ? true : undefined), 'the three messages to be in the session');
  const take = async (n: number) => {
    const got = [];
    while (got.length < n) got.push(...(await receiver.receiveMessages(n - got.length, { maxWaitTimeInMs: 1000 })));
    return got;
  };
  const [, ...behind] = await take(3);
  for (const m of behind) await receiver.abandonMessage(m);
  await take(2);
  await receiver.close();
  const check = await h.client.acceptSession('crm', 'crm', 'S-1');
  const peeked = await eventually(async () => {
    const got = await check.peekMessages(10, { fromSequenceNumber: Long.ZERO });
    return got.length === 3 ? got : undefined;
  }, 'the three messages to be back in the session');
  const counts = peeked.map((m) => [m.applicationProperties?.EventId, m.deliveryCount]);
  await check.close();
  assert.deepEqual(counts, [['ev-1', 1], ['ev-2', 2], ['ev-3', 2]], 'the set-up: ev-1 has a delivery left, ev-2 and ev-3 are on their last');
}

/** Waits for crm's dead letters until there are at least two; each as [EventId, reason, description]. */
export async function deadLettersOfTwo(h: Harness): Promise<unknown[][]> {
  const dead = await h.awaitDeadLetters('crm', 'crm');
  while (dead.length < 2) dead.push(...(await h.deadLetters('crm', 'crm', 10, 500)));
  return dead.map((m) => [m.applicationProperties?.EventId, m.deadLetterReason, m.deadLetterErrorDescription]);
}
