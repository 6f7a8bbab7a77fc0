// A body that is not a readable envelope, parked behind a block and replayed: the copies carry the received bytes
// (and content type), and the delivery that finally dead-letters it names the real problem. Pure logic over a fake
// port; the same path on the embedded emulator is packages/sdk/e2e/parkedBody.test.ts.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { emptySessionState, eventBody, Prop } from './contract/index.ts';
import type { SessionState } from './contract/index.ts';
import { Dispatcher } from './dispatcher.ts';
import type { DeliveryPort } from './dispatcher.ts';
import { HandlerRegistry } from './handlers.ts';
import { fromReceived } from './inbound.ts';
import type { ReceivedLike } from './inbound.ts';
import { bodyText, buildParkedCopy, buildReplayedCopy } from './outbound.ts';
import type { OutgoingMessage } from './outbound.ts';
import { toServiceBusMessage } from './transport.ts';

class Port implements DeliveryPort {
  log: string[] = [];
  sent: OutgoingMessage[] = [];
  constructor(public state: SessionState = emptySessionState()) {}
  async readState() {
    return this.state;
  }
  async writeState(s: SessionState) {
    this.state = s;
  }
  async send(m: OutgoingMessage) {
    this.log.push(`send ${m.applicationProperties[Prop.MessageType] ?? ''}->${m.applicationProperties[Prop.To]}`);
    this.sent.push(m);
  }
  async schedule() {
    this.log.push('schedule');
  }
  async complete() {
    this.log.push('complete');
  }
  async deadLetter(reason: string, description: string) {
    this.log.push(`deadLetter ${reason} | ${description}`);
  }
}

const props = {
  To: 'billing',
  From: 'shop',
  MessageType: 'EventRequest',
  EventId: 'e2',
  EventTypeId: 'OrderPlaced',
};

/** As @azure/service-bus hands a data section over: the body JSON-parsed when it can be, the raw section beside it. */
function receivedFromWire(bytes: Buffer, extra: Partial<ReceivedLike> = {}): ReceivedLike {
  let body: unknown = bytes;
  try {
    body = JSON.parse(bytes.toString('utf8'));
  } catch {
    // not JSON: the client hands the bytes over
  }
  return {
    messageId: 'm2',
    sessionId: 's1',
    body,
    _rawAmqpMessage: { body: { typecode: 0x75, content: bytes }, bodyType: 'data' },
    applicationProperties: { ...props },
    ...extra,
  };
}

const dispatcher = () =>
  new Dispatcher({ endpointId: 'billing', handlers: new HandlerRegistry().on('OrderPlaced', () => undefined) });
const signal = new AbortController().signal;

const unreadable: Array<{ name: string; bytes: Buffer; problem: RegExp }> = [
  {
    name: 'raw JSON, not the envelope',
    bytes: Buffer.from('{"orderId": 42,  "note": "raw JSON, not the envelope"}', 'utf8'),
    problem: /not a NimBus envelope: a JSON object without EventContent or ErrorContent/,
  },
  { name: 'not JSON', bytes: Buffer.from('not json at all', 'utf8'), problem: /the body is not valid JSON/ },
  {
    name: 'an envelope field of the wrong type',
    bytes: Buffer.from('{"EventContent":{"EventTypeId":"OrderPlaced","EventJson":{"n":2}},"ErrorContent":null}'),
    problem: /not a NimBus envelope: EventContent\.EventJson/,
  },
];

describe('a body that is not a readable envelope', () => {
  for (const c of unreadable) {
    test(`${c.name}: parked and replayed copies carry the received bytes, the dead-letter names the problem`, async () => {
      // Parked: the session is blocked by e1.
      const blocked = { ...emptySessionState(), BlockedByEventId: 'e1', BlockedByMessageId: 'm1' };
      const port = new Port(blocked);
      const parkedResult = await dispatcher().dispatch(
        receivedFromWire(c.bytes, { contentType: 'text/x-raw' }),
        port,
        signal,
      );
      assert.equal(parkedResult, 'deferred');
      const parked = port.sent.find((m) => m.applicationProperties[Prop.To] === 'Deferred');
      assert.ok(parked, port.log.join(', '));
      const wire = toServiceBusMessage(parked);
      assert.ok(Buffer.isBuffer(wire.body));
      assert.equal((wire.body as Buffer).toString('utf8'), c.bytes.toString('utf8'), 'the parked copy keeps the bytes');
      assert.equal(wire.contentType, 'text/x-raw');

      // Replayed: the deferred processor receives the parked copy and sends it back to the endpoint.
      const parkedIn = fromReceived(
        receivedFromWire(wire.body as Buffer, {
          messageId: parked.messageId,
          contentType: 'text/x-raw',
          applicationProperties: parked.applicationProperties,
        }),
      );
      const replayed = buildReplayedCopy(parkedIn, 'billing', 's1', 1, true);
      const replayedWire = toServiceBusMessage(replayed);
      assert.equal((replayedWire.body as Buffer).toString('utf8'), c.bytes.toString('utf8'));
      assert.equal(replayedWire.contentType, 'text/x-raw');

      // The replayed copy, the session released meanwhile: dead-lettered with the real problem, not "EventJson is
      // missing" (what the empty envelope the copies used to carry said).
      const after = new Port({ ...emptySessionState(), NextDeferralSequence: 1 });
      const result = await dispatcher().dispatch(
        receivedFromWire(replayedWire.body as Buffer, {
          messageId: replayed.messageId,
          applicationProperties: replayed.applicationProperties,
        }),
        after,
        signal,
      );
      assert.equal(result, 'deadLettered');
      const dead = after.log.find((s) => s.startsWith('deadLetter'));
      assert.match(dead ?? '', c.problem, after.log.join(', '));
      assert.doesNotMatch(dead ?? '', /EventJson\) is missing/);
    });
  }

  test('raw JSON without a block is dead-lettered as not an envelope, not as a missing EventJson', async () => {
    const port = new Port();
    const result = await dispatcher().dispatch(
      receivedFromWire(Buffer.from('{"orderId":42}', 'utf8')),
      port,
      signal,
    );
    assert.equal(result, 'deadLettered');
    assert.match(port.log.find((s) => s.startsWith('deadLetter')) ?? '', /not a NimBus envelope/);
  });

  test('the copy takes the raw data section, not the JSON the client parsed out of it', () => {
    // Parsed and written again, these bytes would change (spacing, the number's form, key order).
    const bytes = Buffer.from('{ "EventContent": {"EventTypeId":"OrderPlaced","EventJson":"{\\"n\\":1.0}"}, "ErrorContent": null }');
    const copy = buildParkedCopy(fromReceived(receivedFromWire(bytes)), 0);
    assert.equal(bodyText(copy), bytes.toString('utf8'));
    // No content type received: none sent (an envelope the SDK writes itself says application/json).
    assert.equal('contentType' in toServiceBusMessage(copy), false);
    assert.equal(toServiceBusMessage({ ...copy, body: eventBody('OrderPlaced', {}) }).contentType, 'application/json');
  });

  test('without a raw section (a value section, a test message) the text or the JSON of the body is carried', () => {
    const text = buildParkedCopy(fromReceived({ messageId: 'a', body: 'plain text', applicationProperties: props }), 0);
    assert.equal(bodyText(text), 'plain text');
    const value = buildParkedCopy(
      fromReceived({
        messageId: 'b',
        body: { orderId: 1 },
        _rawAmqpMessage: { body: { orderId: 1 }, bodyType: 'value' },
        applicationProperties: props,
      }),
      0,
    );
    assert.equal(bodyText(value), '{"orderId":1}');
  });
  test('a body of several data sections is carried as their bytes in order, not as the JSON of Buffer objects', () => {
    // rhea hands several data sections over as one section whose content is an array; the client leaves the body
    // as that array of Buffers.
    const chunks = [Buffer.from('{"EventContent":null,'), Buffer.from('"ErrorContent":null}')];
    const copy = buildParkedCopy(
      fromReceived({
        messageId: 'c',
        body: chunks,
        _rawAmqpMessage: { body: { typecode: 0x75, multiple: true, content: chunks }, bodyType: 'data' },
        applicationProperties: props,
      }),
      0,
    );
    assert.equal(bodyText(copy), '{"EventContent":null,"ErrorContent":null}');
    const noRaw = buildParkedCopy(fromReceived({ messageId: 'd', body: chunks, applicationProperties: props }), 0);
    assert.equal(bodyText(noRaw), '{"EventContent":null,"ErrorContent":null}');
  });

  test('a message that came without a body is carried without one, not as an empty data section', () => {
    const copy = buildParkedCopy(fromReceived({ messageId: 'e', body: undefined, applicationProperties: props }), 0);
    // The client sends null as the JSON null, read back as null ("no body"); an empty Buffer would be read back as
    // an empty Buffer, which decodes as "not valid JSON".
    assert.equal(toServiceBusMessage(copy).body, null);
  });
});
