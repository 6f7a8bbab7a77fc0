// A click while the broker is down, on the real stack through the route handler: the embedded emulator is really
// stopped (its port closed) after the console's Manager has an open sender, a skip is clicked, and the answer is a
// 503 within the Manager's send bound; the event is back as it was (Failed, not claimed Pending) and the failure
// is in its audit trail. The broker is then started again on the same port, and the same click goes through once.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType, Prop } from '@nimbus/sdk/contract';
import { deriveTopology, provisionTopology } from '@nimbus/sdk/topology';
import { startEmulator, type RunningEmulator } from '../../emulator/index.ts';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import { SEND_TIMEOUT_MS } from './manager.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const stack = useConsoleStack({ database: 'brokerdown', seed: true });
let restarted: RunningEmulator | undefined;

const params = <P>(p: P) => ({ params: Promise.resolve(p) });
const post = () => new Request('http://127.0.0.1/api/x', { method: 'POST', headers: { 'content-type': 'application/json' } });

after(async () => {
  await restarted?.close();
});

describe('a Manager command while the broker is stopped', () => {
  test('503 with the event put back and the failure audited; after the broker is back the click sends once', async () => {
    const skip = await import('../../app/api/event/skip/[endpointId]/[eventId]/route.ts');
    // A first command opens the Manager's sender while the broker is up.
    const first = await skip.POST(post(), params({ endpointId: 'billingendpoint', eventId: 'evt-dead-1' }));
    assert.equal(first.status, 200, await first.clone().text());

    const port = stack.emulator.port;
    await stack.emulator.close();
    const started = Date.now();
    const res = await skip.POST(post(), params({ endpointId: 'billingendpoint', eventId: 'evt-failed-1' }));
    const body = (await res.json()) as { error: string; detail: string };
    assert.equal(res.status, 503, JSON.stringify(body));
    assert.ok(Date.now() - started < SEND_TIMEOUT_MS + 5000, 'the click is answered within the send bound');
    assert.match(body.detail, /put back to Failed/);

    const row = await stack.store.getStatusRow('billingendpoint', 'evt-failed-1', 'ORD-200');
    assert.equal(row?.status, 'Failed', 'not left claimed at Pending');
    assert.equal(row?.messageType, MessageType.ErrorResponse);
    const audits = (await stack.store.listAudits('evt-failed-1')).items.filter((a) => a.type === 'CommandNotSent');
    assert.equal(audits.length, 1);
    assert.match(audits[0]!.comment ?? '', /SkipRequest not sent/);

    // The way back: the broker returns on the same port (empty: provisioned again), the same click is sent.
    // With the same namespace key: the console still holds the connection string it was given.
    restarted = await startEmulator({ port, key: stack.emulator.key });
    const admin = createServiceBusClients(restarted.connectionString);
    try {
      await provisionTopology(admin.admin, deriveTopology(stack.catalog), { subscriptionDefaults: { lockDuration: 'PT5S' } });
      let again: Response | undefined;
      // The console's client reconnects on its own; its first attempts may still meet the old, closed link.
      for (let i = 0; i < 10; i++) {
        again = await skip.POST(post(), params({ endpointId: 'billingendpoint', eventId: 'evt-failed-1' }));
        if (again.status !== 503) break;
      }
      assert.equal(again?.status, 200, await again?.clone().text());
      assert.equal(((await again!.json()) as { outcome: string }).outcome, 'sent');
      assert.equal((await stack.store.getStatusRow('billingendpoint', 'evt-failed-1', 'ORD-200'))?.status, 'Pending');
      const receiver = await admin.client.acceptSession('billingendpoint', 'billingendpoint', 'ORD-200');
      try {
        const got = await receiver.receiveMessages(5, { maxWaitTimeInMs: 3000 });
        assert.deepEqual(got.map((m) => m.applicationProperties?.[Prop.MessageType]), [MessageType.SkipRequest], 'sent exactly once');
        for (const m of got) await receiver.completeMessage(m);
      } finally {
        await receiver.close();
      }
    } finally {
      await admin.close();
    }
  });
});
