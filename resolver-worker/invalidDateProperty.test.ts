// resolve.ts promises "It never throws: every path ends in a Settlement the processor carries out, so a bad message
// can neither crash the worker nor block its session", and docs/resolver.md "Validation" reads properties leniently.
// A Date-typed application property that decodes to an Invalid Date (an AMQP timestamp outside JS Date's ±8.64e15 ms,
// e.g. a Java sender's new Date(Long.MAX_VALUE) "never") made readResolverMessage throw a RangeError
// (properties[key] = value.toISOString()), outside resolveRead's try: resolveMessage rejected, and BatchResolution's
// constructor threw, which #receiveLoop does not catch (the session's whole receive was released unsettled, again and
// again, until the broker dead-lettered every message of it as MaxDeliveryCountExceeded). Now such a property is
// dropped and named in ResolverPropertyProblems, and a read that throws for any other reason is one message's
// ResolverFailure dead letter, not the receive's failure.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServiceBusReceivedMessage } from '@azure/service-bus';
import { pino } from 'pino';
import { MessageType as T, Prop } from '@nimbus/sdk/contract';
import { BatchResolution, DeadLetterReason, resolveMessage, type ResolveContext } from './resolve.ts';
import { readResolverMessage } from './read.ts';
import { DEFAULT_BUDGET } from './budget.ts';

let n = 0;
const received = (props: Record<string, unknown>): ServiceBusReceivedMessage =>
  ({
    messageId: `m-${++n}`,
    sessionId: 's-1',
    body: Buffer.from(JSON.stringify({ EventContent: { EventTypeId: 'OrderPlaced', EventJson: '{}' } })),
    enqueuedTimeUtc: new Date(),
    deliveryCount: 0,
    applicationProperties: { [Prop.MessageType]: T.EventRequest, [Prop.EventId]: `e-${n}`, [Prop.To]: 'crm', [Prop.From]: 'shop', ...props },
  }) as unknown as ServiceBusReceivedMessage;

/** A store that records every outcome it is given (a pure fake: what is checked here is the read, not the store). */
function fakeStore() {
  const recorded: Array<{ history: { messageId: string; properties?: Record<string, unknown> } }> = [];
  const store = new Proxy(
    {
      recordOutcome: (args: (typeof recorded)[number]) => {
        recorded.push(args);
        return Promise.resolve({ history: { recorded: true }, status: { outcome: 'written', row: { status: 'Pending' }, counters: 'queued' } });
      },
    } as Record<string, unknown>,
    { get: (target, key) => target[key as string] ?? (() => Promise.reject(new Error(`store.${String(key)} not expected`))) },
  );
  return { store, recorded };
}

const ctxWith = (store: unknown) =>
  ({
    store,
    log: pino({ level: 'silent' }),
    metrics: new Proxy({}, { get: () => () => undefined }),
    budget: { ...DEFAULT_BUDGET },
    inPlaceMaxDelayMs: 10,
    transientMaxDelayMs: 10,
    signal: new AbortController().signal,
    version: 'test',
    now: () => new Date(),
  }) as unknown as ResolveContext;

test('reading: an out-of-range Date property (Invalid Date) is dropped and named, the rest read as usual', () => {
  const m = readResolverMessage(received({ ValidUntil: new Date(9e15), Note: 'kept' }));
  assert.deepEqual(m.problems, ['ValidUntil is not a date-time']);
  assert.equal('ValidUntil' in m.properties, false);
  assert.equal(m.properties.Note, 'kept');
  assert.equal(m.messageType, T.EventRequest);
});

test('resolveMessage never throws, even for a Date property that is out of range (Invalid Date): the outcome is recorded with the problem named', async () => {
  const { store, recorded } = fakeStore();
  const message = received({ ValidUntil: new Date(9e15) });
  let settlement: unknown;
  await assert.doesNotReject(async () => {
    settlement = await resolveMessage(message, ctxWith(store));
  }, 'resolveMessage rejected instead of returning a settlement');
  assert.deepEqual(settlement, { kind: 'complete', result: 'written' });
  assert.equal(recorded.length, 1);
  assert.equal(recorded[0]!.history.properties?.ResolverPropertyProblems, 'ValidUntil is not a date-time');
});

test('a batch holding such a message can be built (the processor does not catch a throw here), and both are recorded', async () => {
  const { store, recorded } = fakeStore();
  const messages = [received({}), received({ ValidUntil: new Date(9e15) })];
  let batch: BatchResolution | undefined;
  assert.doesNotThrow(() => (batch = new BatchResolution(messages, ctxWith(store))));
  for (const m of messages) assert.deepEqual(await batch!.resolve(m), { kind: 'complete', result: 'written' });
  assert.equal(recorded.length, 2);
});

test('a read that throws anyway is that message\'s ResolverFailure dead letter; the rest of the batch is recorded', async () => {
  const { store, recorded } = fakeStore();
  const bad = received({});
  // No read of a real message throws now; a body that cannot even be looked at stands for the next such bug.
  Object.defineProperty(bad, 'body', { get: () => { throw new RangeError('unreadable'); } });
  const single = await resolveMessage(bad, ctxWith(store));
  assert.equal(single.kind, 'deadLetter');
  assert.equal(single.kind === 'deadLetter' && single.reason, DeadLetterReason.ResolverFailure);
  assert.match(single.kind === 'deadLetter' ? single.description : '', /could not be read: RangeError: unreadable/);
  const good = received({});
  const batch = new BatchResolution([bad, good], ctxWith(store));
  assert.equal((await batch.resolve(bad)).kind, 'deadLetter');
  assert.deepEqual(await batch.resolve(good), { kind: 'complete', result: 'written' });
  assert.equal(recorded.length, 1, 'only the readable message reached the store');
});
