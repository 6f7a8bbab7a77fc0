// The set-up and the ending the batch tests share (batchCircuit, batchUnsettled, batchLockLost), on the harness's
// embedded emulator: three events of one session on crm's subscription, a delivery budget small enough for a test
// to spend, and the dead letters the SDK's budget path leaves behind.
import { MessageType } from '@nimbus/sdk/contract';
import { customerBody, type Harness } from '../harness.ts';

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

/** Waits for crm's dead letters until there are at least two; each as [EventId, reason, description]. */
export async function deadLettersOfTwo(h: Harness): Promise<unknown[][]> {
  const dead = await h.awaitDeadLetters('crm', 'crm');
  while (dead.length < 2) dead.push(...(await h.deadLetters('crm', 'crm', 10, 500)));
  return dead.map((m) => [m.applicationProperties?.EventId, m.deadLetterReason, m.deadLetterErrorDescription]);
}
