// The age bound on a throttle replacement's OriginalEnqueuedTimeUtc follows the budget the running Resolver was
// started with (read.ts maxReplacementAgeMs), end to end: the real Service Bus client on the embedded broker, the
// real Cosmos client on the embedded server. A replacement is hand-made here (as replacementOf writes one) because a
// backlog of days cannot be waited out in a test; the pure reading is in enqueuedTime.test.ts.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MessageType as T, Prop } from '@nimbus/sdk/contract';
import { ResolverHarness, orderBody } from './testHarness.ts';

let h: ResolverHarness;
/** A budget whose backoff cap is 20 min: nine reschedules may add three hours, the default's only 45 min. */
const budget = { baseDelayMs: 20, maxDelayMs: 20 * 60_000 };
before(async () => {
  h = await ResolverHarness.start();
  h.resolver({ budget });
});
after(async () => {
  await h.close();
});

test("a replacement older than the default budget allows but within the running budget's bound keeps its original's time, without a problem", async () => {
  const ep = `crm-${randomUUID().slice(0, 8)}`;
  const ev = `e-${randomUUID().slice(0, 8)}`;
  // A week behind a backlog and two hours of reschedules: past what the default budget's reschedules (45 min) and
  // the week's backlog margin cover, inside this budget's three hours.
  const age = 7 * 24 * 3_600_000 + 2 * 3_600_000;
  const original = new Date(Date.now() - age).toISOString();
  const sent = await h.send({
    type: T.EventRequest,
    eventId: ev,
    to: ep,
    from: 'shop',
    body: orderBody({ orderId: 'aged' }),
    props: { [Prop.OriginalEnqueuedTimeUtc]: original, [Prop.ThrottleRetryCount]: 3 },
  });
  await h.settledOk(sent.messageId);
  const row = await h.store.getStatusRow(ep, ev, 's-1');
  assert.equal(row?.enqueuedAt, original, "the row carries the original's broker time");
  const [entry] = (await h.store.listHistory(ev)).items;
  assert.equal(entry?.enqueuedAt, original);
  assert.equal(entry?.properties?.ResolverPropertyProblems, undefined, 'no property problem named');
});
