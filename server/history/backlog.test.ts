// The backlog collector and the lease-held duty loop (issue 16), on the embedded emulator and Cosmos server: a
// sample stores each topic's active and dead-letter counts under its minute, read back through the metrics
// series; of two duty loops on one lease only one runs the work, and the other takes over when it stops.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Prop } from '@nimbus/sdk/contract';
import { LeaseStore, TimeSeriesStore } from '../../lib/store/index.ts';
import { startConsoleTestStack, type ConsoleTestStack } from '../testing/stack.ts';
import { collectBacklog } from './backlog.ts';
import { startLeaderLoop } from './leader.ts';
import { waitFor } from '../../lib/testing/waitFor.ts';

let stack: ConsoleTestStack;
before(async () => {
  stack = await startConsoleTestStack('backlog');
});
after(async () => {
  await stack?.close();
});

const EP = 'billingendpoint';

describe('backlog collector', () => {
  test("a sample stores the endpoint topic's active and dead-letter counts", async () => {
    const sender = stack.serviceBus.client.createSender(EP);
    for (let i = 0; i < 3; i++) await sender.sendMessages({ body: 'x', sessionId: 's-backlog', applicationProperties: { [Prop.To]: EP } });
    await sender.close();
    // One dead letter on the endpoint's main subscription.
    const receiver = await stack.serviceBus.client.acceptSession(EP, EP, 's-backlog');
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5000 });
    await receiver.deadLetterMessage(m!, { deadLetterReason: 'test', deadLetterErrorDescription: 'a test dead letter' });
    await receiver.close();

    const series = new TimeSeriesStore(stack.store.database);
    const at = new Date();
    const samples = await collectBacklog(stack.serviceBus.admin, series, at);
    const mine = samples.find((s) => s.topic === EP)!;
    assert.equal(mine.active, 2);
    assert.equal(mine.deadLetter, 1);
    const minute = Math.floor(at.getTime() / 60_000) * 60_000;
    const read = await series.query({ from: minute, to: minute + 60_000, bucketMs: 60_000, endpointId: EP });
    assert.deepEqual(
      ['backlogActive', 'backlogDeadLetter'].map((n) => read.find((s) => s.name === n)!.points[0]![1]),
      [2, 1],
    );
  });
});

describe('lease-held duty loop', () => {
  test('one of two loops runs the work; when it stops the other takes over', async () => {
    const ran: string[] = [];
    const loop = (owner: string) =>
      startLeaderLoop({
        leases: new LeaseStore(stack.store.database),
        name: 'test-duty',
        owner,
        everyMs: 100,
        ttlMs: 1000,
        work: async () => {
          ran.push(owner);
        },
      });
    const a = loop('a');
    const b = loop('b');
    await waitFor('ten runs', () => ran.length >= 10);
    const first = ran[0]!;
    assert.ok(ran.every((o) => o === first), `one owner ran the work: ${ran.join(',')}`);
    const [holder, other] = first === 'a' ? [a, b] : [b, a];
    await holder.stop();
    const before = ran.length;
    await waitFor('the other replica taking over', () => ran.slice(before).some((o) => o !== first));
    assert.equal(other.holding(), true);
    await other.stop();
  });
});
