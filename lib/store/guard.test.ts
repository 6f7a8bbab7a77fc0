// The stale-write guard as a pure function: every rule of "Which messages may reopen a settled row".
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ALL_MESSAGE_TYPES,
  MessageType as T,
  ResolutionStatus as S,
  resultingStatus,
  MAX_APPLIED_MESSAGE_IDS,
} from '@nimbus/sdk/contract';
import type { MessageType, ResolutionStatus } from '@nimbus/sdk/contract';
import { asksHistoryForAnswer, asksHistoryForCopy, asksHistoryForRetry, decideStaleWrite, isGuarded, TERMINAL_STATUSES, UnclassifiedWriteError } from './guard.ts';

function incoming(messageType: MessageType, messageId = 'm-new') {
  return { status: resultingStatus(messageType).status, messageType, messageId };
}
const row = (
  status: ResolutionStatus,
  messageType: MessageType | null,
  parentMessageId: string | null = 'self',
) => ({
  status,
  messageType,
  parentMessageId,
});
const CONTROL = [
  T.ResubmissionRequest,
  T.SkipRequest,
  T.RetryRequest,
  T.ContinuationRequest,
  T.HandoffCompletedRequest,
  T.HandoffFailedRequest,
];
const TERMINALS = [S.Completed, S.Skipped, S.Failed, S.DeadLettered, S.Unsupported];
const TERMINAL_WRITERS: Record<string, MessageType> = {
  Completed: T.ResolutionResponse,
  Skipped: T.SkipResponse,
  Failed: T.ErrorResponse,
  DeadLettered: T.ErrorResponse,
  Unsupported: T.UnsupportedResponse,
};

describe('stale-write guard', () => {
  test('a first write always applies', () => {
    for (const t of ALL_MESSAGE_TYPES.filter((x) => x !== T.ProcessDeferredRequest)) {
      assert.deepEqual(decideStaleWrite(incoming(t), null), { apply: true }, t);
    }
  });

  test('terminal writes are unguarded and apply over anything, even over a row that answers them', () => {
    for (const t of [T.ResolutionResponse, T.ErrorResponse, T.SkipResponse, T.UnsupportedResponse]) {
      assert.equal(isGuarded(resultingStatus(t).status, t), false);
      for (const st of Object.values(S)) {
        assert.deepEqual(decideStaleWrite(incoming(t, 'm1'), row(st, T.ResolutionResponse, 'm1')), {
          apply: true,
        });
      }
    }
    // A dead-letter notification projects DeadLettered whatever its type: unguarded too.
    assert.equal(isGuarded(resultingStatus(T.EventRequest, 'poison').status, T.EventRequest), false);
  });

  test('ancestor check: a copy of the message the row already answers is refused, for every guarded type', () => {
    for (const t of [T.EventRequest, T.DeferralResponse, T.PendingHandoffResponse, ...CONTROL]) {
      const d = decideStaleWrite(incoming(t, 'req-1'), row(S.Pending, T.EventRequest, 'req-1'));
      assert.deepEqual(d, { apply: false, reason: 'already-answered' }, t);
    }
    // ... including a rescheduled copy of a resubmission whose response already settled the row
    assert.deepEqual(
      decideStaleWrite(
        incoming(T.ResubmissionRequest, 'rs-1'),
        row(S.Completed, T.ResolutionResponse, 'rs-1'),
      ),
      {
        apply: false,
        reason: 'already-answered',
      },
    );
  });

  test('the ancestor check ignores empty and different parents', () => {
    assert.deepEqual(decideStaleWrite(incoming(T.EventRequest, 'm1'), row(S.Pending, T.EventRequest, '')), {
      apply: true,
    });
    assert.deepEqual(decideStaleWrite(incoming(T.EventRequest, 'm1'), row(S.Pending, T.EventRequest, null)), {
      apply: true,
    });
    assert.deepEqual(
      decideStaleWrite(incoming(T.EventRequest, 'M1'), row(S.Pending, T.EventRequest, 'm1')),
      { apply: true },
      'ordinal compare',
    );
  });

  test('a request copy or a deferral refreshes only a request-stage row', () => {
    for (const t of [T.EventRequest, T.DeferralResponse]) {
      assert.deepEqual(
        decideStaleWrite(incoming(t), row(S.Pending, T.EventRequest)),
        { apply: true },
        `${t} over Pending/EventRequest`,
      );
      assert.deepEqual(
        decideStaleWrite(incoming(t), row(S.Deferred, T.DeferralResponse)),
        { apply: true },
        `${t} over Deferred`,
      );
      assert.deepEqual(
        decideStaleWrite(incoming(t), row(S.Pending, null)),
        { apply: true },
        `${t} over a seeded row`,
      );
      for (const st of TERMINALS) {
        assert.deepEqual(
          decideStaleWrite(incoming(t), row(st, TERMINAL_WRITERS[st] ?? null)),
          {
            apply: false,
            reason: 'not-request-stage',
          },
          `${t} over ${st}`,
        );
      }
      assert.deepEqual(
        decideStaleWrite(incoming(t), row(S.Pending, T.PendingHandoffResponse)),
        {
          apply: false,
          reason: 'not-request-stage',
        },
        `${t} over a handoff park`,
      );
      for (const c of CONTROL) {
        assert.deepEqual(
          decideStaleWrite(incoming(t), row(S.Pending, c)),
          { apply: false, reason: 'not-request-stage' },
          `${t} over ${c}`,
        );
      }
    }
  });

  test('a handoff park is refused over Completed and Skipped only', () => {
    const park = incoming(T.PendingHandoffResponse);
    assert.deepEqual(decideStaleWrite(park, row(S.Completed, T.ResolutionResponse)), {
      apply: false,
      reason: 'handoff-after-settlement',
    });
    assert.deepEqual(decideStaleWrite(park, row(S.Skipped, T.SkipResponse)), {
      apply: false,
      reason: 'handoff-after-settlement',
    });
    for (const st of [S.Failed, S.DeadLettered, S.Unsupported, S.Pending, S.Deferred]) {
      assert.deepEqual(
        decideStaleWrite(park, row(st, TERMINAL_WRITERS[st] ?? T.EventRequest)),
        { apply: true },
        st,
      );
    }
  });

  test('a RetryRequest is refused over Completed and Skipped: the retry is late, the handler did not run', () => {
    const retry = incoming(T.RetryRequest);
    assert.deepEqual(decideStaleWrite(retry, row(S.Completed, T.ResolutionResponse)), {
      apply: false,
      reason: 'retry-after-settlement',
    });
    assert.deepEqual(decideStaleWrite(retry, row(S.Skipped, T.SkipResponse)), {
      apply: false,
      reason: 'retry-after-settlement',
    });
    for (const st of [S.Failed, S.DeadLettered, S.Unsupported, S.Pending, S.Deferred]) {
      assert.deepEqual(
        decideStaleWrite(retry, row(st, TERMINAL_WRITERS[st] ?? T.EventRequest)),
        { apply: true },
        st,
      );
    }
  });

  test('operator control requests reopen every settled row', () => {
    for (const c of CONTROL) {
      if (c === T.RetryRequest) continue;
      for (const st of Object.values(S)) {
        assert.deepEqual(
          decideStaleWrite(incoming(c), row(st, TERMINAL_WRITERS[st] ?? T.EventRequest)),
          { apply: true },
          `${c} over ${st}`,
        );
      }
    }
  });

  test('a terminal copy of a message applied before a later one is refused; the last message and unknown ids are not', () => {
    // The row applied E (a failure), then L (a message after it; its parent is not E, so the ancestor check stays
    // out of the way): E's copy comes back alone.
    const applied = { ...row(S.Pending, T.RetryRequest, 'p'), lastMessageId: 'l', appliedMessageIds: ['l', 'e', 'req'] };
    for (const t of [T.ErrorResponse, T.ResolutionResponse, T.SkipResponse, T.UnsupportedResponse]) {
      assert.deepEqual(decideStaleWrite(incoming(t, 'e'), applied), { apply: false, reason: 'already-applied' }, t);
    }
    // Other non-terminal writes are left to the other rules: their ids can come round legitimately (below); the
    // console's commands are not (next test).
    for (const t of [T.RetryRequest, T.ContinuationRequest, T.PendingHandoffResponse]) {
      assert.notDeepEqual(decideStaleWrite(incoming(t, 'e'), applied), { apply: false, reason: 'already-applied' }, t);
    }
    assert.deepEqual(decideStaleWrite(incoming(T.ErrorResponse, 'req'), applied), { apply: false, reason: 'already-applied' });
    // The current version's own message is left to the other rules (a repeat of the last write; a claim's send).
    assert.deepEqual(decideStaleWrite(incoming(T.RetryRequest, 'l'), applied), { apply: true });
    assert.deepEqual(decideStaleWrite(incoming(T.ErrorResponse, 'other'), applied), { apply: true });
    // A refusal by another rule keeps its reason: a request copy over a settled row is not-request-stage.
    const settled = { ...row(S.Completed, T.ResolutionResponse, 'x'), lastMessageId: 'r', appliedMessageIds: ['r', 'x'] };
    assert.deepEqual(decideStaleWrite(incoming(T.EventRequest, 'x'), settled), { apply: false, reason: 'already-answered' });
  });

  test("a console command's copy recorded before a later message is refused; the claim's own id and ids not applied are not", () => {
    // The Resolver recorded the command C over the Manager's claim, the subscriber answered it (R, Completed), then a
    // later message (L, whose parent is not C: rule 2 no longer sees C) wrote the row. C's copy came back alone and
    // rule 6 set the Completed row back to Pending, for good.
    const completed = { ...row(S.Completed, T.ResolutionResponse, 'other'), lastMessageId: 'l', appliedMessageIds: ['l', 'r', 'c', 'f'] };
    for (const t of [T.ResubmissionRequest, T.SkipRequest, T.HandoffCompletedRequest, T.HandoffFailedRequest]) {
      assert.deepEqual(decideStaleWrite(incoming(t, 'c'), completed), { apply: false, reason: 'already-applied' }, t);
      // The claim's version names C without applying it (the store keeps a claim's id out of the applied ids): the
      // command's record over it, or behind messages enqueued before the claim, applies.
      const claimed = { ...row(S.Pending, t, 'f'), lastMessageId: 'c', appliedMessageIds: ['f'] };
      assert.deepEqual(decideStaleWrite(incoming(t, 'c'), claimed), { apply: true }, t);
      const behind = { ...row(S.Failed, T.ErrorResponse, 'y'), lastMessageId: 'e2', appliedMessageIds: ['e2', 'y', 'f'] };
      assert.deepEqual(decideStaleWrite(incoming(t, 'c'), behind), { apply: true }, t);
      // Over a row that is not settled, a command is left to the other rules: a batch of a retry, its failure and the
      // command redelivered re-applies the retry's copy over the command (rule 5 lets it through), and the command's
      // copy after it must put the row back (review).
      const retryOnTop = { ...row(S.Pending, T.RetryRequest, 'f'), lastMessageId: 'y', appliedMessageIds: ['y', 'c', 'e2', 'f'] };
      assert.deepEqual(decideStaleWrite(incoming(t, 'c'), retryOnTop), { apply: true }, t);
      // Its copy over its own record is left to the other rules, as any last message's.
      const recorded = { ...row(S.Pending, t, 'f'), lastMessageId: 'c', appliedMessageIds: ['c', 'f'] };
      assert.deepEqual(decideStaleWrite(incoming(t, 'c'), recorded), { apply: true }, t);
    }
  });

  test("the next retry series' RetryRequest applies although its id is among the row's applied ids (review)", () => {
    // A retry's MessageId is derived from the event id and the retry count, and a resubmit starts the count at 0
    // again: after R, E1, retry 1, E2, a resubmit C and its failure E3, the subscriber's retry 1 of the new series
    // carries the id of the first series' retry 1. It was refused already-applied, and the row stayed Failed while
    // the subscriber ran the retry.
    const failedAgain = { ...row(S.Failed, T.ErrorResponse, 'c'), lastMessageId: 'e3', appliedMessageIds: ['e3', 'c', 'e2', 'retry-1', 'e1', 'r'] };
    assert.deepEqual(decideStaleWrite(incoming(T.RetryRequest, 'retry-1'), failedAgain), { apply: true });
  });

  test("past a full list of applied ids, a terminal response is refused when the history's answer says a later entry names it", () => {
    // E was applied, then 8 later messages: its id dropped off the list. A resubmission naming E is among them.
    const full = { ...row(S.Completed, T.ResolutionResponse, 'r4'), lastMessageId: 'ok', appliedMessageIds: ['ok', 'r4', 'e5', 'r3', 'e4', 'r2', 'e3', 'r1'] };
    for (const t of [T.ErrorResponse, T.ResolutionResponse, T.SkipResponse, T.UnsupportedResponse]) {
      assert.equal(asksHistoryForCopy(incoming(t, 'e'), full), true, t);
      assert.deepEqual(decideStaleWrite({ ...incoming(t, 'e'), supersededInHistory: true }, full), { apply: false, reason: 'already-applied' }, t);
      // Nothing names it (a first application: a throttle replacement whose row write never landed), or not asked.
      assert.deepEqual(decideStaleWrite({ ...incoming(t, 'e'), supersededInHistory: false }, full), { apply: true }, t);
      assert.deepEqual(decideStaleWrite(incoming(t, 'e'), full), { apply: true }, t);
    }
    // Not asked, and an answer given anyway is not read: within the list (rule 7 alone decides), the last message,
    // a list not full yet (every id applied since the field existed is on it), a row without the list.
    const notFull = { ...full, appliedMessageIds: full.appliedMessageIds.slice(0, MAX_APPLIED_MESSAGE_IDS - 1) };
    const cases: Array<[string, ReturnType<typeof incoming>, Parameters<typeof decideStaleWrite>[1]]> = [
      ['the last message', incoming(T.ResolutionResponse, 'ok'), full],
      ['a list not full', incoming(T.ErrorResponse, 'e'), notFull],
      ['a row without the list', incoming(T.ErrorResponse, 'e'), { ...row(S.Completed, T.ResolutionResponse), lastMessageId: 'ok' }],
      // Non-terminal writes are left to rules 2-6, as within the list.
      ['a RetryRequest', incoming(T.RetryRequest, 'e'), { ...full, status: S.Failed, messageType: T.ErrorResponse }],
      // A request's id is named by the subscriber's answers to its delivery whether or not its row write landed.
      ['a dead-lettered request', { status: S.DeadLettered, messageType: T.EventRequest, messageId: 'e' }, full],
    ];
    for (const [what, w, r] of cases) {
      assert.equal(asksHistoryForCopy(w, r), false, what);
      assert.deepEqual(decideStaleWrite({ ...w, supersededInHistory: true }, r), decideStaleWrite(w, r), what);
    }
    assert.equal(asksHistoryForCopy(incoming(T.ErrorResponse, 'e'), null), false, 'no row');
    assert.deepEqual(decideStaleWrite({ ...incoming(T.ErrorResponse, 'r1'), supersededInHistory: false }, full), { apply: false, reason: 'already-applied' }, 'on the list: rule 7 as before');
  });

  test("a Failed ErrorResponse the row does not show is refused when the history holds a RetryRequest for the same delivery (rule 8)", () => {
    // E answered delivery d and the policy's retry Y named d too; the retries and a success were applied since. E's
    // copy (its completion lost) or its throttle replacement (its row write never landed) must not turn it Failed.
    const completed = { ...row(S.Completed, T.ResolutionResponse, 'y4'), lastMessageId: 'ok', appliedMessageIds: ['ok', 'y4', 'e4', 'y3'] };
    const pending = { ...row(S.Pending, T.RetryRequest, 'd'), lastMessageId: 'y', appliedMessageIds: ['y', 'd'] };
    for (const [what, r] of [['over the success', completed], ['over the retry itself', pending], ['over a row without the list', { ...row(S.Completed, T.ResolutionResponse), lastMessageId: 'ok' }]] as const) {
      assert.equal(asksHistoryForRetry(incoming(T.ErrorResponse, 'e'), r), true, what);
      assert.deepEqual(decideStaleWrite({ ...incoming(T.ErrorResponse, 'e'), retriedInHistory: true }, r), { apply: false, reason: 'superseded-by-retry' }, what);
      // No retry for that delivery (a final failure: retries exhausted), or not asked: written as before.
      assert.deepEqual(decideStaleWrite({ ...incoming(T.ErrorResponse, 'e'), retriedInHistory: false }, r), { apply: true }, what);
      assert.deepEqual(decideStaleWrite(incoming(T.ErrorResponse, 'e'), r), { apply: true }, what);
    }
    // Asked independently of the applied ids being full; a copy still on the list keeps rule 7's reason.
    assert.deepEqual(decideStaleWrite({ ...incoming(T.ErrorResponse, 'e4'), retriedInHistory: true }, completed), { apply: false, reason: 'already-applied' });
    // Not asked, and an answer given anyway is not read: a dead letter (a final answer), the row's own failure, no
    // row, a conditional write's view (no last message id), any other type.
    const deadLetter = { status: S.DeadLettered, messageType: T.ErrorResponse, messageId: 'e' };
    const cases: Array<[string, ReturnType<typeof incoming>, Parameters<typeof decideStaleWrite>[1]]> = [
      ['a dead letter', deadLetter, completed],
      ["the row's own failure", incoming(T.ErrorResponse, 'e'), { ...row(S.Failed, T.ErrorResponse, 'd'), lastMessageId: 'e', appliedMessageIds: ['e', 'd'] }],
      ['no row', incoming(T.ErrorResponse, 'e'), null],
      ['a conditional write', incoming(T.ErrorResponse, 'e'), row(S.Completed, T.ResolutionResponse)],
      ['a success', incoming(T.ResolutionResponse, 'e'), pending],
      ['a skip', incoming(T.SkipResponse, 'e'), pending],
      ['a RetryRequest', incoming(T.RetryRequest, 'e'), { ...row(S.Failed, T.ErrorResponse), lastMessageId: 'f', appliedMessageIds: ['f'] }],
    ];
    for (const [what, w, r] of cases) {
      assert.equal(asksHistoryForRetry(w, r), false, what);
      assert.deepEqual(decideStaleWrite({ ...w, retriedInHistory: true }, r), decideStaleWrite(w, r), what);
    }
  });

  test('a late Failed ErrorResponse is refused over a settled answer to another delivery enqueued after it (rule 9)', () => {
    // E answered delivery d at 01 s; its retry y (never stored) succeeded: the row shows c, naming y, enqueued at 03 s.
    const t = (s: number) => `2026-12-01T09:00:0${s}.000Z`;
    const completed = { ...row(S.Completed, T.ResolutionResponse, 'y'), lastMessageId: 'c', appliedMessageIds: ['c', 'd'], enqueuedAt: t(3) };
    const late = { ...incoming(T.ErrorResponse, 'e'), late: true, parentMessageId: 'd', enqueuedAt: t(1) };
    assert.deepEqual(decideStaleWrite(late, completed), { apply: false, reason: 'superseded-by-later-answer' });
    // Over every settled status; a failure whose original time is unknown (null) is taken as the oldest.
    for (const status of TERMINALS)
      assert.deepEqual(decideStaleWrite(late, { ...completed, status, messageType: TERMINAL_WRITERS[status]! }).apply, false, status);
    assert.deepEqual(decideStaleWrite({ ...late, enqueuedAt: null }, completed).apply, false, 'time unknown');
    // Rules 7 and 8 keep their reasons when they refuse it too.
    assert.deepEqual(decideStaleWrite({ ...late, retriedInHistory: true }, completed), { apply: false, reason: 'superseded-by-retry' });
    // Applied as before: not late (a first arrival), the row's version enqueued before it (an answer to an earlier
    // delivery: E is the newer word), the same delivery's answer, a Pending row, a view without the row's time or last
    // message id (a conditional write's, an older row), a dead letter, a success, the row's own failure.
    const cases: Array<[string, Parameters<typeof decideStaleWrite>[0], Parameters<typeof decideStaleWrite>[1]]> = [
      ['not late', { ...late, late: undefined }, completed],
      ['an earlier answer', late, { ...completed, enqueuedAt: t(0) }],
      ['the same delivery', late, { ...completed, parentMessageId: 'd' }],
      ['a Pending row', late, { ...completed, status: S.Pending, messageType: T.RetryRequest }],
      ['no row time', late, { ...completed, enqueuedAt: null }],
      ['a conditional view', late, row(S.Completed, T.ResolutionResponse, 'y')],
      ['a dead letter', { ...late, status: S.DeadLettered }, completed],
      ['a success', { ...late, messageType: T.ResolutionResponse, status: S.Completed }, completed],
      ["the row's own failure", late, { ...completed, status: S.Failed, messageType: T.ErrorResponse, lastMessageId: 'e' }],
      ['no parent', { ...late, parentMessageId: null }, completed],
    ];
    for (const [what, w, r] of cases) assert.deepEqual(decideStaleWrite(w, r), { apply: true }, what);
  });

  test("a late RetryRequest the history shows answered is refused already-answered over a row that moved on (rule 2's history form)", () => {
    const failed = { ...row(S.Failed, T.ErrorResponse, 'r'), lastMessageId: 'f', appliedMessageIds: ['f', 'r', 'c'] };
    const late = { ...incoming(T.RetryRequest, 'y'), late: true };
    assert.equal(asksHistoryForAnswer(late, failed), true);
    assert.deepEqual(decideStaleWrite({ ...late, answeredInHistory: true }, failed), { apply: false, reason: 'already-answered' });
    assert.deepEqual(decideStaleWrite({ ...late, answeredInHistory: false }, failed), { apply: true });
    // Not asked, and an answer given anyway is not read: not late, another type, a row naming it (rule 2 proper),
    // no row; over Completed rule 5 keeps its reason.
    const cases: Array<[string, Parameters<typeof decideStaleWrite>[0], Parameters<typeof decideStaleWrite>[1]]> = [
      ['not late', incoming(T.RetryRequest, 'y'), failed],
      ['a resubmission', { ...incoming(T.ResubmissionRequest, 'y'), late: true }, failed],
      ['no row', late, null],
    ];
    for (const [what, w, r] of cases) {
      assert.equal(asksHistoryForAnswer(w, r), false, what);
      assert.deepEqual(decideStaleWrite({ ...w, answeredInHistory: true }, r), decideStaleWrite(w, r), what);
    }
    assert.deepEqual(decideStaleWrite({ ...late, answeredInHistory: true }, { ...failed, parentMessageId: 'y' }), { apply: false, reason: 'already-answered' });
    assert.deepEqual(decideStaleWrite({ ...late, answeredInHistory: true }, { ...failed, status: S.Completed }), { apply: false, reason: 'retry-after-settlement' });
  });

  test('a row without applied ids (an older writer, a view built from history) is decided as before', () => {
    assert.deepEqual(decideStaleWrite(incoming(T.ErrorResponse, 'e'), { ...row(S.Pending, T.RetryRequest, 'e'), lastMessageId: 'l' }), { apply: true });
    assert.deepEqual(decideStaleWrite(incoming(T.ErrorResponse, 'e'), { ...row(S.Pending, T.RetryRequest, 'e'), appliedMessageIds: ['l', 'e'] }), { apply: true });
  });

  test('a non-terminal type the guard does not classify is refused loudly', () => {
    assert.throws(() => decideStaleWrite(incoming(T.ProcessDeferredRequest), null), UnclassifiedWriteError);
  });

  test('every message type is either terminal or classified by the guard (maintenance rule)', () => {
    for (const t of ALL_MESSAGE_TYPES) {
      const st = resultingStatus(t).status;
      if (t === T.ProcessDeferredRequest) continue;
      assert.ok(TERMINAL_STATUSES.has(st) || isGuarded(st, t), t);
    }
  });
});
