// DeferredProcessor.stop() when the closes of its trigger receiver and sender never settle (rhea-promise 3.0.3's close
// on a dropped connection, servicebus/boundedClose.ts): stop() returns at its bound and says which close it gave up
// on, with the endpoint and the bound. Before, it gave them up silently. A fake client (pure logic: what stop() does
// with closes that never answer); the real client meeting a drop is packages/sdk/e2e/closeDrop.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServiceBusClient } from '@azure/service-bus';
import { pino } from 'pino';
import { DeferredProcessor } from './deferredProcessor.ts';

/** A client whose receiver waits for triggers until aborted, and whose receiver's and sender's closes never settle. */
function hangingCloses(): ServiceBusClient {
  const never = () => new Promise<void>(() => undefined);
  const receiver = {
    receiveMessages: (_n: number, o: { abortSignal?: AbortSignal }) =>
      new Promise<never[]>((resolve) => o.abortSignal?.addEventListener('abort', () => resolve([]), { once: true })),
    close: never,
  };
  return { createReceiver: () => receiver, createSender: () => ({ close: never }) } as unknown as ServiceBusClient;
}

test("stop() gives up closes that never settle at its bound, with a warning naming each", async () => {
  const lines: string[] = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
  const processor = new DeferredProcessor({ client: hangingCloses(), endpointId: 'shop', logger, operationTimeoutMs: 50 });
  processor.start();
  await processor.stop(); // returns: each close is given up at the bound
  const warned = lines.map((l) => JSON.parse(l) as { msg: string; endpointId?: string; timeoutMs?: number });
  const about = (what: RegExp) => warned.find((w) => what.test(w.msg));
  for (const part of [/trigger receiver/, /deferred processor's sender/]) {
    const w = about(part);
    assert.ok(w, `a warning about the ${String(part)} close: ${JSON.stringify(warned)}`);
    assert.match(w.msg, /did not end within 50 ms .*abandoned/);
    assert.equal(w.endpointId, 'shop');
    assert.equal(w.timeoutMs, 50);
  }
});
