// A subscriber process that stopped its host and closed its clients exits by itself, promptly, in every phase of
// its life: after handling a message (a session held with its receive waiting, the other workers' accepts waiting on
// the broker), right after start() (its connections still opening) and during start(). On a container platform a
// process that does not exit after SIGTERM holds up a rolling deploy until it is killed at the grace period (30 s
// by default). Before closeServiceBusClient (packages/sdk/src/servicebus/closeClient.ts) the two early cases stayed
// up 120 s: a connection closed during its handshake left a rhea idle timer armed.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { eventually, withHarness, type Harness } from './harness.ts';

const subscriberProcess = fileURLToPath(new URL('./testing/subscriberProcess.ts', import.meta.url));

// The bound tests a hang, not speed: a process kept alive by a leftover timer stays up 60 s or 120 s, a healthy one
// exited within about 2 s of the signal here (measured); 20 s leaves room for a loaded 2-core machine and is still
// below a platform's 30 s grace period.
const EXIT_BOUND_MS = 20_000;

type StopWhen = 'signal' | 'after-start' | 'during-start';

interface Subscriber {
  output(): string;
  /** Resolves when the process prints `line` (a whole line). */
  printed(line: string, what: string): Promise<unknown>;
  /** The exit code (or the signal that ended it), or a description of why there is none within `ms`. */
  exitWithin(ms: number): Promise<number | string | null>;
  terminate(): void;
  kill(): void;
}

function startSubscriber(
  h: Harness,
  stopWhen: StopWhen,
  closeWith: 'clients' | 'client' = 'clients',
): Subscriber {
  const child = spawn(process.execPath, ['--import', 'tsx', subscriberProcess], {
    env: {
      ...process.env,
      EXIT_CONNECTION_STRING: h.emulator.connectionString,
      EXIT_ENDPOINT: 'crm',
      STOP_WHEN: stopWhen,
      CLOSE_WITH: closeWith,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
  const exited = new Promise<number | string | null>((resolve) =>
    child.once('exit', (code, signal) => resolve(signal ?? code)),
  );
  return {
    output: () => out,
    printed: (line, what) =>
      eventually(() => (out.split('\n').includes(line) ? true : undefined), what, 60_000),
    exitWithin: (ms) => {
      let timer: NodeJS.Timeout | undefined;
      return Promise.race([
        exited,
        new Promise<string>(
          (resolve) => (timer = setTimeout(() => resolve(`still running after ${ms} ms`), ms)),
        ),
      ]).finally(() => clearTimeout(timer));
    },
    terminate: () => void child.kill('SIGTERM'),
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}

/** Waits for the child's stop to begin, then for its exit: code 0, after `closed`, within the bound. */
async function assertExitsByItself(child: Subscriber): Promise<void> {
  await child.printed('stopping', 'the signal to reach the process');
  const code = await child.exitWithin(EXIT_BOUND_MS);
  assert.equal(code, 0, `the process did not exit by itself: ${String(code)}\n${child.output()}`);
  assert.match(child.output(), /^closed$/m, 'stop() and close() resolved before the exit');
}

describe('a subscriber process exits by itself after stop() and close()', () => {
  test('after handling a message, on SIGTERM', { timeout: 180_000 }, async () => {
    await withHarness(async (h) => {
      const child = startSubscriber(h, 'signal');
      try {
        await child.printed('ready', 'the host to start');
        await h.publisher('shop').publish('CustomerUpdated', { customerId: 'EXIT-1' });
        // The session stays held (idle timeout 30 s by default) with its receive waiting; the other workers wait in
        // their accepts.
        await child.printed('handled', 'the event to be handled');
        child.terminate();
        await assertExitsByItself(child);
      } finally {
        child.kill();
      }
    });
  });

  const early = [
    ['after-start', 'clients', 'right after start(), its connections still opening'],
    // docs/sdk.md's shutdown sample closes the ServiceBusClient itself: its own close() must do as much.
    ['after-start', 'client', 'right after start(), closing the ServiceBusClient itself'],
    ['during-start', 'clients', 'during start()'],
  ] as const;
  for (const [stopWhen, closeWith, what] of early) {
    test(`stopped ${what}`, { timeout: 180_000 }, async () => {
      await withHarness(async (h) => {
        const child = startSubscriber(h, stopWhen, closeWith);
        try {
          await assertExitsByItself(child);
        } finally {
          child.kill();
        }
      });
    });
  }
});
