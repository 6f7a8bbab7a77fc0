// The host's life cycle as an adapter author meets it: start() fails loudly on a namespace without the endpoint's
// subscriptions, a broker error is logged once per cause with its message, and stop() is quick by default (the
// process exits promptly after stop() and client.close(), with nothing left waiting on the broker).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import type { Logger } from 'pino';
import { HandlerRegistry } from '@nimbus/sdk';
import { MissingEntityError } from '@nimbus/sdk';
import { SubscriberHost } from '@nimbus/sdk';
import { eventually, withHarness } from './harness.ts';

const stopHost = fileURLToPath(new URL('./stopHost.ts', import.meta.url));

function capturedLogger(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n'))
        if (line.trim()) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, stream), lines };
}

describe('host life cycle', () => {
  test('start() on a namespace without the endpoint: one error naming the missing subscriptions and npm run provision', async () => {
    await withHarness(async (h) => {
      const host = new SubscriberHost({
        client: h.client,
        endpointId: 'ghost',
        handlers: new HandlerRegistry(),
      });
      const error = await host.start().then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(error instanceof MissingEntityError, `expected a MissingEntityError, got ${String(error)}`);
      assert.deepEqual(error.entities, ['ghost/ghost', 'ghost/DeferredProcessor', 'ghost/Deferred']);
      assert.match(error.message, /'ghost\/ghost'/);
      assert.match(error.message, /npm run provision/);
      await host.stop();
      // Without its deferred processor only the main subscription is needed; an existing endpoint starts.
      const alone = new SubscriberHost({
        client: h.client,
        endpointId: 'ghost',
        handlers: new HandlerRegistry(),
        deferredProcessor: false,
      });
      await assert.rejects(
        alone.start(),
        (e: unknown) => e instanceof MissingEntityError && e.entities.length === 1,
      );
      const crm = new SubscriberHost({
        client: h.client,
        endpointId: 'crm',
        handlers: new HandlerRegistry(),
      });
      await crm.start();
      await crm.stop();
    });
  });

  test('a broker error is logged once per cause, with its message, not once per worker and attempt', async () => {
    await withHarness(async (h) => {
      const { logger, lines } = capturedLogger();
      // Four workers failing against a missing subscription (the start-up check turned off to get there).
      const host = new SubscriberHost({
        client: h.client,
        endpointId: 'ghost',
        handlers: new HandlerRegistry(),
        checkEntities: false,
        deferredProcessor: false,
        maxConcurrentSessions: 4,
        backoff: { initialMs: 20, maxMs: 100 },
        logger,
      });
      await host.start();
      try {
        await eventually(
          () =>
            lines.filter((l) => l.msg === 'accepting a session failed again (same cause)').length >= 12
              ? true
              : undefined,
          'the workers to fail a dozen times',
          30_000,
        );
      } finally {
        await host.stop();
      }
      const warnings = lines.filter((l) => (l.level as number) >= 40);
      assert.equal(warnings.length, 1, JSON.stringify(warnings));
      const [warning] = warnings;
      assert.match(String(warning!.msg), /^accepting a session failed: .*ghost.*could not be found/);
      const err = warning!.err as Record<string, unknown>;
      assert.equal(err.code, 'MessagingEntityNotFound');
      assert.equal(err.type, 'ServiceBusError');
      assert.match(String(err.message), /could not be found/);
    });
  });

  test('stopping a host built with defaults takes under 5 s, and the process exits right after', async () => {
    await withHarness(async (h) => {
      const child = spawn(process.execPath, ['--import', 'tsx', stopHost], {
        env: { ...process.env, STOP_CONNECTION_STRING: h.emulator.connectionString, STOP_ENDPOINT: 'crm' },
        stdio: ['pipe', 'pipe', 'inherit'],
      });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      try {
        await eventually(() => (out.includes('ready') ? true : undefined), 'the host to start', 60_000);
        // One session handled and still held (its idle timeout is 30 s by default), the other workers waiting in
        // acceptNextSession: both must end promptly.
        await h.publisher('shop').publish('CustomerUpdated', { customerId: 'S-1' });
        await eventually(
          () => (out.includes('handled') ? true : undefined),
          'the event to be handled',
          30_000,
        );
        const started = Date.now();
        child.stdin.write('stop\n');
        const code = await Promise.race([
          exited,
          new Promise<string>((resolve) =>
            setTimeout(() => resolve('still running after 30 s'), 30_000).unref(),
          ),
        ]);
        const took = Date.now() - started;
        assert.equal(code, 0, out);
        assert.match(out, /stopped in \d+ ms/);
        assert.ok(took < 5000, `stop() + client.close() + process exit took ${took} ms (${out.trim()})`);
      } finally {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
    });
  });

  test('the host is AsyncDisposable: await using stops it at the end of the scope', async () => {
    await withHarness(async (h) => {
      let stoppedAt: number | undefined;
      {
        await using host = new SubscriberHost({
          client: h.client,
          endpointId: 'crm',
          handlers: new HandlerRegistry(),
          deferredProcessor: false,
          logger: pino({ level: 'silent' }),
          observers: [],
        });
        await host.start();
        const stop = host.stop.bind(host);
        host.stop = async (...args) => {
          await stop(...args);
          stoppedAt = Date.now();
        };
      }
      assert.ok(stoppedAt !== undefined, 'the scope end did not stop the host');
    });
  });
});
