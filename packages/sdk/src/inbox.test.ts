// The opt-in inbox: decisions for duplicates, and what the dispatcher records (and when it refuses to guess).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { emptySessionState, eventBody, HEARTBEAT_EVENT_TYPE_ID } from './contract/index.ts';
import type { SessionState } from './contract/index.ts';
import { route } from './decide.ts';
import { Dispatcher } from './dispatcher.ts';
import type { DeliveryPort } from './dispatcher.ts';
import { HandlerRegistry } from './handlers.ts';
import { fromReceived } from './inbound.ts';
import { inboxKey, MemoryInboxStore } from './inbox.ts';
import type { InboxStore } from './inbox.ts';
import { bodyText } from './outbound.ts';
import type { OutgoingMessage } from './outbound.ts';

const received = (props: Record<string, unknown> = {}, messageId = 'm1') => ({
  messageId,
  sessionId: 's1',
  body: eventBody('OrderPlaced', { n: 1 }),
  applicationProperties: {
    To: 'billing',
    From: 'shop',
    MessageType: 'EventRequest',
    EventId: 'e1',
    EventTypeId: 'OrderPlaced',
    ...props,
  },
});

class Port implements DeliveryPort {
  log: string[] = [];
  constructor(public state: SessionState = emptySessionState()) {}
  async readState() {
    return this.state;
  }
  async writeState(s: SessionState) {
    this.state = s;
    this.log.push(`state blocked=${s.BlockedByEventId}`);
  }
  async send(m: OutgoingMessage) {
    const text = JSON.parse(bodyText(m)).ErrorContent?.ErrorText;
    this.log.push(`send ${m.applicationProperties.MessageType}${text ? `(${text})` : ''}`);
  }
  async schedule() {
    this.log.push('schedule');
  }
  async complete() {
    this.log.push('complete');
  }
  async deadLetter(r: string) {
    this.log.push(`deadLetter ${r}`);
  }
}

const env = {
  endpointId: 'billing',
  clock: { startedAt: new Date(), now: new Date() },
  sdkVersion: '1',
  newId: () => 'x',
  hasHandler: () => true,
};
const shape = (r: ReturnType<typeof route>) =>
  r.kind === 'settle'
    ? r.settlement.effects.map((e) =>
        e.kind === 'send' ? `send ${e.message.applicationProperties.MessageType}` : e.kind,
      )
    : ['invoke'];

describe('inbox decisions', () => {
  test('a duplicate EventRequest on a session blocked by another event is answered, not parked', () => {
    const r = route(fromReceived(received()), { ...emptySessionState(), BlockedByEventId: 'other' }, env, {
      duplicate: true,
    });
    assert.deepEqual(shape(r), ['send SkipResponse', 'complete']);
  });

  test('a duplicate RetryRequest of the blocker finishes the release: unblock, drain, duplicate skip', () => {
    const r = route(
      fromReceived(received({ MessageType: 'RetryRequest', From: 'Retry' })),
      { ...emptySessionState(), BlockedByEventId: 'e1', NextDeferralSequence: 1, DeferredCount: 1 },
      env,
      { duplicate: true },
    );
    assert.deepEqual(shape(r), ['setState', 'send ProcessDeferredRequest', 'send SkipResponse', 'complete']);
  });

  test('a duplicate RetryRequest while blocked by another event leaves that block alone', () => {
    const r = route(
      fromReceived(received({ MessageType: 'RetryRequest', From: 'Retry' })),
      { ...emptySessionState(), BlockedByEventId: 'e2', NextDeferralSequence: 1 },
      env,
      { duplicate: true },
    );
    assert.deepEqual(shape(r), ['send SkipResponse', 'complete']);
  });

  test('a duplicate flag never bypasses the Manager check', () => {
    const r = route(
      fromReceived(received({ MessageType: 'ResubmissionRequest', From: 'shop' })),
      emptySessionState(),
      env,
      { duplicate: true },
    );
    assert.deepEqual(shape(r), ['send ErrorResponse', 'deadLetter']);
  });

  test('keys: blank or oversized ids bypass; endpoints are kept apart', () => {
    assert.equal(inboxKey('billing', ''), undefined);
    assert.equal(inboxKey('billing', 'x'.repeat(513)), undefined);
    assert.ok(inboxKey('billing', 'x'.repeat(512)));
    assert.notEqual(inboxKey('billing', 'm1'), inboxKey('crm', 'm1'));
    assert.notEqual(inboxKey('a', 'b\u001fc'), inboxKey('a\u001fb', 'c'));
  });
});

describe('dispatcher with an inbox', () => {
  function make(store: InboxStore, handler: () => void = () => undefined) {
    let calls = 0;
    const d = new Dispatcher({
      endpointId: 'billing',
      inbox: store,
      handlers: new HandlerRegistry().on('OrderPlaced', () => {
        calls++;
        handler();
      }),
    });
    return { d, calls: () => calls };
  }
  const signal = new AbortController().signal;

  test('a success is recorded; the redelivery is a duplicate and the handler does not run again', async () => {
    const { d, calls } = make(new MemoryInboxStore());
    const first = new Port();
    await d.dispatch(received(), first, signal);
    assert.deepEqual(first.log, ['send ResolutionResponse', 'complete']);
    const again = new Port();
    await d.dispatch(received(), again, signal);
    assert.deepEqual(again.log, ['send SkipResponse(DuplicateDetected)', 'complete']);
    assert.equal(calls(), 1);
  });

  test('failures and handoffs are not recorded', async () => {
    const store = new MemoryInboxStore();
    const failing = make(store, () => {
      throw new Error('no');
    });
    await failing.d.dispatch(received(), new Port(), signal);
    assert.equal(await store.has(inboxKey('billing', 'm1')!), false);
    const parking = new Dispatcher({
      endpointId: 'billing',
      inbox: store,
      handlers: new HandlerRegistry().on('OrderPlaced', (_e, ctx) => void ctx.markPendingHandoff('r')),
    });
    await parking.dispatch(received(), new Port(), signal);
    assert.equal(await store.has(inboxKey('billing', 'm1')!), false);
  });

  test('a store outage is transient, never "duplicate": nothing settled, the message comes back', async () => {
    const broken: InboxStore = {
      has: async () => {
        throw new Error('cosmos unavailable');
      },
      add: async () => undefined,
    };
    const { d, calls } = make(broken);
    const port = new Port();
    assert.equal(await d.dispatch(received(), port, signal), 'transient');
    assert.deepEqual(port.log, []);
    assert.equal(calls(), 0);
  });

  test('heartbeats are neither checked nor recorded', async () => {
    const store = new MemoryInboxStore();
    await store.add(inboxKey('billing', 'probe')!, new Date());
    const { d } = make(store);
    const port = new Port();
    await d.dispatch(
      {
        ...received({ EventTypeId: HEARTBEAT_EVENT_TYPE_ID, From: 'Manager' }, 'probe'),
        body: eventBody(HEARTBEAT_EVENT_TYPE_ID, {}),
      },
      port,
      signal,
    );
    assert.deepEqual(port.log, ['send ResolutionResponse', 'complete']);
  });

  test('a successful resubmission of the blocker also records the delivery that blocked the session', async () => {
    const store = new MemoryInboxStore();
    const { d } = make(store);
    const port = new Port({ ...emptySessionState(), BlockedByEventId: 'e1', BlockedByMessageId: 'original' });
    await d.dispatch(
      received({ MessageType: 'ResubmissionRequest', From: 'Manager' }, 'resubmit-1'),
      port,
      signal,
    );
    assert.equal(await store.has(inboxKey('billing', 'resubmit-1')!), true);
    assert.equal(await store.has(inboxKey('billing', 'original')!), true);
    assert.equal(port.state.BlockedByEventId, null);
  });
});
