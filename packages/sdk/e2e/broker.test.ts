// Broker errors under a running host: its subscription disabled or deleted. The host must back off (growing delays,
// not a tight loop and not a crash) and pick the work up again once the subscription is back. Also: many
// concurrent sessions do not trip Node's listener-leak warning on the host's stop signal.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { Logger } from 'pino';
import { deriveTopology, provisionTopology } from '@nimbus/sdk/topology';
import { HandlerRegistry } from '@nimbus/sdk';
import type { Harness } from './harness.ts';
import { eventually, storyOf, withHarness } from './harness.ts';

/** A pino logger whose warnings the test can read. */
function capturedLogger(): { logger: Logger; warnings: Array<Record<string, unknown>> } {
  const warnings: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n'))
        if (line.trim()) warnings.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  // debug: a repeated broker error (same cause) is logged at debug, with its backoff delay, after one warning.
  return { logger: pino({ level: 'debug' }, stream), warnings };
}

/** The delays the host announced while backing off, in order. */
const backoffDelays = (warnings: Array<Record<string, unknown>>) =>
  warnings.filter((w) => typeof w.delayMs === 'number').map((w) => w.delayMs as number);

async function setStatus(h: Harness, status: 'Active' | 'Disabled'): Promise<void> {
  const sub = await h.clients.admin.getSubscription('crm', 'crm');
  await h.clients.admin.updateSubscription({ ...sub, status });
}

/** Waits until the host has backed off several times in a row, and checks the delays grew to the cap. */
async function assertBackingOff(warnings: Array<Record<string, unknown>>): Promise<void> {
  const delays = await eventually(
    () => {
      const d = backoffDelays(warnings);
      return d.length >= 5 ? d : undefined;
    },
    'the host to back off five times',
    30_000,
  );
  // One worker: the delays of consecutive failures double up to the cap, never a tight loop.
  assert.deepEqual(delays.slice(0, 5), [50, 100, 200, 400, 400]);
}

describe('broker errors', () => {
  test('subscription disabled under a running host: it backs off, then resumes when re-enabled', async () => {
    await withHarness(async (h) => {
      const { logger, warnings } = capturedLogger();
      const handled: number[] = [];
      h.host({
        endpointId: 'crm',
        logger,
        maxConcurrentSessions: 1,
        backoff: { initialMs: 50, maxMs: 400 },
        handlers: new HandlerRegistry().on<{ n: number }>('CustomerUpdated', (e) => void handled.push(e.n)),
      });
      const pub = h.publisher('shop');
      await pub.publish('CustomerUpdated', { customerId: 'D-1', n: 1 });
      await eventually(() => (handled.length === 1 ? true : undefined), 'E1 to be handled');
      await setStatus(h, 'Disabled');
      await assertBackingOff(warnings);
      assert.ok(
        warnings.some((w) => (w.err as { message?: string } | undefined)?.message?.match(/disabled/i)),
        'the warnings name the cause',
      );
      await setStatus(h, 'Active');
      await pub.publish('CustomerUpdated', { customerId: 'D-1', n: 2 });
      await eventually(() => (handled.length === 2 ? true : undefined), 'E2 after re-enabling', 20_000);
      const records = await h.resolver('D-1', 4);
      assert.deepEqual(storyOf(records).responses, ['ResolutionResponse:E1', 'ResolutionResponse:E2']);
      assert.deepEqual(handled, [1, 2]);
    });
  });

  test('subscription deleted under a running host: it backs off, then resumes when the topology is provisioned again', async () => {
    await withHarness(async (h) => {
      const { logger, warnings } = capturedLogger();
      const handled: number[] = [];
      const host = h.host({
        endpointId: 'crm',
        logger,
        maxConcurrentSessions: 1,
        backoff: { initialMs: 50, maxMs: 400 },
        handlers: new HandlerRegistry().on<{ n: number }>('CustomerUpdated', (e) => void handled.push(e.n)),
      });
      // Deleted under a running host (deleted before, start() refuses: lifecycle.test.ts).
      await h.started(host);
      await h.clients.admin.deleteSubscription('crm', 'crm');
      await assertBackingOff(warnings);
      assert.ok(warnings.some((w) => (w.err as { type?: string } | undefined)?.type !== undefined));
      await provisionTopology(h.clients.admin, deriveTopology(h.catalog), {
        subscriptionDefaults: { lockDuration: 'PT5S', maxDeliveryCount: 10 },
      });
      await h.publisher('shop').publish('CustomerUpdated', { customerId: 'D-2', n: 1 });
      const records = await h.resolver('D-2', 2, 25_000);
      assert.deepEqual(storyOf(records), {
        requests: ['EventRequest:E1'],
        responses: ['ResolutionResponse:E1'],
      });
      assert.deepEqual(handled, [1]);
    });
  });

  test('a host with many concurrent sessions prints no MaxListenersExceededWarning', async () => {
    const seen: string[] = [];
    const onWarning = (w: Error) => void seen.push(w.name);
    process.on('warning', onWarning);
    try {
      await withHarness(async (h) => {
        let handled = 0;
        h.host({
          endpointId: 'crm',
          maxConcurrentSessions: 16,
          sessionIdleTimeoutMs: 200,
          handlers: new HandlerRegistry().on('CustomerUpdated', () => void handled++),
        });
        h.deferredProcessor('crm', { triggerWaitMs: 100 });
        const pub = h.publisher('shop');
        for (let i = 0; i < 20; i++) await pub.publish('CustomerUpdated', { customerId: `W-${i}`, n: 1 });
        await eventually(() => (handled === 20 ? true : undefined), 'all 20 sessions to be handled', 30_000);
        // Let the idle workers and the replay trigger loop go round many more receive calls.
        await new Promise((r) => setTimeout(r, 2500));
      });
      // Warnings are emitted on the next tick.
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(
        seen.filter((n) => n === 'MaxListenersExceededWarning'),
        [],
      );
    } finally {
      process.off('warning', onWarning);
    }
  });
});
