// A handoff made while another event blocks the session: the operator resubmits an event that does not block it (e0,
// dead-lettered earlier) while e2's failure blocks it, and the resubmission's handler hands off. The block stays e2's,
// so the session state records the handoff beside it (PendingHandoffs). Before, nothing recorded it: its completion
// was refused for ever ("not the pending handoff"), before and after e2 was skipped, while the Manager (row Pending
// (Handoff), message id matching) kept accepting it, so an agent loop re-ran its work without end.
// Decision level (route/afterHandler) and the dispatcher over a fake port; the broker path is in
// e2e/handoffBesideBlock.test.ts.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { emptySessionState, encodeBody, eventBody, MAX_PENDING_HANDOFFS, Prop } from './contract/index.ts';
import type { SessionState } from './contract/index.ts';
import { afterHandler, route } from './decide.ts';
import type { DecisionEnv, HandlerOutcome } from './decide.ts';
import { Dispatcher } from './dispatcher.ts';
import type { Effect, Settlement } from './effects.ts';
import { HandlerRegistry } from './handlers.ts';
import { fromReceived } from './inbound.ts';
import { MemoryInboxStore } from './inbox.ts';
import type { InboundMessage } from './inbound.ts';
import { bodyText } from './outbound.ts';
import { FakeDeliveryPort } from './testing/fakeDeliveryPort.ts';

function env(): DecisionEnv {
  let n = 0;
  return {
    endpointId: 'billing',
    clock: { startedAt: new Date('2026-12-07T04:00:00Z'), now: new Date('2026-12-07T04:00:00Z') },
    sdkVersion: '9.9.9',
    newId: () => `r${++n}`,
    hasHandler: (t) => t === 'OrderPlaced',
  };
}

/** A Manager command of session s1. */
function command(
  type: string,
  eventId: string,
  messageId: string,
  props: Record<string, unknown> = {},
  body: unknown = encodeBody({}),
): InboundMessage {
  return fromReceived({
    messageId,
    sessionId: 's1',
    correlationId: 'c1',
    enqueuedTimeUtc: new Date('2026-12-07T03:59:00Z'),
    body,
    applicationProperties: {
      To: 'billing',
      From: 'Manager',
      MessageType: type,
      EventId: eventId,
      EventTypeId: 'OrderPlaced',
      ParentMessageId: 'row-version',
      ...props,
    },
  });
}

const resubmission = (eventId: string, messageId: string) =>
  command('ResubmissionRequest', eventId, messageId, {}, eventBody('OrderPlaced', { orderId: 'o1' }));
const completion = (eventId: string, messageId: string, handedOffBy?: string) =>
  command(
    'HandoffCompletedRequest',
    eventId,
    messageId,
    handedOffBy ? { HandedOffByMessageId: handedOffBy } : {},
    encodeBody({ EventContent: { EventTypeId: 'OrderPlaced', EventJson: '{"imported":1}' } }),
  );
const failure = (eventId: string, messageId: string, handedOffBy?: string) =>
  command(
    'HandoffFailedRequest',
    eventId,
    messageId,
    handedOffBy ? { HandedOffByMessageId: handedOffBy } : {},
    encodeBody({ ErrorContent: { ErrorText: 'DMF job 7 rejected', ErrorType: 'DmfError' } }),
  );

const handoff: HandlerOutcome = { kind: 'success', handoff: { reason: 'DMF import' } };

/** Both phases, `outcome` standing in for the handler when it runs. */
function run(m: InboundMessage, st: SessionState, outcome?: HandlerOutcome): Settlement {
  const e = env();
  const r = route(m, st, e);
  if (r.kind === 'settle') return r.settlement;
  assert.ok(outcome, 'the handler ran but the test gave no outcome');
  return afterHandler(m, st, outcome, e);
}

function shape(effects: Effect[]): string[] {
  return effects.map((f) => {
    if (f.kind === 'send') return `send ${String(f.message.applicationProperties[Prop.MessageType])}`;
    if (f.kind === 'deadLetter') return `deadLetter ${f.reason}`;
    if (f.kind === 'setState') return `state blocked=${f.state.BlockedByEventId ?? 'none'}`;
    return f.kind;
  });
}

/** The state the settlement writes (the one it was given when it writes none). */
function written(s: Settlement, before: SessionState): SessionState {
  const w = s.effects.find((f): f is Extract<Effect, { kind: 'setState' }> => f.kind === 'setState');
  return w ? w.state : before;
}

const answers = (s: Settlement) =>
  s.effects
    .filter((f): f is Extract<Effect, { kind: 'send' }> => f.kind === 'send')
    .map((f) => ({
      props: f.message.applicationProperties,
      body: bodyText(f.message),
      id: f.message.messageId,
    }));

const REFUSED = ['send ErrorResponse', 'deadLetter CommandRefused'];

// e0 was dead-lettered earlier (no block); e2 failed since and blocks s1 (two messages parked behind it).
const blockedByE2: SessionState = {
  ...emptySessionState(),
  BlockedByEventId: 'e2',
  BlockedByMessageId: 'm-e2',
  NextDeferralSequence: 2,
  DeferredCount: 2,
};

/** The resubmission of e0 handed off (job 1) under e2's block; the state it leaves. */
function handedOffBesideBlock(): SessionState {
  const s = run(resubmission('e0', 'resub-1'), blockedByE2, handoff);
  assert.deepEqual(shape(s.effects), ['send PendingHandoffResponse', 'state blocked=e2', 'complete']);
  return written(s, blockedByE2);
}

describe('a handoff made by a resubmission while another event blocks the session', () => {
  test('its completion is answered Completed; the other event keeps blocking the session, nothing is replayed', () => {
    const pending = handedOffBesideBlock();
    assert.equal(pending.BlockedByEventId, 'e2');
    assert.equal(pending.BlockedByMessageId, 'm-e2');

    const done = run(completion('e0', 'cmd-1', 'resub-1'), pending);
    // Before: refused (CommandRefused notice and dead-letter of the command), whoever sent it, however often.
    assert.deepEqual(shape(done.effects), ['state blocked=e2', 'send ResolutionResponse', 'complete']);
    const [answer] = answers(done);
    assert.equal(answer!.props.EventId, 'e0');
    assert.equal(answer!.props.DeadLetterReason, undefined);
    assert.equal(JSON.parse(answer!.body).EventContent.EventJson, '{"imported":1}');
    const after = written(done, pending);
    assert.deepEqual(
      [
        after.BlockedByEventId,
        after.BlockedByMessageId,
        after.NextDeferralSequence,
        after.NextReplaySequence,
      ],
      ['e2', 'm-e2', 2, 0],
      "e2's block and its parked messages are untouched",
    );

    // The handoff is settled now: a second completion (a repeat, a late agent) is refused as before, and so is a
    // failure of it (it would record Failed over Completed).
    assert.deepEqual(shape(run(completion('e0', 'cmd-2', 'resub-1'), after).effects), REFUSED);
    assert.deepEqual(shape(run(failure('e0', 'cmd-3', 'resub-1'), after).effects), REFUSED);
    // Skipping e2 then releases the session and replays what it parked.
    const skipped = run(command('SkipRequest', 'e2', 'skip-e2'), after);
    assert.deepEqual(shape(skipped.effects), [
      'state blocked=none',
      'send ProcessDeferredRequest',
      'send SkipResponse',
      'complete',
    ]);
  });

  test('completed after the blocker was skipped: still answered (before: refused, "not blocked")', () => {
    const pending = handedOffBesideBlock();
    const skipped = run(command('SkipRequest', 'e2', 'skip-e2'), pending);
    const released = written(skipped, pending);
    assert.equal(released.BlockedByEventId, null);
    const done = run(completion('e0', 'cmd-1', 'resub-1'), released);
    // Only the handoff is settled: the release and the drain it began are the skip's.
    assert.deepEqual(shape(done.effects), ['state blocked=none', 'send ResolutionResponse', 'complete']);
    const after = written(done, released);
    assert.deepEqual([after.NextDeferralSequence, after.NextReplaySequence], [2, 0]);
  });

  test('its failure is answered Failed and marks the entry failed; the entry stays until a resubmit or skip', () => {
    const pending = handedOffBesideBlock();
    const failed = run(failure('e0', 'fail-1', 'resub-1'), pending);
    // As a failed blocking handoff keeps its block: Failed is recorded, the operator resubmits or skips. The entry
    // is marked failed (FailedHandoffs: see "a replay of the resubmission whose handoff then failed").
    assert.deepEqual(shape(failed.effects), ['state blocked=e2', 'send ErrorResponse', 'complete']);
    assert.deepEqual(written(failed, pending).PendingHandoffs, pending.PendingHandoffs);
    const [answer] = answers(failed);
    assert.equal(answer!.props.DeadLetterReason, undefined);
    assert.equal(JSON.parse(answer!.body).ErrorContent.ErrorText, 'DMF job 7 rejected');
    const skipped = run(command('SkipRequest', 'e0', 'skip-e0'), pending);
    assert.deepEqual(shape(skipped.effects), ['state blocked=e2', 'send SkipResponse', 'complete']);
    assert.deepEqual(
      shape(run(failure('e0', 'fail-2', 'resub-1'), written(skipped, pending)).effects),
      REFUSED,
    );
  });

  test('a completion interrupted after its state write is finished by its redelivery with the same answer', () => {
    const pending = handedOffBesideBlock();
    const first = run(completion('e0', 'cmd-1', 'resub-1'), pending);
    const again = run(completion('e0', 'cmd-1', 'resub-1'), written(first, pending));
    assert.deepEqual(shape(again.effects), ['send ResolutionResponse', 'complete']);
    assert.deepEqual(
      answers(again).map((a) => [a.id, a.body]),
      answers(first).map((a) => [a.id, a.body]),
      'the same MessageId: a copy that did get out the first time is the same message',
    );
  });

  test('commands that settle no pending handoff are still refused', () => {
    const pending = handedOffBesideBlock();
    // An event that never handed off.
    const never = run(completion('e5', 'cmd-1', 'm-e5'), pending);
    assert.deepEqual(shape(never.effects), REFUSED);
    assert.match(
      String(answers(never)[0]!.props.DeadLetterErrorDescription),
      /event e5 is not the pending handoff/,
    );
    // Another delivery of e0 than the one whose handoff is pending (an earlier handoff, a wrong id).
    for (const late of [completion('e0', 'cmd-2', 'dl-e0'), failure('e0', 'cmd-3', 'dl-e0')]) {
      const refused = run(late, pending);
      assert.deepEqual(shape(refused.effects), REFUSED);
      assert.match(
        String(answers(refused)[0]!.props.DeadLetterErrorDescription),
        /names the handoff of event e0 made by message dl-e0, but the handoff of that event pending in session s1 is message resub-1's/,
      );
    }
    // A command naming no delivery (an older sender) is matched by EventId, as the block is.
    assert.deepEqual(shape(run(completion('e0', 'cmd-4'), pending).effects), [
      'state blocked=e2',
      'send ResolutionResponse',
      'complete',
    ]);
  });

  test('a later resubmission of the event: another handoff replaces it, a success or a skip settles it', () => {
    const pending = handedOffBesideBlock();
    // Handed off again (job 2): job 1's settlement is refused, job 2's answered.
    const again = written(run(resubmission('e0', 'resub-2'), pending, handoff), pending);
    assert.deepEqual(shape(run(completion('e0', 'cmd-1', 'resub-1'), again).effects), REFUSED);
    assert.deepEqual(shape(run(failure('e0', 'cmd-2', 'resub-1'), again).effects), REFUSED);
    assert.deepEqual(shape(run(completion('e0', 'cmd-3', 'resub-2'), again).effects), [
      'state blocked=e2',
      'send ResolutionResponse',
      'complete',
    ]);
    // Handled this time, or skipped: the handoff is over, its completion refused.
    const handled = run(resubmission('e0', 'resub-3'), pending, { kind: 'success' });
    assert.deepEqual(shape(handled.effects), ['state blocked=e2', 'send ResolutionResponse', 'complete']);
    assert.deepEqual(
      shape(run(completion('e0', 'cmd-4', 'resub-1'), written(handled, pending)).effects),
      REFUSED,
    );
    const skipped = run(command('SkipRequest', 'e0', 'skip-e0'), pending);
    assert.deepEqual(shape(skipped.effects), ['state blocked=e2', 'send SkipResponse', 'complete']);
    assert.deepEqual(
      shape(run(completion('e0', 'cmd-5', 'resub-1'), written(skipped, pending)).effects),
      REFUSED,
    );
    // Discarded by the classifier: over as well.
    const discarded = run(resubmission('e0', 'resub-4'), pending, {
      kind: 'failed',
      error: new Error('stale order'),
      disposition: 'Discard',
      classifierName: 'StaleOrders',
    });
    assert.deepEqual(shape(discarded.effects), ['state blocked=e2', 'send SkipResponse', 'complete']);
    assert.deepEqual(written(discarded, pending).PendingHandoffs, []);
  });

  test('once the session is no longer blocked, a resubmission that hands off blocks it, superseding the earlier handoff', () => {
    const pending = handedOffBesideBlock();
    const released = written(run(command('SkipRequest', 'e2', 'skip-e2'), pending), pending);
    const blocked = written(run(resubmission('e0', 'resub-2'), released, handoff), released);
    assert.deepEqual([blocked.BlockedByEventId, blocked.BlockedByMessageId], ['e0', 'resub-2']);
    assert.deepEqual(shape(run(completion('e0', 'cmd-1', 'resub-1'), blocked).effects), REFUSED);
    assert.deepEqual(shape(run(completion('e0', 'cmd-2', 'resub-2'), blocked).effects), [
      'state blocked=none',
      'send ProcessDeferredRequest',
      'send ResolutionResponse',
      'complete',
    ]);
  });
});

const receivedCommand = (
  type: string,
  eventId: string,
  messageId: string,
  props: Record<string, unknown>,
  body: string,
) => ({
  messageId,
  sessionId: 's1',
  body,
  applicationProperties: {
    To: 'billing',
    From: 'Manager',
    MessageType: type,
    EventId: eventId,
    EventTypeId: 'OrderPlaced',
    ...props,
  },
});

test("the dispatcher: the handler hands the resubmission off under e2's block; the completion with its token is answered", async () => {
  const tokens: string[] = [];
  const d = new Dispatcher({
    endpointId: 'billing',
    handlers: new HandlerRegistry().on('OrderPlaced', (_e, ctx) => {
      if (ctx.messageType === 'ResubmissionRequest')
        tokens.push(ctx.markPendingHandoff('DMF import', 'job-7'));
    }),
  });
  const signal = new AbortController().signal;
  const port = new FakeDeliveryPort(blockedByE2);
  const resub = receivedCommand(
    'ResubmissionRequest',
    'e0',
    'resub-1',
    {},
    eventBody('OrderPlaced', { n: 0 }),
  );
  assert.equal(await d.dispatch(resub, port, signal), 'completed');
  assert.equal(tokens.length, 1);
  const handedOff = port.log;

  port.log = [];
  const done = receivedCommand(
    'HandoffCompletedRequest',
    'e0',
    'cmd-1',
    { HandedOffByMessageId: 'resub-1' },
    encodeBody({ EventContent: { EventTypeId: 'OrderPlaced', EventJson: '{"imported":1}' } }),
  );
  assert.equal(await d.dispatch(done, port, signal), 'completed');
  // Before: ['send ErrorResponse', 'deadLetter CommandRefused'], and the same again on every repeat.
  assert.deepEqual(port.log, ['setState', 'send ResolutionResponse', 'complete']);
  assert.deepEqual(handedOff, ['send PendingHandoffResponse', 'setState', 'complete']);
  assert.deepEqual([port.state.BlockedByEventId, port.state.BlockedByMessageId], ['e2', 'm-e2']);
});

describe('an inbox duplicate of a resubmission and the handoff pending beside the block', () => {
  // The inbox records a success before the settlement. When the settlement of e0's successful resubmission (resub-2)
  // stopped before its state write (refused, the lock lost, a crash), its redelivery is an inbox duplicate: answered
  // DuplicateDetected without running the handler. Before, that answer wrote nothing, so job 1's entry (resub-1)
  // stayed in PendingHandoffs for ever - a late completion of job 1 was answered Completed, and the entry took one of
  // the 64 places for good.
  test('decision: the duplicate ends the entry its first delivery would have ended', () => {
    const pending = handedOffBesideBlock();
    const e = env();
    // The redelivery of resub-2 (its first delivery succeeded; the state write did not happen).
    const r = route({ ...resubmission('e0', 'resub-2'), deliveryCount: 1 }, pending, e, { duplicate: true });
    assert.ok(r.kind === 'settle');
    const dup = r.settlement;
    assert.deepEqual(shape(dup.effects), ['state blocked=e2', 'send SkipResponse', 'complete']);
    const after = written(dup, pending);
    assert.deepEqual(after.PendingHandoffs, []);
    assert.deepEqual(after.ReleasedBlocks.at(-1), { EventId: 'e0', MessageId: 'resub-1' });
    assert.deepEqual([after.BlockedByEventId, after.BlockedByMessageId], ['e2', 'm-e2'], "e2's block stays");
    // Job 1's late settlement is refused, with or without the delivery named.
    assert.deepEqual(shape(run(completion('e0', 'cmd-1', 'resub-1'), after).effects), REFUSED);
    assert.deepEqual(shape(run(completion('e0', 'cmd-2'), after).effects), REFUSED);
    assert.deepEqual(shape(run(failure('e0', 'cmd-3', 'resub-1'), after).effects), REFUSED);
    // A duplicate resubmission of another event leaves the entry alone.
    const other = route({ ...resubmission('e7', 'resub-9'), deliveryCount: 1 }, pending, e, { duplicate: true });
    assert.ok(other.kind === 'settle' && !other.settlement.effects.some((f) => f.kind === 'setState'));
  });

  test('dispatcher with the inbox: the state write of the success refused, the redelivery (a duplicate) ends the entry', async () => {
    const outcomes = ['handoff', 'success'];
    const d = new Dispatcher({
      endpointId: 'billing',
      inbox: new MemoryInboxStore(),
      handlers: new HandlerRegistry().on('OrderPlaced', (_e, ctx) => {
        if (outcomes.shift() === 'handoff') ctx.markPendingHandoff('DMF import', 'job-1');
      }),
    });
    const signal = new AbortController().signal;
    const port = new FakeDeliveryPort(blockedByE2);
    const resub = (messageId: string, deliveryCount: number) => ({
      ...receivedCommand('ResubmissionRequest', 'e0', messageId, {}, eventBody('OrderPlaced', { n: 0 })),
      deliveryCount,
    });
    assert.equal(await d.dispatch(resub('resub-1', 0), port, signal), 'completed');
    assert.deepEqual(port.state.PendingHandoffs, [{ EventId: 'e0', MessageId: 'resub-1' }]);

    // Job 1 failed; the operator resubmits e0 and it is handled, but the state write is refused.
    port.failOn = 'setState';
    assert.equal(await d.dispatch(resub('resub-2', 0), port, signal), 'transient');
    port.failOn = undefined;
    port.log = [];
    assert.equal(await d.dispatch(resub('resub-2', 1), port, signal), 'completed');
    // Before: ['send SkipResponse', 'complete'] and the entry kept.
    assert.deepEqual(port.log, ['setState', 'send SkipResponse', 'complete']);
    assert.deepEqual(port.state.PendingHandoffs, []);
    assert.equal(outcomes.length, 0, 'the handler ran once per resubmission');

    port.log = [];
    const late = receivedCommand(
      'HandoffCompletedRequest',
      'e0',
      'cmd-1',
      { HandedOffByMessageId: 'resub-1' },
      encodeBody({ EventContent: { EventTypeId: 'OrderPlaced', EventJson: '{"imported":1}' } }),
    );
    // Before: ['setState', 'send ResolutionResponse', 'complete'] - Completed for job 1's superseded work.
    assert.equal(await d.dispatch(late, port, signal), 'deadLettered');
    assert.deepEqual(port.log, ['send ErrorResponse', 'deadLetter CommandRefused']);
  });
});

describe('the handoffs pending beside the block at their bound', () => {
  /** e2's block with MAX_PENDING_HANDOFFS handoffs beside it (events e100..), each made by a resubmission. */
  function full(): SessionState {
    let state = blockedByE2;
    for (let i = 0; i < MAX_PENDING_HANDOFFS; i++)
      state = written(run(resubmission(`e${100 + i}`, `resub-${100 + i}`), state, handoff), state);
    assert.equal(state.PendingHandoffs.length, MAX_PENDING_HANDOFFS);
    return state;
  }

  test('one more is not recorded by forgetting the oldest: it is dead-lettered PendingHandoffsFull, the Resolver told', () => {
    const state = full();
    const over = run(resubmission('e0', 'resub-x'), state, {
      kind: 'success',
      handoff: { reason: 'DMF import', externalJobId: 'job-9' },
    });
    // Before: answered PendingHandoffResponse and the state written without e100's entry - nobody told, and e100's
    // completion refused later ("not the pending handoff") while its row showed Pending (Handoff).
    assert.deepEqual(shape(over.effects), ['send ErrorResponse', 'deadLetter PendingHandoffsFull']);
    assert.equal(over.signal, 'deadLettered');
    const [notice] = answers(over);
    assert.equal(notice!.props.EventId, 'e0');
    assert.equal(notice!.props.DeadLetterReason, 'PendingHandoffsFull');
    const description = String(notice!.props.DeadLetterErrorDescription);
    assert.match(description, /event e0 handed off \(DMF import, job job-9\)/);
    assert.match(description, /session s1 already holds 64 handoffs pending beside the block of event e2/);
    // Every recorded handoff can still be settled, the oldest too.
    assert.deepEqual(shape(run(completion('e100', 'cmd-1', 'resub-100'), state).effects), [
      'state blocked=e2',
      'send ResolutionResponse',
      'complete',
    ]);
  });

  test('at the bound, another handoff of an event already there replaces its entry; a settled one makes room', () => {
    const state = full();
    const replaced = run(resubmission('e100', 'resub-y'), state, handoff);
    assert.deepEqual(shape(replaced.effects), ['send PendingHandoffResponse', 'state blocked=e2', 'complete']);
    assert.equal(written(replaced, state).PendingHandoffs.length, MAX_PENDING_HANDOFFS);
    const roomy = written(run(command('SkipRequest', 'e100', 'skip-e100'), state), state);
    const added = run(resubmission('e0', 'resub-x'), roomy, handoff);
    assert.deepEqual(shape(added.effects), ['send PendingHandoffResponse', 'state blocked=e2', 'complete']);
  });
});

describe('a late copy of an older resubmission, after a later one handed off', () => {
  // resub-A of e0 succeeded (the inbox records it); later the operator resubmitted e0 again and resub-B handed off
  // (job 2) beside e2's block. Then a second copy of resub-A arrives with the same MessageId - a console dead-letter
  // replay keeps it, a Manager re-send derives it - on its first delivery: an inbox duplicate. Before, it settled e0's
  // entry as if it were the redelivery of a success whose state write had not happened, although the entry was job
  // 2's, made after resub-A: job 2's completion was then refused (dead-lettered CommandRefused).
  test("decision: a duplicate on its first delivery leaves the entry; only a redelivery ends it", () => {
    const pending = handedOffBesideBlock();
    const r = route(resubmission('e0', 'resub-0'), pending, env(), { duplicate: true });
    assert.ok(r.kind === 'settle');
    assert.deepEqual(shape(r.settlement.effects), ['send SkipResponse', 'complete']);
  });

  test("dispatcher with the inbox: the copy is answered DuplicateDetected and job 2's completion is still answered", async () => {
    const outcomes = ['success', 'handoff'];
    const d = new Dispatcher({
      endpointId: 'billing',
      inbox: new MemoryInboxStore(),
      handlers: new HandlerRegistry().on('OrderPlaced', (_e, ctx) => {
        if (outcomes.shift() === 'handoff') ctx.markPendingHandoff('DMF import', 'job-2');
      }),
    });
    const signal = new AbortController().signal;
    const port = new FakeDeliveryPort(blockedByE2);
    const resub = (messageId: string) => ({
      ...receivedCommand('ResubmissionRequest', 'e0', messageId, {}, eventBody('OrderPlaced', { n: 0 })),
      deliveryCount: 0,
    });
    assert.equal(await d.dispatch(resub('resub-A'), port, signal), 'completed');
    assert.equal(await d.dispatch(resub('resub-B'), port, signal), 'completed');
    assert.deepEqual(port.state.PendingHandoffs, [{ EventId: 'e0', MessageId: 'resub-B' }]);

    port.log = [];
    assert.equal(await d.dispatch(resub('resub-A'), port, signal), 'completed');
    // Before: ['setState', 'send SkipResponse', 'complete'], job 2's entry removed.
    assert.deepEqual(port.log, ['send SkipResponse', 'complete']);
    assert.deepEqual(port.state.PendingHandoffs, [{ EventId: 'e0', MessageId: 'resub-B' }]);
    assert.equal(outcomes.length, 0, 'the handler ran once per resubmission, not for the copy');

    port.log = [];
    const done = receivedCommand(
      'HandoffCompletedRequest',
      'e0',
      'cmd-2',
      { HandedOffByMessageId: 'resub-B' },
      encodeBody({ EventContent: { EventTypeId: 'OrderPlaced', EventJson: '{"imported":2}' } }),
    );
    // Before: 'deadLettered' (CommandRefused: no longer pending).
    assert.equal(await d.dispatch(done, port, signal), 'completed');
    assert.deepEqual(port.log, ['setState', 'send ResolutionResponse', 'complete']);
    assert.deepEqual(port.state.PendingHandoffs, []);
  });
});

describe('a late copy of the resubmission that handed off', () => {
  // A second copy of the very resubmission whose handoff is pending, with its MessageId (a redelivery after the state
  // write, a Manager repeat, a console dead-letter replay). Handoffs are not recorded in the inbox, so nothing else
  // recognises it. Before, route() ran the handler again: a second external job, a second PendingHandoffResponse.
  test('beside the block: completed without the handler and without a response; the entry stays', () => {
    const pending = handedOffBesideBlock();
    const copy = route(resubmission('e0', 'resub-1'), pending, env());
    assert.ok(copy.kind === 'settle', 'the handler would run again');
    assert.deepEqual(shape(copy.settlement.effects), ['complete']);
    // Another resubmission of e0 (its own MessageId) still runs and replaces the entry.
    assert.equal(route(resubmission('e0', 'resub-2'), pending, env()).kind, 'invoke');
    // job 1's completion is still answered.
    const done = run(completion('e0', 'cmd-1', 'resub-1'), pending);
    assert.deepEqual(shape(done.effects), ['state blocked=e2', 'send ResolutionResponse', 'complete']);
  });

  test('blocking the session: completed without the handler and without a response; the block stays', () => {
    const failedE2 = { ...emptySessionState(), BlockedByEventId: 'e2', BlockedByMessageId: 'm-e2' };
    const s = run(resubmission('e2', 'resub-e2'), failedE2, handoff);
    assert.deepEqual(shape(s.effects), ['send PendingHandoffResponse', 'state blocked=e2', 'complete']);
    const pending = written(s, failedE2);
    assert.equal(pending.BlockedByMessageId, 'resub-e2');
    const copy = route(resubmission('e2', 'resub-e2'), pending, env());
    assert.ok(copy.kind === 'settle', 'the handler would run again');
    assert.deepEqual(shape(copy.settlement.effects), ['complete']);
    // Another resubmission of e2 (its own MessageId) still runs.
    assert.equal(route(resubmission('e2', 'resub-e2-2'), pending, env()).kind, 'invoke');
  });

  test('after the handoff was completed: the copy does not run the handler and block the session again', () => {
    const failedE2 = { ...emptySessionState(), BlockedByEventId: 'e2', BlockedByMessageId: 'm-e2' };
    const pending = written(run(resubmission('e2', 'resub-e2'), failedE2, handoff), failedE2);
    const done = run(completion('e2', 'cmd-1', 'resub-e2'), pending);
    const released = written(done, pending);
    assert.equal(released.BlockedByEventId, null);
    const copy = route(resubmission('e2', 'resub-e2'), released, env());
    assert.ok(copy.kind === 'settle', 'the handler would run again and its handoff block the session');
    assert.deepEqual(shape(copy.settlement.effects), ['complete']);
    // Beside a block too: e0's entry completed, then a copy of the resubmission that made it.
    const besides = handedOffBesideBlock();
    const settled = written(run(completion('e0', 'cmd-2', 'resub-1'), besides), besides);
    assert.deepEqual(settled.PendingHandoffs, []);
    const late = route(resubmission('e0', 'resub-1'), settled, env());
    assert.ok(late.kind === 'settle', 'the handler would run again');
    assert.deepEqual(shape(late.settlement.effects), ['complete']);
  });
});

describe('a replay of the resubmission whose handoff then failed', () => {
  // Resubmission R hands off on its last delivery: its state write lands, its completion does not, and the broker
  // dead-letters it. The agent reports the job failed: answered, the row is Failed, and R stays recorded (the block,
  // or the entry beside it). The operator replays R from Topology → Subscriptions, which keeps its MessageId. Before,
  // the replay was taken for a copy of a pending handoff: completed without the handler and without an answer, the
  // session still blocked, the row still Failed, and nothing told the operator.
  test('blocking the session: the replay runs the handler; handing off again, it is pending again', () => {
    const failedE2 = { ...emptySessionState(), BlockedByEventId: 'e2', BlockedByMessageId: 'm-e2' };
    const pending = written(run(resubmission('e2', 'resub-e2'), failedE2, handoff), failedE2);
    const failed = run(failure('e2', 'cmd-f', 'resub-e2'), pending);
    assert.deepEqual(shape(failed.effects), ['state blocked=e2', 'send ErrorResponse', 'complete']);
    const after = written(failed, pending);
    assert.deepEqual([after.BlockedByEventId, after.BlockedByMessageId], ['e2', 'resub-e2']);
    assert.deepEqual(after.FailedHandoffs, [{ EventId: 'e2', MessageId: 'resub-e2' }]);
    // A redelivery of the failure writes nothing more.
    assert.deepEqual(shape(run(failure('e2', 'cmd-f', 'resub-e2'), after).effects), ['send ErrorResponse', 'complete']);

    const replay = route(resubmission('e2', 'resub-e2'), after, env());
    assert.equal(replay.kind, 'invoke', 'the replay was completed as a copy, no handler run and no answer');
    // It hands off again: the block is its own again, no longer marked failed, so a copy of it is a copy again.
    const again = run(resubmission('e2', 'resub-e2'), after, handoff);
    assert.deepEqual(shape(again.effects), ['send PendingHandoffResponse', 'state blocked=e2', 'complete']);
    const repending = written(again, after);
    assert.deepEqual(repending.FailedHandoffs, []);
    assert.equal(route(resubmission('e2', 'resub-e2'), repending, env()).kind, 'settle');
    // It succeeds instead: the session is released.
    const ok = run(resubmission('e2', 'resub-e2'), after, { kind: 'success' });
    assert.equal(written(ok, after).BlockedByEventId, null);
  });

  test('beside the block: the replay runs the handler; the failure leaves the entry, marked', () => {
    const pending = handedOffBesideBlock();
    const failed = run(failure('e0', 'cmd-f', 'resub-1'), pending);
    assert.deepEqual(shape(failed.effects), ['state blocked=e2', 'send ErrorResponse', 'complete']);
    const after = written(failed, pending);
    assert.deepEqual(after.PendingHandoffs, [{ EventId: 'e0', MessageId: 'resub-1' }]);
    assert.equal(route(resubmission('e0', 'resub-1'), after, env()).kind, 'invoke');
    const again = written(run(resubmission('e0', 'resub-1'), after, handoff), after);
    assert.deepEqual([again.PendingHandoffs, again.FailedHandoffs], [[{ EventId: 'e0', MessageId: 'resub-1' }], []]);
    assert.equal(route(resubmission('e0', 'resub-1'), again, env()).kind, 'settle');
  });

  test('a failure naming no recorded handoff marks nothing; a mark whose handoff is over is dropped at the next', () => {
    const failedE2 = { ...emptySessionState(), BlockedByEventId: 'e2', BlockedByMessageId: 'm-e2' };
    // e9 neither blocks nor has a handoff beside the block: answered, no state written.
    assert.deepEqual(shape(run(failure('e9', 'cmd-9'), failedE2).effects), ['send ErrorResponse', 'complete']);
    // e0's handoff beside the block failed, then e0 was skipped (its entry over); e2's own failure drops e0's mark.
    const besides = written(run(failure('e0', 'cmd-f', 'resub-1'), handedOffBesideBlock()), handedOffBesideBlock());
    const skipped = written(run(command('SkipRequest', 'e0', 'skip-e0'), besides), besides);
    assert.deepEqual(skipped.FailedHandoffs, [{ EventId: 'e0', MessageId: 'resub-1' }]);
    // The replay of resub-1 after the skip is a copy of a block that is over (the row is closed: Skipped).
    assert.equal(route(resubmission('e0', 'resub-1'), skipped, env()).kind, 'settle');
    const e2failed = written(run(failure('e2', 'cmd-2'), skipped), skipped);
    assert.deepEqual(e2failed.FailedHandoffs, [{ EventId: 'e2', MessageId: 'm-e2' }]);
  });
});
