// Reading and projecting one Resolver message (pure): attribution by type, lenient property reading, clipping.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServiceBusReceivedMessage } from '@azure/service-bus';
import { encodeBody, eventBody, MessageType as T, Prop } from '@nimbus/sdk/contract';
import { endpointOf, isHistoryOnly, project } from './project.ts';
import { readResolverMessage } from './read.ts';

const received = (props: Record<string, unknown>, body: unknown = encodeBody({}), extra: Partial<ServiceBusReceivedMessage> = {}) =>
  ({
    body: typeof body === 'string' ? Buffer.from(body) : body,
    messageId: 'm-1',
    sessionId: 's-1',
    deliveryCount: 0,
    enqueuedTimeUtc: new Date('2026-12-02T10:00:00.000Z'),
    applicationProperties: props,
    ...extra,
  }) as unknown as ServiceBusReceivedMessage;

describe('reading a Resolver message', () => {
  test('a bad property value is dropped and named, not fatal; ids and counters normalized', () => {
    const m = readResolverMessage(
      received({ [Prop.MessageType]: 'EventRequest', [Prop.EventId]: 42, [Prop.RetryCount]: 'x', [Prop.ExpectedBy]: 'soon', [Prop.ThrottleRetryCount]: '3' }),
    );
    assert.equal(m.messageType, T.EventRequest);
    assert.equal(m.eventId, '42');
    assert.equal(m.retryCount, undefined);
    assert.equal(m.expectedBy, undefined);
    assert.equal(m.throttleRetryCount, 3);
    assert.deepEqual(m.problems, ['RetryCount is not a non-negative integer', 'ExpectedBy is not a date-time']);
    assert.equal(m.enqueuedAt, '2026-12-02T10:00:00.000Z');
  });

  test('an unknown type is kept raw; the event type falls back to the body; an unreadable body is a problem, a missing one is not', () => {
    const m = readResolverMessage(received({ [Prop.MessageType]: 'Bogus' }, eventBody('OrderPlaced', {})));
    assert.equal(m.messageType, undefined);
    assert.equal(m.rawMessageType, 'Bogus');
    assert.equal(m.eventTypeId, 'OrderPlaced');
    assert.equal(readResolverMessage(received({}, '{nope')).bodyProblem, 'the body is not valid JSON');
    assert.equal(readResolverMessage(received({}, null)).bodyProblem, undefined);
  });
});

describe('projecting it', () => {
  test('requests belong to To, responses to From; a request without From is recorded as OriginatingFrom or self', () => {
    const req = readResolverMessage(received({ [Prop.MessageType]: 'RetryRequest', [Prop.To]: 'crm', [Prop.From]: 'Retry', [Prop.EventId]: 'e' }));
    assert.equal(endpointOf({ ...req, messageType: T.RetryRequest }), 'crm');
    const res = readResolverMessage(received({ [Prop.MessageType]: 'ErrorResponse', [Prop.To]: 'Resolver', [Prop.From]: 'crm', [Prop.EventId]: 'e' }));
    assert.equal(endpointOf({ ...res, messageType: T.ErrorResponse }), 'crm');
    const bare = readResolverMessage(received({ [Prop.MessageType]: 'EventRequest', [Prop.To]: 'crm', [Prop.EventId]: 'e' }));
    assert.equal(project({ ...bare, messageType: T.EventRequest, eventId: 'e' }, 'crm').status.from, 'self');
  });

  test('the payload goes with requests only; long error texts are clipped instead of refused', () => {
    const req = readResolverMessage(received({ [Prop.MessageType]: 'EventRequest', [Prop.EventId]: 'e' }, eventBody('OrderPlaced', { orderId: 'o' })));
    assert.deepEqual(project({ ...req, messageType: T.EventRequest, eventId: 'e' }, 'crm').status.payload, { orderId: 'o' });
    const long = 'x'.repeat(40_000);
    const res = readResolverMessage(
      received({ [Prop.MessageType]: 'ErrorResponse', [Prop.EventId]: 'e' }, encodeBody({ EventContent: { EventTypeId: 'OrderPlaced', EventJson: '{}' }, ErrorContent: { ErrorText: long } })),
    );
    const p = project({ ...res, messageType: T.ErrorResponse, eventId: 'e' }, 'crm');
    assert.equal('payload' in p.status, false);
    assert.equal(p.status.errorText!.length, 32_768);
    assert.match(p.status.errorText!, /\[truncated\]$/);
  });
});

describe('history-only messages', () => {
  const read = (props: Record<string, unknown>) => {
    const m = readResolverMessage(received({ [Prop.EventId]: 'e-1', [Prop.To]: 'crm', ...props }));
    return { ...m, messageType: m.messageType! };
  };
  test('a Manager-only command counts only when it came from the Manager', () => {
    for (const type of [T.SkipRequest, T.ResubmissionRequest, T.HandoffCompletedRequest, T.HandoffFailedRequest]) {
      assert.equal(isHistoryOnly(read({ [Prop.MessageType]: type, [Prop.From]: 'Manager' })), false, type);
      assert.equal(isHistoryOnly(read({ [Prop.MessageType]: type, [Prop.From]: 'manager' })), false, type);
      assert.equal(isHistoryOnly(read({ [Prop.MessageType]: type, [Prop.From]: 'shop' })), true, type);
      assert.equal(isHistoryOnly(read({ [Prop.MessageType]: type })), true, type);
    }
    assert.equal(isHistoryOnly(read({ [Prop.MessageType]: T.RetryRequest, [Prop.From]: 'Retry' })), false);
  });
  test('the stored history entry is judged as the Resolver judged the message (a Manager-only command without From stays refused)', () => {
    // A dead letter put back by hand keeps OriginatingFrom but loses From: a request is recorded under its
    // OriginatingFrom, but a Manager-only command's From is what authorises it. Recorded as "Manager" it read as
    // operator intent on its entry (and, dead-lettered, as the event's DeadLettered outcome to Reconcile) although
    // the Resolver had judged it history-only and never written the row.
    for (const type of [T.SkipRequest, T.ResubmissionRequest, T.HandoffCompletedRequest, T.HandoffFailedRequest]) {
      for (const props of [
        { [Prop.OriginatingFrom]: 'Manager' },
        { [Prop.OriginatingFrom]: 'manager' },
        { [Prop.OriginatingFrom]: 'shop' },
        {},
        { [Prop.From]: 'shop', [Prop.OriginatingFrom]: 'Manager' },
        { [Prop.From]: 'Manager', [Prop.OriginatingFrom]: 'shop' },
      ]) {
        const m = read({ [Prop.MessageType]: type, [Prop.DeadLetterErrorDescription]: 'replayed by hand', ...props });
        const { history } = project({ ...m, eventId: 'e-1' }, 'crm');
        assert.equal(isHistoryOnly(history), isHistoryOnly(m), `${type} ${JSON.stringify(props)}: recorded From ${history.from}`);
      }
    }
    const replayed = read({ [Prop.MessageType]: T.ResubmissionRequest, [Prop.OriginatingFrom]: 'Manager' });
    assert.equal(project({ ...replayed, eventId: 'e-1' }, 'crm').history.from, 'self', 'who sent it is unknown, not the Manager');
    const request = read({ [Prop.MessageType]: T.EventRequest, [Prop.OriginatingFrom]: 'shop' });
    assert.equal(project({ ...request, eventId: 'e-1' }, 'crm').history.from, 'shop', 'other requests keep OriginatingFrom');
  });
  test('subscriber notices and the replay trigger are history only; an ordinary dead-letter notification is not', () => {
    const notice = (reason: string) =>
      read({ [Prop.MessageType]: T.ErrorResponse, [Prop.From]: 'crm', [Prop.DeadLetterReason]: reason, [Prop.DeadLetterErrorDescription]: 'why' });
    assert.equal(isHistoryOnly(notice('CommandRefused')), true);
    assert.equal(isHistoryOnly(notice('ReplayGap')), true);
    assert.equal(isHistoryOnly(notice('Failed to handle message.')), false);
    assert.equal(isHistoryOnly(read({ [Prop.MessageType]: T.ProcessDeferredRequest })), true);
  });
});
