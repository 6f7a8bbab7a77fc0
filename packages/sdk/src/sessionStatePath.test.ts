// Session state through the real path: the Dispatcher over sessionDeliveryPort and SessionStateCache, which decode
// and encode the bytes a session receiver holds; only the receiver and the sender are stand-ins.
//  - Mixed SDK versions during a rolling deploy: state written by a newer version, with keys this version does not
//    know, is handled by this version and written back. The newer keys must survive every write this version makes
//    (block, park, release), or the newer instance that takes the session next acts as if they had never been
//    recorded.
//  - Handoff settlement names the handoff, not only its event: a late settlement of an earlier handoff of the same
//    event must not settle the one the session waits for now.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type {
  ServiceBusReceivedMessage,
  ServiceBusSender,
  ServiceBusSessionReceiver,
} from '@azure/service-bus';
import type { ServiceBusClient, ServiceBusMessage } from '@azure/service-bus';
import { eventBody } from './contract/index.ts';
import { Dispatcher } from './dispatcher.ts';
import { HandoffClient } from './handoffClient.ts';
import type { HandoffToken } from './handoffToken.ts';
import { HandlerRegistry } from './handlers.ts';
import { SessionStateCache, sessionDeliveryPort } from './sessionPort.ts';

/** One session on the broker: its state bytes and what the endpoint sent and settled. */
class BrokerSession {
  stateBytes: Buffer | undefined;
  /** `MessageType` of every message the endpoint sent, in order; `sentMessages` has their ids and properties. */
  sent: string[] = [];
  sentMessages: Array<{ messageId: string; props: Record<string, unknown> }> = [];
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
      for (const one of (Array.isArray(m) ? m : [m]) as Array<{
        messageId: string;
        applicationProperties: Record<string, unknown>;
      }>) {
        this.sent.push(String(one.applicationProperties.MessageType));
        this.sentMessages.push({ messageId: one.messageId, props: one.applicationProperties });
      }
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

/**
 * The message the bus HandoffClient sends to the Manager topic for `token`, as it reaches the endpoint: the Manager
 * subscription's rule stamps From = 'Manager' and forwards it.
 */
async function settlementFor(
  token: HandoffToken,
  settle: (client: HandoffClient, token: HandoffToken) => Promise<unknown>,
): Promise<ServiceBusReceivedMessage> {
  let sent: ServiceBusMessage | undefined;
  const client = {
    createSender: () => ({
      sendMessages: async (m: ServiceBusMessage) => void (sent = m),
      close: async () => undefined,
    }),
  } as unknown as ServiceBusClient;
  await settle(new HandoffClient(client), token);
  assert.ok(sent, 'the handoff client sent nothing');
  return {
    ...sent,
    deliveryCount: 0,
    applicationProperties: { ...sent.applicationProperties, From: 'Manager' },
  } as unknown as ServiceBusReceivedMessage;
}

describe('handoff settlement names the handoff, not only its event', () => {
  test('a late settlement of an earlier handoff of the same event is refused; the current handoff still settles', async () => {
    const session = new BrokerSession({});
    const tokens: HandoffToken[] = [];
    const dispatcher = new Dispatcher({
      endpointId: 'billing',
      handlers: new HandlerRegistry().on('OrderPlaced', (_e, ctx) => {
        tokens.push(ctx.markPendingHandoff('ERP import', `job-${tokens.length + 1}`));
      }),
    });
    const announced = () =>
      session.sentMessages.filter((m) => m.props.MessageType === 'PendingHandoffResponse').map((m) => m.messageId);

    // e1 is handed off (job 1); while it is pending the operator resubmits e1, which hands it off again (job 2).
    assert.equal(await deliver(dispatcher, session, received('m1', { EventId: 'e1' })), 'completed');
    const resubmission = received('resubmit-1', {
      EventId: 'e1',
      MessageType: 'ResubmissionRequest',
      From: 'Manager',
    });
    assert.equal(await deliver(dispatcher, session, resubmission), 'completed');
    assert.equal(tokens.length, 2);
    const [firstAnnounced, secondAnnounced] = announced();
    assert.ok(firstAnnounced && secondAnnounced && firstAnnounced !== secondAnnounced);
    assert.equal(session.stored().BlockedByMessageId, 'resubmit-1');

    // Job 1's agent reports late, with the token of the first handoff: the session waits for job 2, not for it.
    const lateCompletion = await settlementFor(tokens[0]!, (c, t) => c.complete(t, { imported: 1 }));
    assert.equal(await deliver(dispatcher, session, lateCompletion), 'deadLettered');
    assert.deepEqual(session.settled.slice(-1), ['deadLetter CommandRefused']);
    assert.equal(session.stored().BlockedByEventId, 'e1', 'a late completion of job 1 released job 2’s session');
    assert.equal(session.stored().BlockedByMessageId, 'resubmit-1');

    // The console names a handoff by the PendingHandoffResponse its row shows (server/manager/commands.ts:
    // ParentMessageId = the row's lastMessageId): the first one's is just as stale.
    const consoleLate = received('mgr-late', {
      EventId: 'e1',
      MessageType: 'HandoffCompletedRequest',
      From: 'Manager',
      ParentMessageId: firstAnnounced,
    });
    assert.equal(await deliver(dispatcher, session, consoleLate), 'deadLettered');
    assert.equal(session.stored().BlockedByEventId, 'e1');

    // A late failure of job 1 is refused too: answered, it would record Failed over job 2's pending handoff.
    const answersBefore = session.sent.filter((t) => t === 'ErrorResponse').length;
    const lateFailure = await settlementFor(tokens[0]!, (c, t) => c.fail(t, 'job 1 rejected 3 lines'));
    assert.equal(await deliver(dispatcher, session, lateFailure), 'deadLettered');
    assert.deepEqual(session.settled.slice(-1), ['deadLetter CommandRefused']);
    const notices = session.sentMessages.filter((m) => m.props.MessageType === 'ErrorResponse');
    assert.equal(notices.length, answersBefore + 1, 'only the refusal notice, no Failed answer');
    assert.equal(notices.at(-1)!.props.DeadLetterReason, 'CommandRefused');

    // Job 2's completion, from the console (naming the PendingHandoffResponse), releases the session.
    const consoleCompletion = received('mgr-2', {
      EventId: 'e1',
      MessageType: 'HandoffCompletedRequest',
      From: 'Manager',
      ParentMessageId: secondAnnounced,
    });
    assert.equal(await deliver(dispatcher, session, consoleCompletion), 'completed');
    assert.equal(session.stored().BlockedByEventId, null);
    assert.equal(session.sentMessages.at(-1)!.props.MessageType, 'ResolutionResponse');
  });

  test('the current handoff settles with its token; a request without ParentMessageId still settles by EventId', async () => {
    for (const how of ['token', 'no ParentMessageId'] as const) {
      const session = new BrokerSession({});
      const tokens: HandoffToken[] = [];
      const dispatcher = new Dispatcher({
        endpointId: 'billing',
        handlers: new HandlerRegistry().on('OrderPlaced', (_e, ctx) => {
          tokens.push(ctx.markPendingHandoff('ERP import', 'job-1'));
        }),
      });
      assert.equal(await deliver(dispatcher, session, received('m1', { EventId: 'e1' })), 'completed');
      const completion =
        how === 'token'
          ? await settlementFor(tokens[0]!, (c, t) => c.complete(t, { imported: 1 }))
          : received('old-style', { EventId: 'e1', MessageType: 'HandoffCompletedRequest', From: 'Manager' });
      assert.equal(await deliver(dispatcher, session, completion), 'completed', how);
      assert.equal(session.stored().BlockedByEventId, null, how);
    }
  });
});
