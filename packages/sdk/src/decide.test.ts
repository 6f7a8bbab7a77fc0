// The decision procedure, flow by flow, as lists of effects - no broker involved.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  emptySessionState,
  eventBody,
  encodeBody,
  isBlocked,
  isEmptySessionState,
  MAX_RELEASED_BLOCKS,
  isDraining,
  MessageType,
  Prop,
} from './contract/index.ts';
import type { SessionState } from './contract/index.ts';
import { afterHandler, block, route, truncateDescription, unblock } from './decide.ts';
import type { DecisionEnv, HandlerOutcome } from './decide.ts';
import type { Effect, Settlement } from './effects.ts';
import { fromReceived } from './inbound.ts';
import type { InboundMessage } from './inbound.ts';
import { bodyText, buildReplayedCopy } from './outbound.ts';
import type { OutgoingMessage } from './outbound.ts';
import { RetryPolicies } from './retryPolicies.ts';

const E = 'billing';
const start = new Date('2026-12-02T10:00:00.000Z');

function env(overrides: Partial<DecisionEnv> = {}): DecisionEnv {
  let n = 0;
  return {
    endpointId: E,
    clock: { startedAt: start, now: new Date(start.getTime() + 25) },
    sdkVersion: '9.9.9',
    newId: () => `r${++n}`,
    hasHandler: (t) => t === 'OrderPlaced',
    ...overrides,
  };
}

function msg(
  props: Record<string, unknown>,
  body: unknown = eventBody('OrderPlaced', { orderId: 'o1' }),
  extra: Partial<Parameters<typeof fromReceived>[0]> = {},
): InboundMessage {
  return fromReceived({
    messageId: 'm1',
    sessionId: 's1',
    correlationId: 'c1',
    enqueuedTimeUtc: new Date(start.getTime() - 100),
    body,
    applicationProperties: {
      To: E,
      From: 'storefront',
      MessageType: 'EventRequest',
      EventId: 'e1',
      EventTypeId: 'OrderPlaced',
      ...props,
    },
    ...extra,
  });
}

const state = (s: Partial<SessionState> = {}): SessionState => ({ ...emptySessionState(), ...s });

/** Runs both phases, with `outcome` standing in for the handler when it is invoked. */
function run(
  m: InboundMessage,
  st: SessionState,
  outcome: HandlerOutcome | undefined,
  e = env(),
): Settlement & { invoked: boolean } {
  const r = route(m, st, e);
  if (r.kind === 'settle') return { ...r.settlement, invoked: false };
  assert.ok(outcome, 'the handler was invoked but the test gave no outcome');
  return { ...afterHandler(m, st, outcome, e), invoked: true };
}

/** A compact picture of effects: sends by type/To, state writes, settlements. */
function shape(effects: Effect[]): string[] {
  return effects.map((f) => {
    switch (f.kind) {
      case 'send': {
        const p = f.message.applicationProperties;
        return `send ${p[Prop.MessageType]}->${p[Prop.To]}${f.bestEffort ? ' (best effort)' : ''}`;
      }
      case 'schedule':
        return `schedule ${f.message.applicationProperties[Prop.MessageType]} +${f.delayMs}ms`;
      case 'setState':
        return `state ${JSON.stringify({ b: f.state.BlockedByEventId, n: f.state.NextDeferralSequence, c: f.state.DeferredCount, r: f.state.NextReplaySequence })}`;
      case 'complete':
        return 'complete';
      case 'deadLetter':
        return `deadLetter ${f.reason}`;
    }
  });
}

const sends = (s: Settlement) =>
  s.effects
    .filter((f): f is Extract<Effect, { kind: 'send' }> => f.kind === 'send')
    .map((f) => ({ ...f.message, body: bodyText(f.message) }));
const ok: HandlerOutcome = { kind: 'success' };
const fail = (
  disposition: 'Retry' | 'DeadLetter' | 'Discard' = 'Retry',
  error: unknown = new Error('downstream said no'),
): HandlerOutcome => ({ kind: 'failed', error, disposition, classifierName: 'TestClassifier' });

describe('EventRequest', () => {
  test('happy path: ResolutionResponse with lineage, then complete', () => {
    const s = run(msg({}), state(), ok);
    assert.ok(s.invoked);
    assert.deepEqual(shape(s.effects), ['send ResolutionResponse->Resolver', 'complete']);
    const [r] = sends(s);
    assert.equal(r!.sessionId, 's1');
    assert.equal(r!.correlationId, 'c1');
    assert.deepEqual(
      { ...r!.applicationProperties },
      {
        To: 'Resolver',
        MessageType: 'ResolutionResponse',
        EventId: 'e1',
        EventTypeId: 'OrderPlaced',
        OriginatingMessageId: 'm1',
        ParentMessageId: 'm1',
        OriginatingFrom: 'storefront',
        RetryCount: 0,
        QueueTimeMs: 100,
        ProcessingTimeMs: 25,
      },
    );
    assert.equal(s.signal, 'completed');
  });

  test('the handler gets the parsed payload', () => {
    const r = route(msg({}), state(), env());
    assert.deepEqual(r.kind === 'invoke' && r.invocation, {
      eventTypeId: 'OrderPlaced',
      payload: { orderId: 'o1' },
    });
  });

  test('unsupported type: UnsupportedResponse, complete, no block', () => {
    const s = run(msg({ EventTypeId: 'Nope' }, eventBody('Nope', {})), state(), undefined);
    assert.deepEqual(shape(s.effects), ['send UnsupportedResponse->Resolver', 'complete']);
    assert.equal(s.signal, 'completed');
  });

  test('Retry-disposition failure: ErrorResponse, block, complete, no retry without a policy', () => {
    const s = run(msg({}), state(), fail());
    assert.deepEqual(shape(s.effects), [
      'send ErrorResponse->Resolver',
      'state {"b":"e1","n":0,"c":0,"r":0}',
      'complete',
    ]);
    assert.equal(s.signal, 'handlerFailed');
    const body = JSON.parse(sends(s)[0]!.body);
    assert.equal(body.ErrorContent.ErrorText, 'downstream said no');
    assert.equal(body.ErrorContent.ErrorType, 'Error');
    assert.equal(body.EventContent.EventTypeId, 'OrderPlaced');
  });

  test('with a matching policy the RetryRequest is scheduled last, To = Retry, RetryCount + 1', () => {
    const policies = new RetryPolicies().addEventTypePolicy('OrderPlaced', {
      maxRetries: 3,
      baseDelayMs: 1500,
    });
    const e = env({ nextRetry: (err, t, n) => policies.nextRetry(err, t, n) });
    const s = run(msg({}), state(), fail(), e);
    assert.deepEqual(shape(s.effects).slice(-2), ['complete', 'schedule RetryRequest +1500ms']);
    const sched = s.effects.at(-1) as Extract<Effect, { kind: 'schedule' }>;
    assert.equal(sched.message.applicationProperties.To, 'Retry');
    assert.equal(sched.message.applicationProperties.RetryCount, 1);
    assert.equal(sched.message.applicationProperties.EventId, 'e1');
    assert.equal(sched.message.applicationProperties.ParentMessageId, 'm1');
    assert.equal(sched.message.sessionId, 's1');
    // Exhausted budget: no schedule.
    const last = run(msg({ RetryCount: 3 }), state(), fail(), e);
    assert.ok(!shape(last.effects).some((x) => x.startsWith('schedule')));
  });

  test("a RetryRequest's MessageId: the same for a redelivery of the failed delivery, another for another delivery of the event", () => {
    const policies = new RetryPolicies().setDefaultPolicy({ maxRetries: 3, baseDelayMs: 1000 });
    const e = () => env({ nextRetry: (err, t, n) => policies.nextRetry(err, t, n) });
    const retryOf = (s: Settlement) => {
      const sched = s.effects.find((x): x is Extract<Effect, { kind: 'schedule' }> => x.kind === 'schedule');
      assert.ok(sched, 'a RetryRequest is scheduled');
      return sched.message;
    };
    const first = retryOf(run(msg({}), state(), fail(), e()));
    // A settlement interrupted before the block (after the ErrorResponse): the redelivery runs the handler again and
    // schedules the same message (the schedule follows the completion, so none went out the first time).
    const redelivered = retryOf(run(msg({}, undefined, { deliveryCount: 2 }), state(), fail(), e()));
    assert.equal(redelivered.messageId, first.messageId);
    // Another delivery of the same event starting a series of its own: the same count, but not the first series'
    // id (the Resolver's history and Retry audit are keyed on it; before, both derived from EventId and count).
    const other = retryOf(run(msg({}, undefined, { messageId: 'm2' }), state(), fail(), e()));
    assert.equal(other.applicationProperties.RetryCount, first.applicationProperties.RetryCount);
    assert.notEqual(other.messageId, first.messageId);
    // And so on down each series: the retry of a retry derives from the retry it answers.
    const retried = (m: OutgoingMessage) =>
      retryOf(run(msg({ MessageType: 'RetryRequest', From: 'Retry', RetryCount: 1 }, undefined, { messageId: m.messageId }), state({ BlockedByEventId: 'e1' }), fail(), e()));
    assert.equal(retried(first).messageId, retried(redelivered).messageId);
    assert.notEqual(retried(other).messageId, retried(first).messageId);
  });

  test('blocked session: DeferralResponse, parked copy with sequence and a MessageId derived from the original, state, complete; handler not run', () => {
    const s = run(
      msg({ EventId: 'e2' }),
      state({ BlockedByEventId: 'e1', NextDeferralSequence: 2, DeferredCount: 2 }),
      undefined,
    );
    assert.equal(s.invoked, false);
    assert.deepEqual(shape(s.effects), [
      'send DeferralResponse->Resolver',
      'send EventRequest->Deferred',
      'state {"b":"e1","n":3,"c":3,"r":0}',
      'complete',
    ]);
    const parked = sends(s)[1]!;
    assert.equal(parked.messageId, 'm1~parked', 'stable id derived from the original (DESIGN.md §5)');
    assert.equal(parked.applicationProperties.OriginalSessionId, 's1');
    assert.equal(parked.applicationProperties.DeferralSequence, 2);
    assert.equal(parked.applicationProperties.From, 'storefront', 'From is preserved on the parked copy');
    assert.equal(s.signal, 'deferred');
    assert.match(JSON.parse(sends(s)[0]!.body).ErrorContent.ErrorText, /blocked by e1/);
  });

  test('a delivery of the blocking event itself is completed without handler or response; the block stays', () => {
    const s = run(msg({ EventId: 'e1' }), state({ BlockedByEventId: 'e1' }), undefined);
    assert.equal(s.invoked, false);
    assert.deepEqual(shape(s.effects), ['complete']);
  });

  test('a draining session parks new messages behind the ones still to be replayed, and asks for a pass that includes them', () => {
    const s = run(
      msg({ EventId: 'e9' }),
      state({ NextDeferralSequence: 3, NextReplaySequence: 1, DeferredCount: 3 }),
      undefined,
    );
    // The trigger covers a lost trigger or a pass that died: the drain cannot outlive the traffic waiting on it.
    assert.deepEqual(shape(s.effects), [
      'send DeferralResponse->Resolver',
      'send EventRequest->Deferred',
      'state {"b":null,"n":4,"c":4,"r":1}',
      'send ProcessDeferredRequest->DeferredProcessor',
      'complete',
    ]);
    assert.equal(sends(s)[2]!.applicationProperties.ReplayUntil, 4);
    // Behind a block nothing is replayed until the block goes: no trigger.
    const blocked = run(
      msg({ EventId: 'e9' }),
      state({ BlockedByEventId: 'e1', NextDeferralSequence: 3 }),
      undefined,
    );
    assert.ok(!shape(blocked.effects).some((x) => x.includes('ProcessDeferredRequest')));
  });

  test('a replayed copy runs during the drain and advances the replay cursor', () => {
    const s = run(
      msg({ ReplaySequence: 1, ReplayUntil: 3 }),
      state({ NextDeferralSequence: 3, NextReplaySequence: 1, DeferredCount: 3 }),
      ok,
    );
    assert.ok(s.invoked);
    assert.deepEqual(shape(s.effects), [
      'send ResolutionResponse->Resolver',
      'state {"b":null,"n":3,"c":3,"r":2}',
      'complete',
    ]);
  });

  test('the copy that ends a pass asks for the next pass when more was parked meanwhile', () => {
    const s = run(
      msg({ ReplaySequence: 2, ReplayUntil: 3 }),
      state({ NextDeferralSequence: 5, NextReplaySequence: 2, DeferredCount: 5 }),
      ok,
    );
    assert.deepEqual(shape(s.effects), [
      'send ResolutionResponse->Resolver',
      'state {"b":null,"n":5,"c":5,"r":3}',
      'send ProcessDeferredRequest->DeferredProcessor',
      'complete',
    ]);
    const trigger = sends(s)[1]!;
    assert.equal(trigger.applicationProperties.ReplayUntil, 5);
    assert.equal(trigger.sessionId, 's1');
  });

  test('a replayed copy that meets a new block is parked again with a new sequence', () => {
    const s = run(
      msg({ EventId: 'e3', ReplaySequence: 2, ReplayUntil: 3 }),
      state({ BlockedByEventId: 'e2', NextDeferralSequence: 3, NextReplaySequence: 2, DeferredCount: 3 }),
      undefined,
    );
    assert.deepEqual(shape(s.effects), [
      'send DeferralResponse->Resolver',
      'send EventRequest->Deferred',
      'state {"b":"e2","n":4,"c":4,"r":3}',
      'complete',
    ]);
    const parked = sends(s)[1]!;
    assert.equal(parked.applicationProperties.DeferralSequence, 3);
    assert.equal(parked.applicationProperties.ReplaySequence, undefined);
  });

  test('a second replayed copy of an already handled sequence is only completed', () => {
    const s = run(
      msg({ ReplaySequence: 0, ReplayUntil: 3 }),
      state({ NextDeferralSequence: 3, NextReplaySequence: 1 }),
      undefined,
    );
    assert.deepEqual(shape(s.effects), ['complete']);
  });

  test('a failing replayed copy blocks and still advances the cursor', () => {
    const s = run(
      msg({ ReplaySequence: 0, ReplayUntil: 3 }),
      state({ NextDeferralSequence: 3, DeferredCount: 3 }),
      fail(),
    );
    assert.deepEqual(shape(s.effects), [
      'send ErrorResponse->Resolver',
      'state {"b":"e1","n":3,"c":3,"r":1}',
      'complete',
    ]);
  });

  test('heartbeat: answered before the session guard, From = endpoint, stamped payload', () => {
    const probe = eventBody('NimBus.Platform.Heartbeat', { ForwardSendTime: '2026-12-02T09:59:59.000Z' });
    const s = run(
      msg({ EventTypeId: 'nimbus.platform.heartbeat', From: 'Manager' }, probe),
      state({ BlockedByEventId: 'other' }),
      undefined,
    );
    assert.deepEqual(shape(s.effects), ['send ResolutionResponse->Resolver', 'complete']);
    const reply = sends(s)[0]!;
    assert.equal(reply.applicationProperties.From, E);
    const content = JSON.parse(reply.body).EventContent;
    assert.equal(content.EventTypeId, 'NimBus.Platform.Heartbeat');
    const hb = JSON.parse(content.EventJson);
    assert.deepEqual(hb, {
      ForwardSendTime: '2026-12-02T09:59:59.000Z',
      ForwardReceivedTime: '2026-12-02T10:00:00.025Z',
      BackwardSendTime: '2026-12-02T10:00:00.025Z',
      Endpoint: E,
      SdkVersion: '9.9.9',
    });
  });

  test('heartbeat with a malformed body or the id only in the body is still answered', () => {
    const bad = run(msg({ EventTypeId: 'NimBus.Platform.Heartbeat' }, '{not json'), state(), undefined);
    assert.deepEqual(shape(bad.effects), ['send ResolutionResponse->Resolver', 'complete']);
    const bodyOnly = run(
      msg({ EventTypeId: undefined }, eventBody('NimBus.Platform.Heartbeat', {})),
      state(),
      undefined,
    );
    assert.deepEqual(shape(bodyOnly.effects), ['send ResolutionResponse->Resolver', 'complete']);
  });

  test('EventTypeId property disagreeing with the body: notification first, then dead-letter; handler not run', () => {
    const s = run(msg({}, eventBody('OrderCancelled', {})), state(), undefined);
    assert.equal(s.invoked, false);
    assert.deepEqual(shape(s.effects), [
      'send ErrorResponse->Resolver (best effort)',
      "deadLetter Permanent failure: PayloadDeserializationError: the EventTypeId property 'OrderPlaced' disagrees with the body's 'OrderCancelled'",
    ]);
    const n = sends(s)[0]!;
    assert.match(String(n.applicationProperties.DeadLetterReason), /^Permanent failure:/);
    assert.ok(String(n.applicationProperties.DeadLetterErrorDescription).length > 0);
    assert.equal(s.signal, 'deadLettered');
  });

  test('EventTypeId property disagreeing with the body is dead-lettered even when the property names no handled type', () => {
    // The property is authoritative, so the lookup alone would answer Unsupported and complete a malformed message.
    const s = run(msg({ EventTypeId: 'InvoiceIssued' }, eventBody('OrderPlaced', {})), state(), undefined);
    assert.equal(s.invoked, false);
    assert.deepEqual(shape(s.effects), [
      'send ErrorResponse->Resolver (best effort)',
      "deadLetter Permanent failure: PayloadDeserializationError: the EventTypeId property 'InvoiceIssued' disagrees with the body's 'OrderPlaced'",
    ]);
    assert.equal(s.signal, 'deadLettered');
  });

  for (const [name, body] of [
    ['missing payload', encodeBody({ EventContent: { EventTypeId: 'OrderPlaced', EventJson: null } })],
    ['null payload', encodeBody({ EventContent: { EventTypeId: 'OrderPlaced', EventJson: 'null' } })],
    ['malformed payload', encodeBody({ EventContent: { EventTypeId: 'OrderPlaced', EventJson: '{"a":' } })],
    [
      'payload deeper than 32 levels',
      encodeBody({
        EventContent: { EventTypeId: 'OrderPlaced', EventJson: '['.repeat(33) + ']'.repeat(33) },
      }),
    ],
    ['body that is not JSON', 'garbage'],
  ] as const) {
    test(`${name}: permanent failure, never retried even when a policy matches`, () => {
      const policies = new RetryPolicies().setDefaultPolicy({ maxRetries: 5, baseDelayMs: 1 });
      const s = run(
        msg({}, body),
        state(),
        undefined,
        env({ nextRetry: (e, t, n) => policies.nextRetry(e, t, n) }),
      );
      assert.equal(s.invoked, false);
      assert.deepEqual(
        shape(s.effects).map((x) => x.split(':')[0]),
        ['send ErrorResponse->Resolver (best effort)', 'deadLetter Permanent failure'],
      );
    });
  }

  test('32 levels of nesting are still accepted', () => {
    const r = route(
      msg(
        {},
        encodeBody({
          EventContent: { EventTypeId: 'OrderPlaced', EventJson: '['.repeat(32) + ']'.repeat(32) },
        }),
      ),
      state(),
      env(),
    );
    assert.equal(r.kind, 'invoke');
  });

  test('Discard: enriched SkipResponse, complete, no block, no retry', () => {
    const policies = new RetryPolicies().setDefaultPolicy({ maxRetries: 5, baseDelayMs: 1 });
    class KnownBadVersion extends Error {
      override name = 'KnownBadVersion';
    }
    const s = run(
      msg({}),
      state(),
      fail('Discard', new KnownBadVersion('v1 is retired')),
      env({ nextRetry: (e, t, n) => policies.nextRetry(e, t, n) }),
    );
    assert.deepEqual(shape(s.effects), ['send SkipResponse->Resolver', 'complete']);
    const body = JSON.parse(sends(s)[0]!.body);
    assert.equal(
      body.ErrorContent.ErrorText,
      'KnownBadVersion: v1 is retired Classified as Discard by TestClassifier.',
    );
    assert.equal(body.ErrorContent.ErrorType, 'KnownBadVersion');
    assert.equal(s.signal, 'completed');
  });

  test('DeadLetter disposition: notification then dead-letter, no block', () => {
    const s = run(msg({}), state(), fail('DeadLetter', new SyntaxError('bad')));
    assert.deepEqual(shape(s.effects), [
      'send ErrorResponse->Resolver (best effort)',
      'deadLetter Permanent failure: SyntaxError: bad',
    ]);
  });

  test('pending handoff: PendingHandoffResponse with metadata, block, complete; no Resolution', () => {
    const expectedBy = new Date('2026-12-02T10:05:00.000Z');
    const s = run(msg({}), state(), {
      kind: 'success',
      handoff: { reason: 'DMF import', externalJobId: 'job-7', expectedBy },
    });
    assert.deepEqual(shape(s.effects), [
      'send PendingHandoffResponse->Resolver',
      'state {"b":"e1","n":0,"c":0,"r":0}',
      'complete',
    ]);
    const p = sends(s)[0]!.applicationProperties;
    assert.equal(p.HandoffReason, 'DMF import');
    assert.equal(p.ExternalJobId, 'job-7');
    assert.equal(p.ExpectedBy, '2026-12-02T10:05:00.000Z');
  });

  test('transient and cancelled outcomes settle nothing', () => {
    assert.deepEqual(run(msg({}), state(), { kind: 'transient', error: new Error('x') }).effects, []);
    assert.equal(run(msg({}), state(), { kind: 'cancelled' }).signal, 'cancelled');
  });
});

describe('replay pass end', () => {
  const passEnd = (until: number) =>
    msg(
      {
        MessageType: 'ProcessDeferredRequest',
        From: undefined,
        ReplayUntil: until,
        ReplayPassEnd: true,
        EventTypeId: undefined,
      },
      encodeBody({}),
    );

  test('the last copy of a pass accounts for the sequences below the bound that never came back', () => {
    const last = msg({ ReplaySequence: 1, ReplayUntil: 4, ReplayPassEnd: true });
    const s = run(last, state({ NextDeferralSequence: 5, NextReplaySequence: 1, DeferredCount: 5 }), ok);
    assert.deepEqual(shape(s.effects), [
      'send ErrorResponse->Resolver (best effort)',
      'send ResolutionResponse->Resolver',
      'state {"b":null,"n":5,"c":5,"r":4}',
      'send ProcessDeferredRequest->DeferredProcessor',
      'complete',
    ]);
    assert.equal(s.warn, true);
    assert.match(
      String(sends(s)[0]!.applicationProperties.DeadLetterErrorDescription),
      /parked sequences 2 to 3 of session s1/,
    );
    // Meeting a new block, it is parked again, and the gap is still accounted for.
    const parked = run(
      last,
      state({ BlockedByEventId: 'e7', NextDeferralSequence: 5, NextReplaySequence: 1 }),
      undefined,
    );
    assert.deepEqual(shape(parked.effects), [
      'send ErrorResponse->Resolver (best effort)',
      'send DeferralResponse->Resolver',
      'send EventRequest->Deferred',
      'state {"b":"e7","n":6,"c":1,"r":4}',
      'complete',
    ]);
    // Nothing missing: no notice.
    const whole = run(
      msg({ ReplaySequence: 3, ReplayUntil: 4, ReplayPassEnd: true }),
      state({ NextDeferralSequence: 4, NextReplaySequence: 3 }),
      ok,
    );
    assert.deepEqual(shape(whole.effects), [
      'send ResolutionResponse->Resolver',
      'state {"b":null,"n":4,"c":0,"r":4}',
      'complete',
    ]);
    assert.equal(whole.warn, undefined);
  });

  test('a replayed copy dead-lettered: notification, dead-letter, then the cursor and the next pass', () => {
    // The cursor after the dead-letter: written first, a dead-letter that then failed made the redelivery a copy
    // "already handled", completed without a dead-letter (the payload lost).
    for (const outcome of [fail('DeadLetter'), { kind: 'permanent' as const, error: new Error('bad') }]) {
      const s = run(
        msg({ ReplaySequence: 0, ReplayUntil: 1, ReplayPassEnd: true }),
        state({ NextDeferralSequence: 2, NextReplaySequence: 0, DeferredCount: 2 }),
        outcome,
      );
      assert.deepEqual(
        shape(s.effects).map((x) => x.split(':')[0]),
        [
          'send ErrorResponse->Resolver (best effort)',
          'deadLetter Permanent failure',
          'state {"b"',
          'send ProcessDeferredRequest->DeferredProcessor',
        ],
      );
    }
  });

  test('the pass-end flag is a hop property: a re-parked copy does not carry it', () => {
    const parked = run(
      msg({ ReplaySequence: 1, ReplayUntil: 2, ReplayPassEnd: true }),
      state({ BlockedByEventId: 'e7', NextDeferralSequence: 2, NextReplaySequence: 1 }),
      undefined,
    );
    const copy = sends(parked).find((m) => m.applicationProperties.To === 'Deferred')!;
    assert.equal(copy.applicationProperties.ReplayPassEnd, undefined);
    assert.equal(copy.applicationProperties.ReplayUntil, undefined);
  });

  test('nothing missing: completed, nothing else', () => {
    for (const r of [3, 4]) {
      const s = run(passEnd(3), state({ NextDeferralSequence: 4, NextReplaySequence: r }), undefined);
      assert.deepEqual(shape(s.effects), ['complete']);
    }
  });

  test('a cursor below the bound is a gap: ReplayGap notice, cursor to the bound, next pass when more is parked', () => {
    const s = run(
      passEnd(3),
      state({ NextDeferralSequence: 5, NextReplaySequence: 1, DeferredCount: 5 }),
      undefined,
    );
    assert.deepEqual(shape(s.effects), [
      'send ErrorResponse->Resolver (best effort)',
      'state {"b":null,"n":5,"c":5,"r":3}',
      'send ProcessDeferredRequest->DeferredProcessor',
      'complete',
    ]);
    assert.equal(s.warn, true);
    const notice = sends(s)[0]!.applicationProperties;
    assert.equal(notice.DeadLetterReason, 'ReplayGap');
    assert.match(
      String(notice.DeadLetterErrorDescription),
      /parked sequences 1 to 2 of session s1 did not come back/,
    );
    assert.equal(notice.EventId, 'e1');
    // Nothing parked beyond the bound: the session is simply no longer draining.
    const last = run(passEnd(3), state({ NextDeferralSequence: 3, NextReplaySequence: 2 }), undefined);
    assert.deepEqual(shape(last.effects), [
      'send ErrorResponse->Resolver (best effort)',
      'state {"b":null,"n":3,"c":0,"r":3}',
      'complete',
    ]);
    assert.match(
      String(sends(last)[0]!.applicationProperties.DeadLetterErrorDescription),
      /parked sequence 2 of/,
    );
  });

  test('a gap found while the session is blocked again is skipped without asking for a pass', () => {
    const s = run(
      passEnd(3),
      state({ BlockedByEventId: 'e7', NextDeferralSequence: 5, NextReplaySequence: 2 }),
      undefined,
    );
    assert.deepEqual(shape(s.effects), [
      'send ErrorResponse->Resolver (best effort)',
      'state {"b":"e7","n":5,"c":0,"r":3}',
      'complete',
    ]);
  });

  test('a ProcessDeferredRequest that is not a pass-end marker is still dead-lettered on the main subscription', () => {
    const s = run(
      msg({ MessageType: 'ProcessDeferredRequest', ReplayUntil: 3 }),
      state({ NextReplaySequence: 0, NextDeferralSequence: 3 }),
      undefined,
    );
    assert.deepEqual(shape(s.effects), [
      'send ErrorResponse->Resolver (best effort)',
      'deadLetter Failed to handle message.',
    ]);
  });
});

describe('RetryRequest', () => {
  const retry = (props: Record<string, unknown> = {}) =>
    msg({ MessageType: 'RetryRequest', From: 'Retry', RetryCount: 1, ...props });

  test('not blocked by this event (a late retry after a skip, resubmit or handoff): completed without handler and without a response', () => {
    for (const st of [state({ BlockedByEventId: 'other' }), state(), state({ NextDeferralSequence: 2 })]) {
      const s = run(retry(), st, undefined);
      assert.equal(s.invoked, false);
      // No ResolutionResponse: it would record Completed for an event whose handler never ran (a Skipped event).
      assert.deepEqual(shape(s.effects), ['complete']);
      assert.equal(s.signal, 'completed');
    }
  });

  test('success: unblock, drain when something is parked, Resolution, complete', () => {
    const s = run(retry(), state({ BlockedByEventId: 'e1', NextDeferralSequence: 2, DeferredCount: 2 }), ok);
    assert.deepEqual(shape(s.effects), [
      'state {"b":null,"n":2,"c":2,"r":0}',
      'send ProcessDeferredRequest->DeferredProcessor',
      'send ResolutionResponse->Resolver',
      'complete',
    ]);
    const nothingParked = run(retry(), state({ BlockedByEventId: 'e1' }), ok);
    assert.deepEqual(shape(nothingParked.effects), [
      'state {"b":null,"n":0,"c":0,"r":0}',
      'send ResolutionResponse->Resolver',
      'complete',
    ]);
  });

  test('fails again: ErrorResponse, complete, next RetryRequest with RetryCount 2; session stays blocked', () => {
    const policies = new RetryPolicies().setDefaultPolicy({
      maxRetries: 3,
      strategy: 'Linear',
      baseDelayMs: 1000,
    });
    const s = run(
      retry(),
      state({ BlockedByEventId: 'e1' }),
      fail(),
      env({ nextRetry: (e, t, n) => policies.nextRetry(e, t, n) }),
    );
    assert.deepEqual(shape(s.effects), [
      'send ErrorResponse->Resolver',
      'complete',
      'schedule RetryRequest +2000ms',
    ]);
    assert.equal(
      (s.effects[2] as Extract<Effect, { kind: 'schedule' }>).message.applicationProperties.RetryCount,
      2,
    );
  });

  test('discard on retry: unblock and drain first, then the discard SkipResponse', () => {
    const s = run(
      retry(),
      state({ BlockedByEventId: 'e1', NextDeferralSequence: 1, DeferredCount: 1 }),
      fail('Discard'),
    );
    assert.deepEqual(shape(s.effects), [
      'state {"b":null,"n":1,"c":1,"r":0}',
      'send ProcessDeferredRequest->DeferredProcessor',
      'send SkipResponse->Resolver',
      'complete',
    ]);
  });

  test('permanent on retry: dead-letter, the session stays blocked', () => {
    const s = run(retry(), state({ BlockedByEventId: 'e1' }), fail('DeadLetter'));
    assert.ok(!s.effects.some((f) => f.kind === 'setState'));
    assert.equal(s.effects.at(-1)!.kind, 'deadLetter');
  });

  test('handoff on retry: parked, no unblock, no drain', () => {
    const s = run(retry(), state({ BlockedByEventId: 'e1', NextDeferralSequence: 1 }), {
      kind: 'success',
      handoff: { reason: 'r' },
    });
    assert.deepEqual(shape(s.effects), [
      'send PendingHandoffResponse->Resolver',
      'state {"b":"e1","n":1,"c":0,"r":0}',
      'complete',
    ]);
  });
});

describe('Manager commands', () => {
  const cmd = (type: string, props: Record<string, unknown> = {}, body: unknown = encodeBody({})) =>
    msg({ MessageType: type, From: 'Manager', ...props }, body);

  for (const type of [
    'ResubmissionRequest',
    'SkipRequest',
    'HandoffCompletedRequest',
    'HandoffFailedRequest',
  ]) {
    test(`${type} without From = Manager is refused: CommandRefused notice and dead letter; state untouched`, () => {
      for (const from of ['storefront', undefined]) {
        const s = run(msg({ MessageType: type, From: from }), state({ BlockedByEventId: 'e1' }), undefined);
        assert.equal(s.invoked, false);
        assert.deepEqual(shape(s.effects), [
          'send ErrorResponse->Resolver (best effort)',
          'deadLetter CommandRefused',
        ]);
        const notice = sends(s)[0]!.applicationProperties;
        // The stable reason tells the Resolver that this is a refused command, not an outcome of the event.
        assert.equal(notice.DeadLetterReason, 'CommandRefused');
        assert.match(String(notice.DeadLetterErrorDescription), /accepted only from Manager/);
        assert.equal(notice.ParentMessageId, 'm1');
        assert.equal(s.signal, 'deadLettered');
      }
    });
  }

  test('skip of the blocker: unblock, drain, empty SkipResponse, complete', () => {
    const s = run(
      cmd('SkipRequest'),
      state({ BlockedByEventId: 'e1', NextDeferralSequence: 2, DeferredCount: 2 }),
      undefined,
    );
    assert.deepEqual(shape(s.effects), [
      'state {"b":null,"n":2,"c":2,"r":0}',
      'send ProcessDeferredRequest->DeferredProcessor',
      'send SkipResponse->Resolver',
      'complete',
    ]);
    assert.deepEqual(JSON.parse(sends(s)[1]!.body), { EventContent: null, ErrorContent: null });
  });

  test('skip of an event that is not the blocker: SkipResponse and complete only', () => {
    const s = run(cmd('SkipRequest', { EventId: 'e7' }), state({ BlockedByEventId: 'e1' }), undefined);
    assert.deepEqual(shape(s.effects), ['send SkipResponse->Resolver', 'complete']);
  });

  test('resubmission of the blocker: handler runs with the new content; unblock, drain, Resolution', () => {
    const body = eventBody('OrderPlaced', { orderId: 'fixed' });
    const r = route(
      cmd('ResubmissionRequest', {}, body),
      state({ BlockedByEventId: 'e1', NextDeferralSequence: 1 }),
      env(),
    );
    assert.deepEqual(r.kind === 'invoke' && r.invocation.payload, { orderId: 'fixed' });
    const s = run(
      cmd('ResubmissionRequest', {}, body),
      state({ BlockedByEventId: 'e1', NextDeferralSequence: 1, DeferredCount: 1 }),
      ok,
    );
    assert.deepEqual(shape(s.effects), [
      'state {"b":null,"n":1,"c":1,"r":0}',
      'send ProcessDeferredRequest->DeferredProcessor',
      'send ResolutionResponse->Resolver',
      'complete',
    ]);
  });

  test('failing resubmission: ErrorResponse and complete, block unchanged, no retry', () => {
    const policies = new RetryPolicies().setDefaultPolicy({ maxRetries: 3, baseDelayMs: 1 });
    const s = run(
      cmd('ResubmissionRequest', {}, eventBody('OrderPlaced', {})),
      state({ BlockedByEventId: 'e1' }),
      fail(),
      env({ nextRetry: (e, t, n) => policies.nextRetry(e, t, n) }),
    );
    assert.deepEqual(shape(s.effects), ['send ErrorResponse->Resolver', 'complete']);
  });

  test('resubmission of another event while blocked by E2 leaves the block and does not drain', () => {
    const s = run(
      cmd('ResubmissionRequest', { EventId: 'e0' }, eventBody('OrderPlaced', {})),
      state({ BlockedByEventId: 'e2', NextDeferralSequence: 1 }),
      ok,
    );
    assert.deepEqual(shape(s.effects), ['send ResolutionResponse->Resolver', 'complete']);
    const h = run(
      cmd('ResubmissionRequest', { EventId: 'e0' }, eventBody('OrderPlaced', {})),
      state({ BlockedByEventId: 'e2' }),
      { kind: 'success', handoff: { reason: 'r' } },
    );
    // The handoff is recorded beside E2's block (PendingHandoffs), so that its settlement can be answered.
    assert.deepEqual(shape(h.effects), [
      'send PendingHandoffResponse->Resolver',
      'state {"b":"e2","n":0,"c":0,"r":0}',
      'complete',
    ]);
    const write = h.effects.find((f) => f.kind === 'setState');
    assert.ok(write && write.kind === 'setState');
    assert.deepEqual(write.state.PendingHandoffs, [{ EventId: 'e0', MessageId: 'm1' }]);
  });

  test('handoff completed: unblock, drain, Resolution with the result content; handler never runs', () => {
    const body = encodeBody({ EventContent: { EventTypeId: 'OrderPlaced', EventJson: '{"imported":12}' } });
    const s = run(
      cmd('HandoffCompletedRequest', {}, body),
      state({ BlockedByEventId: 'e1', NextDeferralSequence: 2, DeferredCount: 2 }),
      undefined,
    );
    assert.equal(s.invoked, false);
    assert.deepEqual(shape(s.effects), [
      'state {"b":null,"n":2,"c":2,"r":0}',
      'send ProcessDeferredRequest->DeferredProcessor',
      'send ResolutionResponse->Resolver',
      'complete',
    ]);
    assert.equal(JSON.parse(sends(s)[1]!.body).EventContent.EventJson, '{"imported":12}');
  });

  test('handoff completed for an event that is not the pending handoff: refused visibly, never a Resolution', () => {
    const body = encodeBody({ EventContent: { EventTypeId: 'OrderPlaced', EventJson: '{"imported":12}' } });
    for (const [st, why] of [
      [state({ BlockedByEventId: 'e1', NextDeferralSequence: 1 }), /blocked by e1/],
      [state(), /not blocked/],
    ] as const) {
      const s = run(cmd('HandoffCompletedRequest', { EventId: 'x' }, body), st, undefined);
      assert.equal(s.invoked, false);
      assert.deepEqual(shape(s.effects), [
        'send ErrorResponse->Resolver (best effort)',
        'deadLetter CommandRefused',
      ]);
      const notice = sends(s)[0]!.applicationProperties;
      assert.equal(notice.DeadLetterReason, 'CommandRefused');
      assert.match(
        String(notice.DeadLetterErrorDescription),
        /event x is not the pending handoff of session s1/,
      );
      assert.match(String(notice.DeadLetterErrorDescription), why);
    }
  });

  test('handoff failed: ErrorResponse with the text verbatim, session stays blocked', () => {
    const body = encodeBody({
      ErrorContent: { ErrorText: 'DMF job 7 rejected 3 lines', ErrorType: 'DmfError' },
    });
    const s = run(cmd('HandoffFailedRequest', {}, body), state({ BlockedByEventId: 'e1' }), undefined);
    assert.deepEqual(shape(s.effects), ['send ErrorResponse->Resolver', 'complete']);
    const err = JSON.parse(sends(s)[0]!.body).ErrorContent;
    assert.equal(err.ErrorText, 'DMF job 7 rejected 3 lines');
    // The caller's type is kept; HandoffFailedException only stands in when the caller gave none.
    assert.equal(err.ErrorType, 'DmfError');
    const untyped = run(
      cmd('HandoffFailedRequest', {}, encodeBody({ ErrorContent: { ErrorText: 'no type' } })),
      state({ BlockedByEventId: 'e1' }),
      undefined,
    );
    assert.equal(JSON.parse(sends(untyped)[0]!.body).ErrorContent.ErrorType, 'HandoffFailedException');
    const empty = run(cmd('HandoffFailedRequest'), state({ BlockedByEventId: 'e1' }), undefined);
    const defaults = JSON.parse(sends(empty)[0]!.body).ErrorContent;
    assert.deepEqual([defaults.ErrorText, defaults.ErrorType], ['Handoff failed.', 'HandoffFailedException']);
  });

  test('handoff failed for an event that does not block the session: still answered Failed, state untouched', () => {
    const body = encodeBody({
      ErrorContent: { ErrorText: 'DMF job 7 rejected 3 lines', ErrorType: 'DmfError' },
    });
    for (const st of [state({ BlockedByEventId: 'e1' }), state()]) {
      const other = run(cmd('HandoffFailedRequest', { EventId: 'x' }, body), st, undefined);
      // Never dropped: the Manager claimed the row Pending, and only an answer moves it on.
      assert.deepEqual(shape(other.effects), ['send ErrorResponse->Resolver', 'complete']);
      const answer = sends(other)[0]!;
      assert.equal(answer.applicationProperties.EventId, 'x');
      assert.equal(answer.applicationProperties.DeadLetterErrorDescription, undefined);
      const content = JSON.parse(answer.body).ErrorContent;
      assert.deepEqual([content.ErrorText, content.ErrorType], ['DMF job 7 rejected 3 lines', 'DmfError']);
    }
  });

  test('a handoff command that names another delivery of the blocking event settles nothing: refused', () => {
    // e1 was handed off by m1 (job 1); the operator resubmitted it and the resubmission handed off again (job 2):
    // the session is blocked by the resubmission. Job 1's late settlement names m1.
    const pending = state({ BlockedByEventId: 'e1', BlockedByMessageId: 'resubmit-1', NextDeferralSequence: 1 });
    const refused = ['send ErrorResponse->Resolver (best effort)', 'deadLetter CommandRefused'];
    const released = [
      'state {"b":null,"n":1,"c":0,"r":0}',
      'send ProcessDeferredRequest->DeferredProcessor',
      'send ResolutionResponse->Resolver',
      'complete',
    ];
    const completion = (props: Record<string, unknown>) => run(cmd('HandoffCompletedRequest', props), pending, undefined);
    const late = completion({ HandedOffByMessageId: 'm1' });
    assert.deepEqual(shape(late.effects), refused);
    assert.match(
      String(sends(late)[0]!.applicationProperties.DeadLetterErrorDescription),
      /^HandoffCompletedRequest refused: it names the handoff of event e1 made by message m1, but session s1 is blocked by message resubmit-1 of that event/,
    );
    const lateFailure = run(cmd('HandoffFailedRequest', { HandedOffByMessageId: 'm1' }), pending, undefined);
    assert.deepEqual(shape(lateFailure.effects), refused, 'a late failure would record Failed over job 2');
    // The handoff the session waits for, named: released (a failure: answered, the block stays, marked failed).
    assert.deepEqual(shape(completion({ HandedOffByMessageId: 'resubmit-1' }).effects), released);
    const failure = run(cmd('HandoffFailedRequest', { HandedOffByMessageId: 'resubmit-1' }), pending, undefined);
    assert.deepEqual(shape(failure.effects), ['state {"b":"e1","n":1,"c":0,"r":0}', 'send ErrorResponse->Resolver', 'complete']);
    const marked = failure.effects.find((e) => e.kind === 'setState');
    assert.deepEqual(marked?.kind === 'setState' && marked.state.FailedHandoffs, [{ EventId: 'e1', MessageId: 'resubmit-1' }]);
    // ParentMessageId is the row version a Manager command answers, not the handoff: it decides nothing.
    assert.deepEqual(shape(completion({ ParentMessageId: 'notice-7', HandedOffByMessageId: 'resubmit-1' }).effects), released);
    // Named nothing (an older sender): the EventId decides, as before.
    assert.deepEqual(shape(completion({ ParentMessageId: 'm1' }).effects), released);
  });

  test("a handoff whose block is over is remembered: job 1's late failure after job 2 completed is refused", () => {
    // e1 handed off by m1 (job 1), resubmitted and handed off again by resubmit-1 (job 2), which then completed.
    const handedOff = state({ BlockedByEventId: 'e1', BlockedByMessageId: 'm1' });
    const again = block(handedOff, msg({}, undefined, { messageId: 'resubmit-1' }));
    assert.deepEqual(again.ReleasedBlocks, [{ EventId: 'e1', MessageId: 'm1' }], 'the replaced block is over');
    const completed = run(cmd('HandoffCompletedRequest', { HandedOffByMessageId: 'resubmit-1' }), again, undefined);
    const write = completed.effects.find((f) => f.kind === 'setState');
    assert.ok(write && write.kind === 'setState');
    const released = write.state;
    assert.deepEqual(released.ReleasedBlocks, [
      { EventId: 'e1', MessageId: 'm1' },
      { EventId: 'e1', MessageId: 'resubmit-1' },
    ]);
    const refused = ['send ErrorResponse->Resolver (best effort)', 'deadLetter CommandRefused'];
    for (const named of ['m1', 'resubmit-1']) {
      const late = run(cmd('HandoffFailedRequest', { HandedOffByMessageId: named }), released, undefined);
      assert.deepEqual(shape(late.effects), refused, `a late failure of ${named} would record Failed over Completed`);
      assert.match(
        String(sends(late)[0]!.applicationProperties.DeadLetterErrorDescription),
        new RegExp(`^HandoffFailedRequest refused: the handoff of event e1 made by message ${named} is no longer pending \\(session s1 was released from it and is not blocked\\)`),
      );
    }
    // Named nothing (an older sender), or a delivery the session never recorded: answered Failed, as before.
    for (const props of [{}, { HandedOffByMessageId: 'unknown-delivery' }]) {
      const answered = run(cmd('HandoffFailedRequest', props), released, undefined);
      assert.deepEqual(shape(answered.effects), ['send ErrorResponse->Resolver', 'complete']);
    }
    // The redelivery of the completion that released the session still finishes its release.
    const redelivered = run(cmd('HandoffCompletedRequest', { HandedOffByMessageId: 'resubmit-1' }), released, undefined);
    assert.equal(redelivered.signal, 'completed');
    // A state with nothing but this memory is not empty: written as zero bytes, it would be forgotten.
    assert.ok(!isEmptySessionState(state({ ReleasedBlocks: [{ EventId: 'e1', MessageId: 'm1' }] })));
  });

  test('released blocks are bounded: the oldest is forgotten first', () => {
    let st = state();
    for (let i = 0; i < MAX_RELEASED_BLOCKS + 3; i++) {
      st = unblock(state({ ...st, BlockedByEventId: `e${i}`, BlockedByMessageId: `m${i}` }));
    }
    assert.equal(st.ReleasedBlocks.length, MAX_RELEASED_BLOCKS);
    assert.deepEqual(st.ReleasedBlocks[0], { EventId: 'e3', MessageId: 'm3' });
    assert.deepEqual(st.ReleasedBlocks.at(-1), { EventId: `e${MAX_RELEASED_BLOCKS + 2}`, MessageId: `m${MAX_RELEASED_BLOCKS + 2}` });
  });

  test('a block recorded without its delivery (an older SDK) is settled by EventId whatever the command names', () => {
    const older = state({ BlockedByEventId: 'e1', NextDeferralSequence: 1 });
    assert.equal(older.BlockedByMessageId, null);
    const s = run(cmd('HandoffCompletedRequest', { HandedOffByMessageId: 'm1' }), older, undefined);
    assert.deepEqual(shape(s.effects), [
      'state {"b":null,"n":1,"c":0,"r":0}',
      'send ProcessDeferredRequest->DeferredProcessor',
      'send ResolutionResponse->Resolver',
      'complete',
    ]);
  });
});

describe('a release interrupted after its state write, then redelivered', () => {
  // A release is settled as: unblocking state, replay request, answer, completion. A step after the state write can
  // fail (a send refused, the lock lost, a crash); the message is redelivered and must finish what is missing
  // instead of being taken for a late command (no answer: the row stays Pending; parked siblings stay parked).
  const blocked = state({
    BlockedByEventId: 'e1',
    BlockedByMessageId: 'm0',
    NextDeferralSequence: 2,
    DeferredCount: 2,
  });
  const handoffBody = encodeBody({
    EventContent: { EventTypeId: 'OrderPlaced', EventJson: '{"imported":12}' },
  });
  const cases: Array<{ name: string; m: InboundMessage; outcome?: HandlerOutcome; answer: string }> = [
    {
      name: 'a successful RetryRequest',
      m: msg({ MessageType: 'RetryRequest', From: 'Retry', RetryCount: 1 }, undefined, {
        messageId: 'retry-1',
      }),
      outcome: ok,
      answer: 'send ResolutionResponse->Resolver',
    },
    {
      name: 'a discarded RetryRequest',
      m: msg({ MessageType: 'RetryRequest', From: 'Retry', RetryCount: 1 }, undefined, {
        messageId: 'retry-1',
      }),
      outcome: fail('Discard'),
      answer: 'send SkipResponse->Resolver',
    },
    {
      name: 'a SkipRequest',
      m: msg({ MessageType: 'SkipRequest', From: 'Manager' }, encodeBody({}), { messageId: 'skip-1' }),
      answer: 'send SkipResponse->Resolver',
    },
    {
      name: 'a HandoffCompletedRequest',
      m: msg({ MessageType: 'HandoffCompletedRequest', From: 'Manager' }, handoffBody, {
        messageId: 'done-1',
      }),
      answer: 'send ResolutionResponse->Resolver',
    },
  ];
  for (const c of cases) {
    test(`${c.name}: the redelivery sends the replay request and the answer again, with the same MessageIds`, () => {
      const first = run(c.m, blocked, c.outcome);
      assert.deepEqual(shape(first.effects), [
        'state {"b":null,"n":2,"c":2,"r":0}',
        'send ProcessDeferredRequest->DeferredProcessor',
        c.answer,
        'complete',
      ]);
      const released = (first.effects[0] as Extract<Effect, { kind: 'setState' }>).state;
      assert.equal(released.ReleasedBy?.EventId, 'e1');
      assert.equal(released.ReleasedBy?.MessageId, c.m.messageId);

      // Only the state write landed. The redelivery does not write the state again.
      const again = run(c.m, released, c.outcome, env({ newId: () => 'another-fresh-id' }));
      assert.deepEqual(shape(again.effects), [
        'send ProcessDeferredRequest->DeferredProcessor',
        c.answer,
        'complete',
      ]);
      assert.equal(again.signal, 'completed');
      // Deduplicable: a copy that did get out the first time is the same message.
      assert.deepEqual(
        sends(again).map((x) => x.messageId),
        sends(first).map((x) => x.messageId),
      );
      assert.deepEqual(
        sends(again).map((x) => x.body),
        sends(first).map((x) => x.body),
      );
    });
  }

  test('a redelivery after the session was blocked by another event answers without a replay request or a state write', () => {
    for (const c of cases) {
      const first = run(c.m, blocked, c.outcome);
      const released = (first.effects[0] as Extract<Effect, { kind: 'setState' }>).state;
      const reblocked = { ...released, BlockedByEventId: 'e2', BlockedByMessageId: 'm2' };
      const again = run(c.m, reblocked, c.outcome);
      assert.deepEqual(shape(again.effects), [c.answer, 'complete'], c.name);
    }
  });

  test('a redelivered releasing RetryRequest does not run its handler again: it re-sends the recorded answer', () => {
    // A second run could fail (ErrorResponse over the Completed row), be discarded (Skipped), or mark a handoff
    // (re-blocking the session on a row the Resolver and the Manager treat as closed: blocked for good).
    const policies = new RetryPolicies().setDefaultPolicy({ maxRetries: 3, baseDelayMs: 1000 });
    const e = env({ nextRetry: (x, t, n) => policies.nextRetry(x, t, n) });
    for (const c of cases.slice(0, 2)) {
      const first = run(c.m, blocked, c.outcome, e);
      const released = (first.effects[0] as Extract<Effect, { kind: 'setState' }>).state;
      const secondOutcomes: HandlerOutcome[] = [
        fail(),
        fail('Discard'),
        { kind: 'success', handoff: { reason: 'waiting for the import' } },
        ok,
      ];
      for (const outcome of secondOutcomes) {
        const again = run(c.m, released, outcome, env({ newId: () => 'another-fresh-id' }));
        assert.equal(again.invoked, false, `${c.name} then ${outcome.kind}`);
        assert.deepEqual(shape(again.effects), [
          'send ProcessDeferredRequest->DeferredProcessor',
          c.answer,
          'complete',
        ]);
        assert.deepEqual(
          sends(again).map((x) => [x.messageId, x.body]),
          sends(first).map((x) => [x.messageId, x.body]),
        );
      }
    }
  });

  test('a releasing RetryRequest redelivered over state that predates the recorded answer finishes the replay only', () => {
    const m = cases[0]!.m;
    const legacy = state({ ReleasedBy: { EventId: 'e1', MessageId: m.messageId }, NextDeferralSequence: 2 });
    const again = run(m, legacy, fail());
    assert.equal(again.invoked, false);
    assert.deepEqual(shape(again.effects), ['send ProcessDeferredRequest->DeferredProcessor', 'complete']);
  });

  test('the next state write by another delivery forgets the release: a later same-MessageId retry is late', () => {
    const m = cases[0]!.m;
    const onlyBlocked = state({ BlockedByEventId: 'e1', BlockedByMessageId: 'm0' });
    const released = (run(m, onlyBlocked, ok).effects[0] as Extract<Effect, { kind: 'setState' }>).state;
    assert.equal(released.ReleasedBy?.MessageId, m.messageId);
    // Another event fails and blocks the session, then is skipped: both state writes come from other deliveries.
    const other = msg({ EventId: 'e2' }, undefined, { messageId: 'm2' });
    const failed = run(other, released, fail());
    const write = failed.effects.find(
      (f): f is Extract<Effect, { kind: 'setState' }> => f.kind === 'setState',
    );
    assert.ok(write);
    assert.equal(write.state.ReleasedBy, null);
    const skip = msg({ MessageType: 'SkipRequest', From: 'Manager', EventId: 'e2' }, encodeBody({}), {
      messageId: 'skip-2',
    });
    const skipped = run(skip, write.state, undefined);
    const after = (skipped.effects[0] as Extract<Effect, { kind: 'setState' }>).state;
    assert.equal(after.ReleasedBy?.MessageId, 'skip-2');
    // A copy of the first retry arriving now is a late command: completed, no answer, handler not run.
    const late = run(m, after, fail('Retry'));
    assert.equal(late.invoked, false);
    assert.deepEqual(shape(late.effects), ['complete']);
  });

  test('with the inbox on, the redelivery of a successful releasing retry re-sends its ResolutionResponse', () => {
    const m = cases[0]!.m;
    const first = run(m, blocked, ok);
    const released = (first.effects[0] as Extract<Effect, { kind: 'setState' }>).state;
    const r = route(m, released, env({ newId: () => 'another-fresh-id' }), { duplicate: true });
    assert.equal(r.kind, 'settle');
    const again = r.kind === 'settle' ? r.settlement : first;
    assert.deepEqual(shape(again.effects), [
      'send ProcessDeferredRequest->DeferredProcessor',
      'send ResolutionResponse->Resolver',
      'complete',
    ]);
    assert.deepEqual(
      sends(again).map((x) => x.messageId),
      sends(first).map((x) => x.messageId),
    );
  });

  test('other messages of the same event keep their late-command behaviour after a release', () => {
    const released = (
      run(cases[2]!.m, blocked, undefined).effects[0] as Extract<Effect, { kind: 'setState' }>
    ).state;
    const lateRetry = msg({ MessageType: 'RetryRequest', From: 'Retry', RetryCount: 1 }, undefined, {
      messageId: 'retry-2',
    });
    assert.deepEqual(shape(run(lateRetry, released, undefined).effects), ['complete']);
    const secondCompletion = msg({ MessageType: 'HandoffCompletedRequest', From: 'Manager' }, undefined, {
      messageId: 'done-2',
    });
    assert.deepEqual(shape(run(secondCompletion, released, undefined).effects), [
      'send ErrorResponse->Resolver (best effort)',
      'deadLetter CommandRefused',
    ]);
    const secondSkip = msg({ MessageType: 'SkipRequest', From: 'Manager' }, encodeBody({}), {
      messageId: 'skip-2',
    });
    assert.deepEqual(shape(run(secondSkip, released, undefined).effects), [
      'send SkipResponse->Resolver',
      'complete',
    ]);
  });
});

describe('other message types', () => {
  test('ContinuationRequest is completed', () => {
    assert.deepEqual(
      shape(
        run(msg({ MessageType: 'ContinuationRequest', From: 'Continuation' }), state(), undefined).effects,
      ),
      ['complete'],
    );
  });

  for (const type of [MessageType.ErrorResponse, MessageType.ProcessDeferredRequest, 'Unknown']) {
    test(`${type} on the main subscription is dead-lettered with a notification`, () => {
      const s = run(msg({ MessageType: type }), state(), undefined);
      assert.deepEqual(shape(s.effects), [
        'send ErrorResponse->Resolver (best effort)',
        'deadLetter Failed to handle message.',
      ]);
    });
  }

  test('long descriptions are cut at a line break and marked', () => {
    const text = Array.from({ length: 500 }, (_, i) => `line ${i} of a long stack trace`).join('\n');
    const cut = truncateDescription(text);
    assert.ok(cut.length <= 4096);
    assert.ok(cut.endsWith('\n...[TRUNCATED]...'));
    assert.equal(truncateDescription('short'), 'short');
  });
});

describe('order across a block met during a replay', () => {
  // A small model of the session: the main handler's decisions applied in delivery order, parked copies kept as the
  // Deferred subscription would, and passes replayed by the deferred processor's own copy builder.
  function session() {
    let st = state();
    const e = env();
    const parked: OutgoingMessage[] = [];
    const triggers: number[] = [];
    const ran: string[] = [];
    const deliver = (m: InboundMessage, outcome: HandlerOutcome = ok) => {
      const r = route(m, st, e);
      const s = r.kind === 'settle' ? r.settlement : afterHandler(m, st, outcome, e);
      if (r.kind === 'invoke') ran.push(`${m.eventId}:${outcome.kind}`);
      for (const f of s.effects) {
        if (f.kind === 'setState') st = f.state;
        if (f.kind !== 'send') continue;
        const to = f.message.applicationProperties[Prop.To];
        if (to === 'Deferred') parked.push(f.message);
        if (to === 'DeferredProcessor') triggers.push(Number(f.message.applicationProperties.ReplayUntil));
      }
    };
    /** The replayed copies of one pass, in sequence order, the last one ending the pass. */
    const pass = (until: number): InboundMessage[] => {
      const seq = (x: OutgoingMessage) => Number(x.applicationProperties[Prop.DeferralSequence]);
      const below = parked.filter((x) => seq(x) < until).sort((a, b) => seq(a) - seq(b));
      for (const x of below) parked.splice(parked.indexOf(x), 1);
      return below.map((x, i) => {
        const copy = fromReceived({
          messageId: x.messageId,
          sessionId: 's1',
          body: bodyText(x),
          applicationProperties: x.applicationProperties,
        });
        const replayed = buildReplayedCopy(copy, E, 's1', until, i === below.length - 1);
        return fromReceived({ ...replayed, body: bodyText(replayed), applicationProperties: replayed.applicationProperties });
      });
    };
    return {
      deliver,
      pass,
      triggers,
      ran,
      state: () => st,
      release: () => (st = { ...st, BlockedByEventId: null }),
    };
  }
  const ev = (id: string) => msg({ EventId: id }, eventBody('OrderPlaced', { id }), { messageId: `m-${id}` });

  test('a replayed copy parked again keeps its place ahead of a message parked while its pass ran', () => {
    const s = session();
    s.deliver(ev('X'), fail());
    s.deliver(ev('A'));
    s.deliver(ev('B'));
    // X is released (an operator's skip): the pass replays A and B.
    s.release();
    const first = s.pass(s.state().NextDeferralSequence);
    s.triggers.length = 0;
    s.deliver(ev('C')); // published during the drain: parked behind it
    s.deliver(first[0]!, fail()); // A fails again: the session blocks
    s.deliver(first[1]!); // B meets A's block: parked again
    // A's retry succeeds before the deferred processor got to C's trigger.
    s.deliver(
      msg({ EventId: 'A', MessageType: 'RetryRequest', From: 'Retry', RetryCount: 1 }, undefined, {
        messageId: 'retry-A',
      }),
    );
    // The processor works through the triggers in order (each pass replays what is parked below its bound).
    for (let i = 0; i < s.triggers.length; i++) for (const m of s.pass(s.triggers[i]!)) s.deliver(m);
    assert.deepEqual(
      s.ran,
      ['X:failed', 'A:failed', 'A:success', 'B:success', 'C:success'],
      'B was published before C',
    );
    assert.equal(isDraining(s.state()), false);
    assert.equal(isBlocked(s.state()), false);
  });

  test('a copy parked again carries Reparked; a message parked once below it goes behind it', () => {
    // B (sequence 3) was parked again after C (sequence 2) was parked for the first time.
    const st = state({ NextDeferralSequence: 4, NextReplaySequence: 2, DeferredCount: 4, ReparkedUntil: 4 });
    const c = run(msg({ EventId: 'C', ReplaySequence: 2, ReplayUntil: 3, ReplayPassEnd: true }), st, ok);
    assert.equal(c.invoked, false);
    assert.deepEqual(shape(c.effects), [
      'send DeferralResponse->Resolver',
      'send EventRequest->Deferred',
      'state {"b":null,"n":5,"c":5,"r":3}',
      'send ProcessDeferredRequest->DeferredProcessor',
      'complete',
    ]);
    const again = sends(c)[1]!.applicationProperties;
    assert.deepEqual([again.DeferralSequence, again.Reparked], [4, true]);
    // B itself, parked again, runs.
    const b = run(msg({ EventId: 'B', ReplaySequence: 3, ReplayUntil: 4, Reparked: true }), st, ok);
    assert.equal(b.invoked, true);
  });
});
