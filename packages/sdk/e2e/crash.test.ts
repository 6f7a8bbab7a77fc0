// A real crash in the middle of a settlement: a host in a child process is killed after the response went out and
// the session state was written but before the message was completed; or a host's connection is closed at that
// point. A fresh host then takes the session over. Nothing may be lost (the block stays, the Resolver has the
// failure) and nothing duplicated (no second run, no second response).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ServiceBusSessionReceiver } from '@azure/service-bus';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import { startEmbeddedCosmos } from '../../../lib/store/index.ts';
import { CosmosInboxStore } from '@nimbus/sdk/cosmos';
import { HandlerRegistry } from '@nimbus/sdk';
import type { LifecycleObserver } from '@nimbus/sdk';
import { SubscriberHost } from '@nimbus/sdk';
import type { Harness } from './harness.ts';
import { eventually, storyOf, withHarness } from './harness.ts';

const crashHost = fileURLToPath(new URL('./crashHost.ts', import.meta.url));

/** Runs the crash host until it kills itself; returns what it printed. Fails if it exits any other way. */
async function runUntilCrash(
  h: Harness,
  env: Record<string, string>,
  publish: () => Promise<void>,
): Promise<string[]> {
  const child = spawn(process.execPath, ['--import', 'tsx', crashHost], {
    env: {
      ...process.env,
      CRASH_CONNECTION_STRING: h.emulator.connectionString,
      CRASH_ENDPOINT: 'crm',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.once('exit', (_code, signal) => resolve(signal)),
  );
  try {
    await eventually(() => (out.includes('ready') ? true : undefined), 'the crash host to start', 30_000);
    await publish();
    const signal = await exited;
    assert.equal(signal, 'SIGKILL', `the crash host exited without crashing: ${out}`);
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  return out.trim().split('\n');
}

/** Completed deliveries as `messageType:deliveryCount` (0 on a first delivery), for the fresh host. */
function completions(): { seen: string[]; observer: LifecycleObserver } {
  const seen: string[] = [];
  return {
    seen,
    observer: { onMessageCompleted: (m) => void seen.push(`${m.messageType}:${m.deliveryCount}`) },
  };
}

describe('a crash between blocking and completing', () => {
  test('killed process: the fresh host finds the session blocked, completes the redelivery silently, parks the next', async () => {
    await withHarness(async (h) => {
      const pub = h.publisher('shop');
      const printed = await runUntilCrash(h, { CRASH_MODE: 'fail' }, async () => {
        await pub.publish('CustomerUpdated', { customerId: 'X-1', n: 1 });
      });
      assert.deepEqual(printed, ['ready', 'handled E1', 'crash: before completion']);
      // The crash left the block written and the failure recorded, the message uncompleted.
      const state = await h.sessionState('crm', 'X-1');
      const first = await h.resolver('X-1', 2);
      assert.deepEqual(storyOf(first), { requests: ['EventRequest:E1'], responses: ['ErrorResponse:E1'] });
      assert.equal(state.BlockedByEventId, first[0]!.props.EventId);

      const calls: number[] = [];
      const { seen, observer } = completions();
      const host = h.host({
        endpointId: 'crm',
        observers: [observer],
        handlers: new HandlerRegistry().on<{ n: number }>('CustomerUpdated', (e) => void calls.push(e.n)),
      });
      h.deferredProcessor('crm');
      // The redelivery of E1 comes once its lock (5 s) has expired.
      await eventually(() => (seen.length > 0 ? true : undefined), 'the redelivery of E1', 20_000);
      assert.equal(seen[0], 'EventRequest:1'); // the JS client counts earlier attempts: 1 = a redelivery
      await pub.publish('CustomerUpdated', { customerId: 'X-1', n: 2 });
      const next = await h.resolver('X-1', 2);
      assert.deepEqual(storyOf(next), { requests: ['EventRequest:E2'], responses: ['DeferralResponse:E2'] });
      assert.deepEqual(
        await h.resolverRestAfterMarker('X-1', ['crm']),
        [],
        'no second ErrorResponse, nothing else',
      );
      assert.deepEqual(calls, [], 'the handler never ran again');
      await host.stop();
      const after = await h.sessionState('crm', 'X-1');
      assert.equal(after.BlockedByEventId, first[0]!.props.EventId);
      assert.equal(after.NextDeferralSequence, 1);
    });
  });

  test('closed connection: the host loses its client mid-settlement; a host on a new connection resumes the session', async () => {
    await withHarness(async (h) => {
      const dying = createServiceBusClients(h.emulator.connectionString, {
        client: { retryOptions: { timeoutInMs: 2000, maxRetries: 0 } },
      });
      const { client } = dying;
      const accept = client.acceptNextSession.bind(client);
      // At the first completion the connection goes away, as when a host's network drops or its process is torn down.
      client.acceptNextSession = (async (...args: Parameters<typeof accept>) => {
        const receiver: ServiceBusSessionReceiver = await accept(...args);
        receiver.completeMessage = async () => {
          await dying.close();
          throw new Error('connection closed');
        };
        return receiver;
      }) as typeof client.acceptNextSession;
      let firstCalls = 0;
      const first = new SubscriberHost({
        client,
        endpointId: 'crm',
        // The sessions must come from the wrapped client.
        sessionConnection: 'shared',
        deferredProcessor: false,
        maxConcurrentSessions: 1,
        sessionIdleTimeoutMs: 400,
        backoff: { initialMs: 50, maxMs: 200 },
        handlers: new HandlerRegistry().on('CustomerUpdated', () => {
          firstCalls++;
          throw new Error('CRM rejected the customer');
        }),
      });
      await first.start();
      const pub = h.publisher('shop');
      await pub.publish('CustomerUpdated', { customerId: 'X-2', n: 1 });
      const failure = await h.resolver('X-2', 2);
      assert.deepEqual(storyOf(failure), { requests: ['EventRequest:E1'], responses: ['ErrorResponse:E1'] });
      await eventually(
        async () => ((await h.sessionState('crm', 'X-2')).BlockedByEventId ? true : undefined),
        'the block',
      );
      await first.stop();
      assert.equal(firstCalls, 1);

      const calls: number[] = [];
      const { seen, observer } = completions();
      h.host({
        endpointId: 'crm',
        observers: [observer],
        handlers: new HandlerRegistry().on<{ n: number }>('CustomerUpdated', (e) => void calls.push(e.n)),
      });
      await eventually(() => (seen.length > 0 ? true : undefined), 'the redelivery of E1', 20_000);
      assert.equal(seen[0], 'EventRequest:1'); // the JS client counts earlier attempts: 1 = a redelivery
      await pub.publish('CustomerUpdated', { customerId: 'X-2', n: 2 });
      const next = await h.resolver('X-2', 2);
      assert.deepEqual(storyOf(next).responses, ['DeferralResponse:E2']);
      assert.deepEqual(await h.resolverRestAfterMarker('X-2', ['crm']), []);
      assert.deepEqual(calls, []);
    });
  });

  test('durable inbox: a success whose completion was lost is not handled again by the restarted host', async () => {
    const cosmos = await startEmbeddedCosmos({ port: 0 });
    try {
      await withHarness(async (h) => {
        const pub = h.publisher('shop');
        const printed = await runUntilCrash(
          h,
          {
            CRASH_MODE: 'succeed',
            CRASH_COSMOS_ENDPOINT: cosmos.endpoint,
            CRASH_COSMOS_KEY: cosmos.key,
            CRASH_COSMOS_DATABASE: 'inbox-e2e',
          },
          async () => void (await pub.publish('CustomerUpdated', { customerId: 'X-3', n: 1 })),
        );
        assert.deepEqual(printed, ['ready', 'handled E1', 'crash: before completion']);

        const inbox = await CosmosInboxStore.open({
          endpoint: cosmos.endpoint,
          key: cosmos.key,
          database: 'inbox-e2e',
        });
        const calls: number[] = [];
        const host = h.host({
          endpointId: 'crm',
          inbox,
          handlers: new HandlerRegistry().on<{ n: number }>('CustomerUpdated', (e) => void calls.push(e.n)),
        });
        try {
          const records = await h.resolver('X-3', 3, 25_000);
          assert.deepEqual(storyOf(records), {
            requests: ['EventRequest:E1'],
            responses: ['ResolutionResponse:E1', 'SkipResponse:E1'],
          });
          assert.equal(
            records.find((r) => r.type === 'SkipResponse')!.content.ErrorContent?.ErrorText,
            'DuplicateDetected',
          );
          // A new event still runs: the inbox only suppresses what was handled.
          await pub.publish('CustomerUpdated', { customerId: 'X-3', n: 2 });
          assert.deepEqual(storyOf(await h.resolver('X-3', 2)).responses, ['ResolutionResponse:E2']);
          assert.deepEqual(calls, [2]);
          const state = await h.sessionState('crm', 'X-3');
          assert.equal(state.BlockedByEventId ?? null, null);
        } finally {
          // The host stops before the store it reads closes.
          await host.stop({ waitForPendingAccepts: true });
          inbox.close();
        }
      });
    } finally {
      await cosmos.close();
    }
  });
});
