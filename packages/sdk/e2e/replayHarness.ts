// The setup the replay tests share (replayDrop, replaySendDrop, replayLock): crm's deferred processor on a client of
// the test's own, so that the test can break or slow exactly that client's calls without touching the harness's
// (its publisher and its readers stay direct); optionally through a TCP fault proxy (server/testing/tcpFaultProxy.ts)
// in front of the embedded emulator; clock skew as that client reads a lock's expiry (replayReaccept, replayLock); a
// parked session with its replay trigger; and a reader of the replayed copies that come back to the main
// subscription. Each test keeps its own fault, its own waits and its own assertions.
import type {
  ServiceBusClient,
  ServiceBusReceivedMessage,
  ServiceBusSender,
  ServiceBusSessionReceiver,
} from '@azure/service-bus';
import { eventBody, MessageType, Prop, Subscription } from '@nimbus/sdk/contract';
import { DeferredProcessor } from '@nimbus/sdk';
import type { DeferredProcessorOptions, ReplayPass } from '@nimbus/sdk';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import type { CreateServiceBusClientsOptions, ServiceBusClients } from '@nimbus/sdk/servicebus';
import { startTcpFaultProxy } from '../../../server/testing/tcpFaultProxy.ts';
import type { TcpFaultProxy } from '../../../server/testing/tcpFaultProxy.ts';
import { eventually } from './harness.ts';
import type { Harness } from './harness.ts';

/** The endpoint whose parked session the replay tests replay (it consumes CustomerUpdated in the demo catalog). */
export const REPLAY_ENDPOINT = 'crm';

export interface ProxiedClients {
  proxy: TcpFaultProxy;
  clients: ServiceBusClients;
  /** Closes the clients (whatever a reset left them in), then the proxy. */
  close(): Promise<void>;
}

/** Clients of their own that reach the harness's emulator through a TCP fault proxy the test can cut and restore. */
export async function proxiedClients(
  h: Harness,
  options?: CreateServiceBusClientsOptions,
): Promise<ProxiedClients> {
  const proxy = await startTcpFaultProxy({ port: h.emulator.port });
  const clients = createServiceBusClients(
    h.emulator.connectionString.replace(`:${h.emulator.port};`, `:${proxy.port};`),
    options,
  );
  return {
    proxy,
    clients,
    close: async () => {
      await clients.close().catch(() => undefined);
      await proxy.close();
    },
  };
}

/**
 * Routes every sendMessages of the client's senders (created from now on) through `around`, which gets the
 * sender's entity and the real send and decides when to run it: how a test slows or breaks one exact send.
 */
export function aroundSends(
  client: ServiceBusClient,
  around: (entityPath: string, send: () => Promise<void>) => Promise<void>,
): void {
  const createSender = client.createSender.bind(client);
  client.createSender = ((...args: Parameters<typeof createSender>) => {
    const sender: ServiceBusSender = createSender(...args);
    const send = sender.sendMessages.bind(sender);
    sender.sendMessages = (...sendArgs: Parameters<typeof send>) =>
      around(sender.entityPath, () => send(...sendArgs));
    return sender;
  }) as typeof client.createSender;
}

/** A lock expiry (the broker's clock) as read by a local clock `skewMs` behind the broker's (or ahead, negative). */
const readSkewed = (until: Date | undefined, skewMs: number): Date | undefined =>
  until && new Date(until.getTime() + skewMs);

/**
 * The parked-session receivers `client` accepts from now on read their lock expiry `skewMs` off the broker's: a
 * local clock behind the broker's (positive) or ahead of it (negative). Only the reading: the lock is the broker's.
 */
export function skewParkedLocks(client: ServiceBusClient, skewMs: number): void {
  const accept = client.acceptSession.bind(client);
  client.acceptSession = (async (...args: Parameters<typeof accept>) => {
    const receiver = await accept(...args);
    if (args[1] === Subscription.Deferred) {
      const read = Object.getOwnPropertyDescriptor(
        Object.getPrototypeOf(receiver),
        'sessionLockedUntilUtc',
      )?.get;
      if (!read) throw new Error("the client's receiver no longer reads its lock expiry through a getter");
      Object.defineProperty(receiver, 'sessionLockedUntilUtc', {
        configurable: true,
        get: () => readSkewed(read.call(receiver) as Date | undefined, skewMs),
      });
    }
    return receiver;
  }) as typeof client.acceptSession;
}

/**
 * The same for the replay triggers: the trigger receivers `client` creates from now on read each trigger's lock
 * expiry, as received and as renewed, `skewMs` off the broker's. Every renewal is counted in `renewals`.
 */
export function skewTriggerLocks(client: ServiceBusClient, skewMs: number): { renewals: number } {
  const counted = { renewals: 0 };
  const skew = (m: ServiceBusReceivedMessage) => (m.lockedUntilUtc = readSkewed(m.lockedUntilUtc, skewMs));
  const createReceiver = client.createReceiver.bind(client);
  client.createReceiver = ((...args: Parameters<typeof createReceiver>) => {
    const receiver = createReceiver(...args);
    if (args[1] !== Subscription.DeferredProcessor) return receiver;
    const receive = receiver.receiveMessages.bind(receiver);
    receiver.receiveMessages = async (...receiveArgs: Parameters<typeof receive>) => {
      const messages = await receive(...receiveArgs);
      messages.forEach(skew);
      return messages;
    };
    const renew = receiver.renewMessageLock.bind(receiver);
    receiver.renewMessageLock = async (message: ServiceBusReceivedMessage) => {
      counted.renewals++;
      await renew(message); // sets the message's expiry as the broker gave it
      return skew(message)!;
    };
    return receiver;
  }) as typeof client.createReceiver;
  return counted;
}

/**
 * crm's deferred processor on `client` with the harness's test timings (Harness.deferredProcessor's), every
 * finished pass recorded in `passes`. Not started: each test starts it at its own point.
 */
export function replayProcessor(
  client: ServiceBusClient,
  options: Partial<DeferredProcessorOptions> = {},
): { processor: DeferredProcessor; passes: ReplayPass[] } {
  const passes: ReplayPass[] = [];
  const processor = new DeferredProcessor({
    drainWaitMs: 300,
    triggerWaitMs: 1000,
    backoff: { initialMs: 50, maxMs: 500 },
    ...options,
    client,
    endpointId: REPLAY_ENDPOINT,
    onPass: (p) => void passes.push(p),
  });
  return { processor, passes };
}

/**
 * Parks `count` CustomerUpdated events of `session` on crm's Deferred subscription (deferral sequences 0 to
 * count - 1, event ids `${eventIdPrefix}-${s}`), then sends the trigger that replays them all
 * (`${eventIdPrefix}-trigger`). Sent directly, through the harness's own client.
 */
export async function parkAndTrigger(
  h: Harness,
  session: string,
  count: number,
  eventIdPrefix: string,
): Promise<void> {
  for (let s = 0; s < count; s++)
    await h.send(REPLAY_ENDPOINT, {
      sessionId: session,
      body: eventBody('CustomerUpdated', { customerId: session, n: s }),
      props: {
        [Prop.To]: 'Deferred',
        [Prop.MessageType]: MessageType.EventRequest,
        [Prop.EventId]: `${eventIdPrefix}-${s}`,
        [Prop.EventTypeId]: 'CustomerUpdated',
        [Prop.DeferralSequence]: s,
        [Prop.OriginalSessionId]: session,
      },
    });
  await h.send(REPLAY_ENDPOINT, {
    sessionId: session,
    props: {
      [Prop.To]: 'DeferredProcessor',
      [Prop.MessageType]: MessageType.ProcessDeferredRequest,
      [Prop.EventId]: `${eventIdPrefix}-trigger`,
      [Prop.ReplayUntil]: count,
    },
  });
}

/**
 * Reads (and completes) what comes back to the main subscription's session until `count` distinct replay
 * sequences arrived; returns them. A timeout names the sequences back, the passes seen and `detail`.
 */
export async function replayedSequences(
  main: ServiceBusSessionReceiver,
  passes: readonly ReplayPass[],
  count: number,
  timeoutMs: number,
  detail?: string,
): Promise<Set<number>> {
  const sequences = new Set<number>();
  await eventually(
    async () => {
      for (const m of await main.receiveMessages(10, { maxWaitTimeInMs: 500 })) {
        sequences.add(Number(m.applicationProperties?.[Prop.ReplaySequence]));
        await main.completeMessage(m);
      }
      return sequences.size === count ? true : undefined;
    },
    'every parked sequence replayed after the reset',
    timeoutMs,
  ).catch((error: unknown) => {
    const got = [...sequences].join(', ') || 'none';
    const seen = passes.map((p) => p.outcome).join(', ') || 'none';
    throw new Error(
      `${(error as Error).message} (sequences back: ${got}; passes: ${seen}${detail ? `; ${detail}` : ''})`,
    );
  });
  return sequences;
}
