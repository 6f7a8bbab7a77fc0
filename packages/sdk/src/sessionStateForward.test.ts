// Mixed SDK versions during a rolling deploy: session state written by a newer version, with keys this version does
// not know, is handled by this version and written back. The newer keys must survive every write this version makes
// (block, park, release), or the newer instance that takes the session next acts as if its fields had never been
// recorded. Runs the real path: the Dispatcher over sessionDeliveryPort and SessionStateCache, which decode and
// encode the bytes a session receiver holds; only the receiver and the sender are stand-ins.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type {
  ServiceBusReceivedMessage,
  ServiceBusSender,
  ServiceBusSessionReceiver,
} from '@azure/service-bus';
import { eventBody } from './contract/index.ts';
import { Dispatcher } from './dispatcher.ts';
import { HandlerRegistry } from './handlers.ts';
import { SessionStateCache, sessionDeliveryPort } from './sessionPort.ts';

/** One session on the broker: its state bytes and what the endpoint sent and settled. */
class BrokerSession {
  stateBytes: Buffer | undefined;
  sent: string[] = [];
  settled: string[] = [];

  constructor(initialState: unknown) {
    this.stateBytes = Buffer.from(JSON.stringify(initialState), 'utf8');
  }

  /** The stored state as JSON, as the next instance (of any version) would read it. */
  stored(): Record<string, unknown> {
    assert.ok(this.stateBytes && this.stateBytes.byteLength > 0, 'the session state was written as empty');
    return JSON.parse(this.stateBytes.toString('utf8')) as Record<string, unknown>;
  }

  receiver(): ServiceBusSessionReceiver {
    return {
      sessionId: 's1',
      isClosed: false,
      sessionLockedUntilUtc: new Date(Date.now() + 60_000),
      getSessionState: async () => this.stateBytes,
      setSessionState: async (bytes: Buffer) => {
        this.stateBytes = Buffer.from(bytes);
      },
      completeMessage: async () => void this.settled.push('complete'),
      deadLetterMessage: async (_m: unknown, o?: { deadLetterReason?: string }) =>
        void this.settled.push(`deadLetter ${o?.deadLetterReason ?? ''}`),
    } as unknown as ServiceBusSessionReceiver;
  }

  sender(): ServiceBusSender {
    const record = (m: unknown) => {
      for (const one of Array.isArray(m) ? m : [m])
        this.sent.push(String((one as { applicationProperties?: Record<string, unknown> }).applicationProperties?.MessageType));
    };
    return {
      entityPath: 'billing',
      sendMessages: async (m: unknown) => record(m),
      scheduleMessages: async (m: unknown) => {
        record(m);
        return [1];
      },
    } as unknown as ServiceBusSender;
  }
}

const received = (messageId: string, props: Record<string, unknown>): ServiceBusReceivedMessage =>
  ({
    messageId,
    sessionId: 's1',
    deliveryCount: 0,
    body: eventBody('OrderPlaced', { orderId: 'o1' }),
    applicationProperties: {
      To: 'billing',
      From: 'storefront',
      MessageType: 'EventRequest',
      EventTypeId: 'OrderPlaced',
      ...props,
    },
  }) as unknown as ServiceBusReceivedMessage;

/** Delivers one message as the host does: a fresh state cache over the session's receiver, the real port. */
async function deliver(dispatcher: Dispatcher, session: BrokerSession, message: ServiceBusReceivedMessage) {
  const receiver = session.receiver();
  const port = sessionDeliveryPort(receiver, session.sender(), new SessionStateCache(receiver), message);
  return dispatcher.dispatch(message, port, new AbortController().signal);
}

const FUTURE = { FutureField: { x: 1 }, FutureCounter: 7 };

describe('session state written by a newer SDK version', () => {
  test('keys this version does not know survive its block, park and release writes', async () => {
    // A newer instance wrote the state: not blocked, nothing parked, two fields of its own.
    const session = new BrokerSession({ BlockedByEventId: null, NextDeferralSequence: 0, ...FUTURE });
    const dispatcher = new Dispatcher({
      endpointId: 'billing',
      handlers: new HandlerRegistry().on('OrderPlaced', () => {
        throw new Error('ERP unavailable');
      }),
    });

    // Block: the handler fails, the session is blocked by e1.
    assert.equal(await deliver(dispatcher, session, received('m1', { EventId: 'e1' })), 'handlerFailed');
    let stored = session.stored();
    assert.equal(stored.BlockedByEventId, 'e1');
    assert.deepEqual(stored.FutureField, { x: 1 }, 'block dropped a newer version’s key');
    assert.equal(stored.FutureCounter, 7);

    // Park: the next event of the session waits behind the block.
    assert.equal(await deliver(dispatcher, session, received('m2', { EventId: 'e2' })), 'deferred');
    stored = session.stored();
    assert.equal(stored.NextDeferralSequence, 1);
    assert.deepEqual(stored.FutureField, { x: 1 }, 'park dropped a newer version’s key');
    assert.equal(stored.FutureCounter, 7);

    // Release: the operator skips e1; the session is released and the parked message is asked for.
    const skip = received('skip-1', { EventId: 'e1', MessageType: 'SkipRequest', From: 'Manager' });
    assert.equal(await deliver(dispatcher, session, skip), 'completed');
    stored = session.stored();
    assert.equal(stored.BlockedByEventId, null);
    assert.deepEqual(stored.ReleasedBy, { EventId: 'e1', MessageId: 'skip-1' });
    assert.deepEqual(stored.FutureField, { x: 1 }, 'release dropped a newer version’s key');
    assert.equal(stored.FutureCounter, 7);
    assert.ok(session.sent.includes('ProcessDeferredRequest'), 'the release asked for the replay');
  });
});
