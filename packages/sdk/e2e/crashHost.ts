// A subscriber host in a child process that dies (SIGKILL, no cleanup, no flush) at one exact point of a
// settlement: the first time it is about to complete a message, i.e. after the response went out and the session
// state was written. The e2e tests start it to prove a real crash there loses nothing and duplicates nothing.
// Configuration through the environment (a test-only program, never a public entry point):
//   CRASH_CONNECTION_STRING  the emulator; CRASH_ENDPOINT  the endpoint to host;
//   CRASH_MODE  'fail' (the handler throws) or 'succeed';
//   CRASH_COSMOS_ENDPOINT / CRASH_COSMOS_KEY / CRASH_COSMOS_DATABASE  optional durable inbox.
import { writeSync } from 'node:fs';
import type { ServiceBusSessionReceiver } from '@azure/service-bus';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import { CosmosInboxStore } from '@nimbus/sdk/cosmos';
import { HandlerRegistry } from '@nimbus/sdk';
import { SubscriberHost } from '@nimbus/sdk';

/** Synchronous: a write to a pipe is asynchronous in Node and would be lost by the SIGKILL right after it. */
const say = (line: string) => writeSync(1, `${line}\n`);

const env = (name: string): string => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is required`);
  return v;
};

const endpointId = env('CRASH_ENDPOINT');
const mode = env('CRASH_MODE');
const { client } = createServiceBusClients(env('CRASH_CONNECTION_STRING'), {
  client: { retryOptions: { timeoutInMs: 4000 } },
});

// The crash point: wrap each accepted session receiver so its first completion kills the process instead.
const acceptNextSession = client.acceptNextSession.bind(client);
client.acceptNextSession = (async (...args: Parameters<typeof acceptNextSession>) => {
  const receiver: ServiceBusSessionReceiver = await acceptNextSession(...args);
  receiver.completeMessage = async () => {
    say('crash: before completion');
    process.kill(process.pid, 'SIGKILL');
    await new Promise(() => undefined);
  };
  return receiver;
}) as typeof client.acceptNextSession;

const inbox = process.env.CRASH_COSMOS_ENDPOINT
  ? await CosmosInboxStore.open({
      endpoint: env('CRASH_COSMOS_ENDPOINT'),
      key: env('CRASH_COSMOS_KEY'),
      database: env('CRASH_COSMOS_DATABASE'),
    })
  : undefined;

const host = new SubscriberHost({
  client,
  endpointId,
  maxConcurrentSessions: 1,
  // The crash point wraps the client's acceptNextSession, so the sessions must come from it; the test runs no replay.
  sessionConnection: 'shared',
  deferredProcessor: false,
  sessionIdleTimeoutMs: 400,
  inbox,
  handlers: new HandlerRegistry().on<{ n: number }>('CustomerUpdated', (e) => {
    say(`handled E${e.n}`);
    if (mode === 'fail') throw new Error('CRM rejected the customer');
  }),
});
await host.start();
say('ready');
