import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  addPendingHandoff,
  ALL_MESSAGE_TYPES,
  ALL_PROPERTY_NAMES,
  MessageType,
  ResolutionStatus,
  PendingSubStatus,
  decodeBody,
  derivedMessageId,
  fnv1a64,
  MAX_MESSAGE_ID_LENGTH,
  decodeSessionState,
  emptySessionState,
  encodeBody,
  encodeSessionState,
  eventBody,
  InvalidSessionStateError,
  isBlocked,
  isDraining,
  isEmptySessionState,
  isHeartbeatEventType,
  MAX_PENDING_HANDOFFS,
  pendingHandoffsFull,
  jsonDepth,
  parseEventPayload,
  parseMessageType,
  parseNimbusProperties,
  readHeartbeatPayload,
  resultingStatus,
  sessionStateSchema,
  settlePendingHandoff,
  toWireProperties,
} from './index.ts';

describe('message types and property names', () => {
  test('the fourteen wire message types of the specification, each spelled as its own name', () => {
    assert.equal(ALL_MESSAGE_TYPES.length, 14);
    for (const type of ALL_MESSAGE_TYPES) assert.equal(MessageType[type], type);
    assert.equal(parseMessageType('PendingHandoffResponse'), 'PendingHandoffResponse');
    assert.equal(parseMessageType('eventrequest'), undefined, 'names are case-sensitive on the wire');
    assert.equal(parseMessageType('Unknown'), undefined);
  });

  test('property names are unique', () => {
    assert.equal(new Set(ALL_PROPERTY_NAMES).size, ALL_PROPERTY_NAMES.length);
    assert.ok(ALL_PROPERTY_NAMES.includes('OriginatingMessageId'));
  });
});

describe('resolution status', () => {
  test('maps each response type to its status and handoff to Pending/Handoff', () => {
    assert.deepEqual(resultingStatus('ResolutionResponse'), { status: 'Completed' });
    assert.deepEqual(resultingStatus('ErrorResponse'), { status: 'Failed' });
    assert.deepEqual(resultingStatus('DeferralResponse'), { status: 'Deferred' });
    assert.deepEqual(resultingStatus('SkipResponse'), { status: 'Skipped' });
    assert.deepEqual(resultingStatus('UnsupportedResponse'), { status: 'Unsupported' });
    assert.deepEqual(resultingStatus('EventRequest'), { status: 'Pending' });
    assert.deepEqual(resultingStatus('PendingHandoffResponse'), {
      status: ResolutionStatus.Pending,
      subStatus: PendingSubStatus.Handoff,
    });
  });

  test('a non-empty dead-letter description wins over the type; an empty one counts as absent', () => {
    assert.equal(resultingStatus('ErrorResponse', 'boom').status, 'DeadLettered');
    assert.equal(resultingStatus('ResolutionResponse', 'boom').status, 'DeadLettered');
    assert.equal(resultingStatus('ErrorResponse', '').status, 'Failed');
    assert.equal(resultingStatus('ErrorResponse', '   ').status, 'Failed');
  });
});

describe('application properties', () => {
  test('normalizes counters and ids and keeps unknown properties', () => {
    const result = parseNimbusProperties({ To: 'billing', MessageType: 'EventRequest', RetryCount: '2', EventId: 42, Extra: 'x' });
    assert.ok(result.ok);
    assert.equal(result.properties.MessageType, 'EventRequest');
    assert.equal(result.properties.RetryCount, 2);
    assert.equal(result.properties.EventId, '42');
    assert.equal((result.properties as Record<string, unknown>).Extra, 'x');
  });

  test('names an unknown or missing MessageType', () => {
    const unknown = parseNimbusProperties({ To: 'billing', MessageType: 'Bogus' });
    assert.ok(!unknown.ok);
    assert.match(unknown.problem, /MessageType 'Bogus' is not a NimBus message type/);
    const missing = parseNimbusProperties({ To: 'billing' });
    assert.ok(!missing.ok);
    assert.match(missing.problem, /MessageType missing/);
  });

  test('refuses a negative or non-numeric RetryCount and a missing To', () => {
    const bad = parseNimbusProperties({ To: 'b', MessageType: 'RetryRequest', RetryCount: 'three' });
    assert.ok(!bad.ok);
    assert.match(bad.problem, /RetryCount/);
    const noTo = parseNimbusProperties({ MessageType: 'SkipRequest' });
    assert.ok(!noTo.ok);
    assert.match(noTo.problem, /To/);
  });

  test('a parked copy must carry its original session and sequence', () => {
    const bad = parseNimbusProperties({ To: 'Deferred', MessageType: 'EventRequest' });
    assert.ok(!bad.ok);
    assert.match(bad.problem, /OriginalSessionId/);
    assert.match(bad.problem, /DeferralSequence/);
    const good = parseNimbusProperties({ To: 'Deferred', MessageType: 'EventRequest', OriginalSessionId: 's1', DeferralSequence: 0 });
    assert.ok(good.ok);
  });

  test('a PendingHandoffResponse needs its reason; ExpectedBy is normalized to ISO', () => {
    const missing = parseNimbusProperties({ To: 'Resolver', MessageType: 'PendingHandoffResponse' });
    assert.ok(!missing.ok);
    assert.match(missing.problem, /HandoffReason/);
    const ok = parseNimbusProperties({
      To: 'Resolver',
      MessageType: 'PendingHandoffResponse',
      HandoffReason: 'DMF import',
      ExpectedBy: new Date('2026-12-02T10:00:00Z'),
    });
    assert.ok(ok.ok && ok.properties.MessageType === 'PendingHandoffResponse');
    assert.equal(ok.properties.ExpectedBy, '2026-12-02T10:00:00.000Z');
  });

  test('toWireProperties drops empty values so an absent From stays absent', () => {
    assert.deepEqual(toWireProperties({ To: 'x', From: '', EventId: undefined, RetryCount: 0, Other: null }), { To: 'x', RetryCount: 0 });
  });
});

describe('body envelope', () => {
  test('round-trips an event with a double-encoded payload and explicit nulls', () => {
    const body = eventBody('OrderPlaced', { orderId: 'o1' });
    assert.deepEqual(JSON.parse(body), {
      EventContent: { EventTypeId: 'OrderPlaced', EventJson: '{"orderId":"o1"}' },
      ErrorContent: null,
    });
    const decoded = decodeBody(new TextEncoder().encode(body));
    assert.ok(decoded.ok);
    assert.equal(decoded.content.EventContent?.EventJson, '{"orderId":"o1"}');
  });

  test('error content carries text, type, stack and source', () => {
    const body = encodeBody({ ErrorContent: { ErrorText: 'boom', ErrorType: 'HttpError' } });
    const decoded = decodeBody(body);
    assert.ok(decoded.ok);
    assert.deepEqual(decoded.content.ErrorContent, { ErrorText: 'boom', ErrorType: 'HttpError', ExceptionStackTrace: null, ExceptionSource: null });
  });

  test('an unreadable body reads as empty content with a problem, never a throw', () => {
    for (const body of [undefined, '', 'not json', '[1]', JSON.stringify({ EventContent: 5 })]) {
      const decoded = decodeBody(body);
      assert.equal(decoded.ok, false, String(body));
      assert.deepEqual(decoded.content, { EventContent: null, ErrorContent: null });
    }
  });

  test('a JSON object that is not the envelope is refused with that problem, not read as an empty envelope', () => {
    // A raw domain event published without the envelope: it used to decode as {EventContent: null, ...}, ok, and
    // the delivery was dead-lettered as "the event payload (EventJson) is missing".
    for (const body of ['{"customerId":"P-1","n":2}', new TextEncoder().encode('{"orderId":42}'), { orderId: 42 }]) {
      const decoded = decodeBody(body);
      assert.equal(decoded.ok, false, String(body));
      assert.ok(!decoded.ok && /not a NimBus envelope/.test(decoded.problem), String(body));
      assert.deepEqual(decoded.content, { EventContent: null, ErrorContent: null });
    }
    // What valid senders write still reads: both halves, one half (nulls left out), none at all, and keys beside them.
    for (const body of [
      encodeBody({}),
      '{}',
      '{"EventContent":{"EventTypeId":"T","EventJson":"{}"}}',
      '{"ErrorContent":{"ErrorText":"x"}}',
      '{"EventContent":null,"ErrorContent":null,"Extra":1}',
    ]) {
      assert.equal(decodeBody(body).ok, true, body);
    }
    // An envelope field of the wrong type names the field.
    const wrong = decodeBody('{"EventContent":{"EventTypeId":"T","EventJson":{"n":1}}}');
    assert.ok(!wrong.ok && /EventContent\.EventJson/.test(wrong.problem), JSON.stringify(wrong));
  });

  test('payload safety: missing, null, malformed and too deep are refused', () => {
    assert.equal(parseEventPayload(undefined).ok, false);
    assert.deepEqual(parseEventPayload('null'), { ok: false, reason: 'null', problem: 'the event payload (EventJson) is null' });
    const malformed = parseEventPayload('{');
    assert.ok(!malformed.ok && malformed.reason === 'malformed');
    const deep32 = '['.repeat(32) + ']'.repeat(32);
    const deep33 = '['.repeat(33) + ']'.repeat(33);
    assert.equal(jsonDepth(JSON.parse(deep32)), 32);
    assert.equal(parseEventPayload(deep32).ok, true);
    const tooDeep = parseEventPayload(deep33);
    assert.ok(!tooDeep.ok && tooDeep.reason === 'too-deep');
    assert.equal(parseEventPayload('["a",{"b":1}]').ok, true);
  });
});

describe('session state', () => {
  test('absent and zero-length state read as defaults; empty state writes zero bytes', () => {
    assert.deepEqual(decodeSessionState(undefined), emptySessionState());
    assert.deepEqual(decodeSessionState(new Uint8Array(0)), emptySessionState());
    assert.equal(encodeSessionState(emptySessionState()).byteLength, 0);
  });

  test('round-trips every field under its wire name; missing fields default', () => {
    const state = { ...emptySessionState(), BlockedByEventId: 'e1', BlockedByMessageId: 'm1', DeferredCount: 2, NextDeferralSequence: 2 };
    const bytes = encodeSessionState(state);
    const json = JSON.parse(new TextDecoder().decode(bytes));
    assert.equal(json.BlockedByEventId, 'e1');
    assert.equal(json.NextDeferralSequence, 2);
    assert.deepEqual(decodeSessionState(bytes), state);
    // A state written by an older version has no BlockedByMessageId / NextReplaySequence.
    const legacy = decodeSessionState('{"BlockedByEventId":"e9","DeferredSequenceNumbers":[],"DeferredCount":1,"NextDeferralSequence":1}');
    assert.equal(legacy.BlockedByMessageId, null);
    assert.equal(legacy.NextReplaySequence, 0);
    assert.equal(legacy.ReleasedBy, null);
  });

  test('the delivery that released the session is remembered, and alone keeps the state from being empty', () => {
    const released = { ...emptySessionState(), ReleasedBy: { EventId: 'e1', MessageId: 'retry-1' } };
    const bytes = encodeSessionState(released);
    assert.ok(bytes.byteLength > 0, 'a release whose settlement is interrupted must still be recognisable');
    assert.deepEqual(decodeSessionState(bytes), released);
    // The answer it sent round-trips too, so its redelivery can send the same one.
    const answered = {
      ...emptySessionState(),
      ReleasedBy: {
        EventId: 'e1',
        MessageId: 'retry-1',
        Answer: { MessageType: 'SkipResponse' as const, ErrorText: 'Error: no. Classified as Discard by C.', ErrorType: 'Error' },
      },
    };
    assert.deepEqual(decodeSessionState(encodeSessionState(answered)), answered);
  });

  test('keys of a newer version are kept, nested ones too, while the known ones are still validated', () => {
    const newer = {
      BlockedByEventId: 'e1',
      FutureField: { x: 1 },
      ReleasedBy: { EventId: 'e0', MessageId: 'r0', FutureNested: 2, Answer: { MessageType: 'ResolutionResponse', FutureDeep: true } },
    };
    const read = decodeSessionState(JSON.stringify(newer));
    assert.equal(read.NextDeferralSequence, 0, 'known keys still default');
    const written = JSON.parse(new TextDecoder().decode(encodeSessionState({ ...read, DeferredCount: 1 })));
    assert.deepEqual(written.FutureField, { x: 1 });
    assert.deepEqual(written.ReleasedBy, newer.ReleasedBy);
    assert.throws(() => decodeSessionState({ ...newer, DeferredCount: 'many' }), /DeferredCount/);
    // Otherwise empty, a state holding a newer key is still written: zero bytes would erase it.
    const onlyNewer = decodeSessionState('{"FutureField":{"x":1}}');
    assert.deepEqual(JSON.parse(new TextDecoder().decode(encodeSessionState(onlyNewer))).FutureField, { x: 1 });
  });

  test('a malformed released block is dropped, not fatal: the rest of the state (and the session) still reads', () => {
    const good = { EventId: 'e1', MessageId: 'm1', FutureNested: 1 };
    const raw = {
      BlockedByEventId: 'e2',
      BlockedByMessageId: 'm2',
      ReleasedBlocks: [good, { EventId: 'e3' }, null, 'x', { EventId: 4, MessageId: 'm4' }],
    };
    const read = decodeSessionState(JSON.stringify(raw));
    assert.equal(read.BlockedByEventId, 'e2', 'the block is still read');
    assert.deepEqual(read.ReleasedBlocks, [good], 'only the readable entries are kept, with their unknown keys');
    assert.deepEqual(decodeSessionState(encodeSessionState(read)), read, 'and round-trip');
    const notAnArray = decodeSessionState({ BlockedByEventId: 'e2', ReleasedBlocks: 'oops' });
    assert.deepEqual(notAnArray.ReleasedBlocks, [], 'not an array: no released blocks, as in state written before them');
    assert.equal(notAnArray.BlockedByEventId, 'e2');
  });

  test('handoffs pending beside the block: older state reads as none; round-trip; bounded without dropping, one per event', () => {
    // Written before PendingHandoffs existed: read, as none.
    const older = decodeSessionState('{"BlockedByEventId":"e2","BlockedByMessageId":"m2","ReleasedBlocks":[]}');
    assert.deepEqual(older.PendingHandoffs, []);
    assert.equal(older.BlockedByEventId, 'e2');
    const one = addPendingHandoff(older, 'e0', 'resub-1');
    assert.deepEqual(decodeSessionState(encodeSessionState(one)), one);
    assert.ok(!isEmptySessionState(addPendingHandoff(emptySessionState(), 'e0', 'r')), 'not written as zero bytes');
    // A new handoff of the same event replaces the entry; the replaced one is over.
    const again = addPendingHandoff(one, 'e0', 'resub-2');
    assert.deepEqual(again.PendingHandoffs, [{ EventId: 'e0', MessageId: 'resub-2' }]);
    assert.deepEqual(again.ReleasedBlocks, [{ EventId: 'e0', MessageId: 'resub-1' }]);
    // Settled: gone, and remembered as over; an event with none leaves the state as it is.
    const settled = settlePendingHandoff(again, 'e0');
    assert.deepEqual(settled.PendingHandoffs, []);
    assert.deepEqual(settled.ReleasedBlocks.at(-1), { EventId: 'e0', MessageId: 'resub-2' });
    assert.equal(settlePendingHandoff(settled, 'e0'), settled);
    // Bounded, and nothing is forgotten to make room: at the bound a new event's handoff is "full" (the subscriber
    // dead-letters its resubmission, handoffBesideBlock.test.ts), while an event already there can be replaced.
    let full = emptySessionState();
    for (let i = 0; i < MAX_PENDING_HANDOFFS; i++) {
      assert.equal(pendingHandoffsFull(full, `e${i}`), false);
      full = addPendingHandoff(full, `e${i}`, `m${i}`);
    }
    assert.equal(pendingHandoffsFull(full, 'e-new'), true);
    assert.equal(pendingHandoffsFull(full, 'e0'), false);
    const replaced = addPendingHandoff(full, 'e0', 'm0-again');
    assert.equal(replaced.PendingHandoffs.length, MAX_PENDING_HANDOFFS);
    assert.deepEqual(replaced.PendingHandoffs[0], { EventId: 'e1', MessageId: 'm1' }, 'no entry of another event lost');
    // An unreadable entry is dropped, not fatal.
    const damaged = decodeSessionState({ PendingHandoffs: [{ EventId: 'e0', MessageId: 'r' }, { EventId: 1 }, 'x'] });
    assert.deepEqual(damaged.PendingHandoffs, [{ EventId: 'e0', MessageId: 'r' }]);
    assert.deepEqual(decodeSessionState({ PendingHandoffs: 'oops' }).PendingHandoffs, []);
  });

  test('PendingHandoffs and ParkedBy across releases: the previous code shape keeps them, and its state reads here', () => {
    // The previous release's schema is this one without the two keys (nothing else changed since): its reader, and
    // its writer - parse, change what it knows, write the parse's output back (encodeSessionState).
    const previous = sessionStateSchema.omit({ PendingHandoffs: true, ParkedBy: true });
    const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
    const previousWrite = (raw: string, change: (s: Record<string, unknown>) => Record<string, unknown>) =>
      JSON.stringify(previous.parse(change(previous.parse(JSON.parse(raw)))));

    // Written now, with keys of a still newer version inside both (kept by this one as well).
    const now = {
      ...addPendingHandoff({ ...emptySessionState(), BlockedByEventId: 'e2', BlockedByMessageId: 'm2' }, 'e0', 'resub-1'),
      ParkedBy: { MessageId: 'm5', SequenceNumber: '41', DeferralSequence: 3, Newer: 'p' },
    };
    now.PendingHandoffs = [{ ...now.PendingHandoffs[0]!, Newer: 'h' }];
    const written = text(encodeSessionState(now));
    // The previous release releases e2 and parks another message: it writes both keys back untouched.
    const back = previousWrite(written, (s) => ({ ...s, BlockedByEventId: null, BlockedByMessageId: null, NextDeferralSequence: 4 }));
    const read = decodeSessionState(back);
    assert.deepEqual(read.PendingHandoffs, [{ EventId: 'e0', MessageId: 'resub-1', Newer: 'h' }]);
    assert.deepEqual(read.ParkedBy, now.ParkedBy);
    assert.equal(read.BlockedByEventId, null, "the previous release's own change is read");
    assert.equal(read.NextDeferralSequence, 4);
    // A state holding only these two is not empty to the previous release either: they are keys it does not know.
    const only = text(encodeSessionState({ ...emptySessionState(), PendingHandoffs: [{ EventId: 'e0', MessageId: 'r' }] }));
    assert.ok(Object.keys(previous.parse(JSON.parse(only))).includes('PendingHandoffs'));

    // Written by the previous release (no such keys, one of a newer version's): defaults here, the unknown key kept
    // through this version's own changes.
    const old = JSON.stringify(previous.parse({ BlockedByEventId: 'e2', BlockedByMessageId: 'm2', Newer: 1 }));
    const fromOld = decodeSessionState(old);
    assert.deepEqual([fromOld.PendingHandoffs, fromOld.ParkedBy], [[], null]);
    const settled = settlePendingHandoff(addPendingHandoff(addPendingHandoff(fromOld, 'e0', 'r0'), 'e1', 'r1'), 'e1');
    assert.deepEqual(JSON.parse(text(encodeSessionState(settled))).Newer, 1);
    assert.deepEqual(settled.PendingHandoffs, [{ EventId: 'e0', MessageId: 'r0' }]);
  });

  test('blocked and draining are distinct: draining = unblocked with parked messages not yet replayed', () => {
    const blocked = { ...emptySessionState(), BlockedByEventId: 'e1', NextDeferralSequence: 2 };
    assert.equal(isBlocked(blocked), true);
    assert.equal(isDraining(blocked), false);
    const draining = { ...blocked, BlockedByEventId: null, NextReplaySequence: 1 };
    assert.equal(isDraining(draining), true);
    assert.equal(isDraining({ ...draining, NextReplaySequence: 2 }), false);
  });

  test('unreadable state throws a named error instead of reading as unblocked', () => {
    assert.throws(() => decodeSessionState('{'), InvalidSessionStateError);
    assert.throws(() => decodeSessionState({ DeferredCount: -1 }), /DeferredCount/);
  });
});

describe('heartbeat', () => {
  test('the reserved event type is matched case-insensitively', () => {
    assert.equal(isHeartbeatEventType('NimBus.Platform.Heartbeat'), true);
    assert.equal(isHeartbeatEventType('nimbus.platform.heartbeat'), true);
    assert.equal(isHeartbeatEventType('OrderPlaced'), false);
    assert.equal(isHeartbeatEventType(undefined), false);
  });

  test('payloads are read leniently, field by field', () => {
    assert.deepEqual(readHeartbeatPayload('not json'), {});
    assert.deepEqual(readHeartbeatPayload(''), {});
    assert.deepEqual(readHeartbeatPayload('{"ForwardSendTime":"2026-12-02T09:00:00Z","SdkVersion":7}'), {
      ForwardSendTime: '2026-12-02T09:00:00Z',
    });
  });
});

describe('stable copy ids', () => {
  test('are derived deterministically from the source id and stay within the MessageId limit', () => {
    assert.equal(derivedMessageId('OrderPlaced-0123456789abcdef', 'parked'), 'OrderPlaced-0123456789abcdef~parked');
    assert.equal(derivedMessageId('m1', 'replayed'), derivedMessageId('m1', 'replayed'));
    assert.notEqual(derivedMessageId('m1', 'parked'), derivedMessageId('m1', 'replayed'));
    let id = 'x'.repeat(100);
    for (let i = 0; i < 5; i++) {
      id = derivedMessageId(id, i % 2 === 0 ? 'parked' : 'replayed');
      assert.ok(id.length <= MAX_MESSAGE_ID_LENGTH, id);
    }
    assert.equal(derivedMessageId('y'.repeat(200), 'parked'), derivedMessageId('y'.repeat(200), 'parked'));
    assert.notEqual(derivedMessageId('y'.repeat(200), 'parked'), derivedMessageId('z'.repeat(200), 'parked'));
  });

  test('fnv1a64 matches the published test vectors', () => {
    assert.equal(fnv1a64(''), 'cbf29ce484222325');
    assert.equal(fnv1a64('a'), 'af63dc4c8601ec8c');
    assert.equal(fnv1a64('foobar'), '85944171f73967e8');
  });
});

describe('replay properties', () => {
  test('a replayed copy and a replay trigger carry their pass bounds as counters', () => {
    const copy = parseNimbusProperties({ To: 'billing', MessageType: 'EventRequest', ReplaySequence: '1', ReplayUntil: 3 });
    assert.ok(copy.ok && copy.properties.MessageType === 'EventRequest');
    assert.equal(copy.properties.ReplaySequence, 1);
    assert.equal(copy.properties.ReplayUntil, 3);
    const trigger = parseNimbusProperties({ To: 'DeferredProcessor', MessageType: 'ProcessDeferredRequest', ReplayUntil: 'x' });
    assert.ok(!trigger.ok);
    assert.match(trigger.problem, /ReplayUntil/);
  });
});
