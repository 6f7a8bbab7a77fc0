// The e2e harness's own closes when one never settles (rhea-promise 3.0.3's close met by a dropped connection:
// closeDrop.test.ts reproduces it on the wire). The harness awaited its receivers' closes unbounded, so a reading
// helper (deadLetters, resolverMessages, sessionState...) hung, and the test file with it until the runner's 20 min
// file timeout. Now each is given up at HARNESS_CLOSE_TIMEOUT_MS (10 s). The hang is made by the receiver class's
// close returning a promise that never settles, once: the call the harness makes, on the real client and emulator.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { endProcessAfterResults, HARNESS_CLOSE_TIMEOUT_MS, withHarness } from './harness.ts';

endProcessAfterResults(); // the real close the test skipped leaves the link open until the client's close

test("a reading helper returns when its receiver's close never settles: given up at the harness's bound", async () => {
  await withHarness(async (h) => {
    const probe = h.client.createReceiver('crm', 'crm', { subQueueType: 'deadLetter' });
    const proto = Object.getPrototypeOf(probe) as { close(): Promise<void> };
    await probe.close();
    const real = Object.getOwnPropertyDescriptor(proto, 'close')!;
    let hung = 0;
    Object.defineProperty(proto, 'close', {
      ...real,
      value: function (this: unknown) {
        if (hung++ === 0) return new Promise<void>(() => undefined);
        return (real.value as () => Promise<void>).call(this);
      },
    });
    let timer: NodeJS.Timeout | undefined;
    try {
      const outcome = await Promise.race([
        h.deadLetters('crm', 'crm', 1, 100).then(() => 'returned' as const),
        // Generous over the bound on a loaded machine; only a helper that never returns reaches it.
        new Promise<'hung'>((r) => (timer = setTimeout(() => r('hung'), HARNESS_CLOSE_TIMEOUT_MS + 20_000))),
      ]);
      assert.equal(outcome, 'returned', 'h.deadLetters() had not returned 20 s past the bound');
      assert.equal(hung, 1, 'the helper closed its receiver');
    } finally {
      clearTimeout(timer);
      Object.defineProperty(proto, 'close', real);
    }
  });
});
