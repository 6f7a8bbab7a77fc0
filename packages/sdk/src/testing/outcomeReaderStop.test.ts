// OutcomeReader.stop() when a session receiver's close never settles (rhea-promise 3.0.3's close on a dropped
// connection, servicebus/boundedClose.ts): stop() - and with it the test harness's close() - returns at the close
// bound, with a warning. Before, it awaited the close unbounded and a test file's ending hung until the runner's file
// timeout. A fake client (pure logic: what the reader does with a close that never answers).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServiceBusClient } from '@azure/service-bus';
import type { CloseLogger } from '../servicebus/boundedClose.ts';
import { OutcomeReader } from './outcomeReader.ts';

/** A client with one session whose receiver answers receives empty and whose close never settles; then no session. */
function oneSessionHangingClose(): { client: ServiceBusClient; accepted: Promise<void> } {
  let accepted!: () => void;
  const acceptedOnce = new Promise<void>((r) => (accepted = r));
  let given = false;
  const client = {
    acceptNextSession: (_t: string, _s: string, o: { abortSignal?: AbortSignal }) => {
      if (!given) {
        given = true;
        accepted();
        return Promise.resolve({ receiveMessages: () => Promise.resolve([]), close: () => new Promise<void>(() => undefined) });
      }
      // No free session: waits until the reader stops.
      return new Promise((_resolve, reject) =>
        o.abortSignal?.addEventListener('abort', () => reject(new Error('aborted')), { once: true }),
      );
    },
  } as unknown as ServiceBusClient;
  return { client, accepted: acceptedOnce };
}

test("stop() returns when a session receiver's close never settles: given up at closeTimeoutMs, with a warning", async () => {
  const { client, accepted } = oneSessionHangingClose();
  const warned: string[] = [];
  const logger: CloseLogger = { warn: (_details, message) => void warned.push(message) };
  const reader = new OutcomeReader({ client, subscription: 'observer', concurrency: 1, closeTimeoutMs: 50, logger });
  reader.start();
  await accepted;
  // Generous: well past the 50 ms bound on a loaded machine; only a stop that never returns reaches it.
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    reader.stop().then(() => 'stopped' as const),
    new Promise<'hung'>((r) => (timer = setTimeout(() => r('hung'), 20_000))),
  ]).finally(() => clearTimeout(timer));
  assert.equal(outcome, 'stopped', 'stop() had not returned 20 s after it was called');
  assert.match(warned.join('\n'), /closing an outcome reader session receiver did not end within 50 ms .*abandoned/);
});
