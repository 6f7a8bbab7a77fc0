// The Jobs drawer's words: counts say "sent" (a command sent is not an event fixed), a confirmed job reads as
// starting, the button counts paused jobs too, and the empty drawer names what it would list.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buttonLabel, countParts, EMPTY_TEXT, outcomeParts, stateLabel, stoppedText } from './jobText.ts';

/** Every unchanged event not reached (as a job with no refusals and no send failures reads while going). */
const unsplit = (c: { stillFailed: number }) => ({ stillFailedSplit: { notReached: c.stillFailed, refused: 0, notSent: 0, unknown: 0 }, refusals: [] });

test('a resubmit of 16 events whose commands all went out says 16 sent, not 16 done', () => {
  const parts = countParts({ kind: 'resubmit', state: 'completed', total: 16, done: 16, refused: 0, failed: 0 });
  assert.deepEqual(parts, ['16 / 16 processed', '16 sent']);
  assert.ok(!parts.join(' ').includes('done'));
});

test('refusals and send failures are named as such; a replay counts replayed and uncertain', () => {
  assert.deepEqual(countParts({ kind: 'skip', state: 'completed', total: 1200, done: 1000, refused: 150, failed: 50 }), [
    '1,200 / 1,200 processed',
    '1,000 sent',
    '150 refused (state changed)',
    '50 failed to send',
  ]);
  assert.deepEqual(countParts({ kind: 'replay', state: 'completed', total: 5, done: 4, refused: 1, failed: 0 }), ['5 / 5 processed', '4 replayed', '1 uncertain']);
});

test('a confirmed job waiting for the runner reads as starting, not paused', () => {
  assert.equal(stateLabel({ state: 'queued', requested: 'run' }), 'starting');
  assert.equal(stateLabel({ state: 'running', requested: 'pause' }), 'running (pause requested)');
  assert.equal(stateLabel({ state: 'paused', requested: 'pause' }), 'paused');
});

test('the Jobs button counts paused jobs beside running ones', () => {
  assert.equal(buttonLabel([]), 'Jobs');
  assert.equal(buttonLabel([{ state: 'completed' }]), 'Jobs');
  assert.equal(buttonLabel([{ state: 'paused' }]), 'Jobs (1 paused)');
  assert.equal(buttonLabel([{ state: 'running' }, { state: 'queued' }, { state: 'paused' }, { state: 'cancelled' }]), 'Jobs (2 running, 1 paused)');
});

// Before, a job the runner stopped because its starter's role was revoked read "cancelled" alone, as an operator's
// cancel reads: the reason it carries (stoppedReason, server/operations/authority.ts) was not shown.
test("a job stopped because its starter's role was revoked says why; an operator's cancel and other states add nothing", () => {
  const reason = 'stopped: Pat Smith no longer holds Operator on billingendpoint';
  assert.equal(stoppedText({ state: 'cancelled', stoppedReason: reason }), 'Stopped: Pat Smith no longer holds Operator on billingendpoint');
  assert.equal(stoppedText({ state: 'cancelled', stoppedReason: null }), null, "the operator's cancel");
  assert.equal(stoppedText({ state: 'cancelled' }), null, "an older replica's answer, without the field");
  // Written only with the cancelled state; any other state's reason is not this job's end.
  assert.equal(stoppedText({ state: 'running', stoppedReason: reason }), null);
  // A reason in other words is shown as it is, after the label.
  assert.equal(stoppedText({ state: 'cancelled', stoppedReason: 'grant removed' }), 'Stopped: grant removed');
});

test('the empty drawer says it lists dead-letter replays too', () => {
  assert.match(EMPTY_TEXT, /bulk jobs/);
  assert.match(EMPTY_TEXT, /dead-letter replays/);
});

test("a retry's follow-up puts failed again first and keeps a resubmit's zeros; a skip lists only what is there", () => {
  const counts = { completed: 7, failedAgain: 2, stillFailed: 1, inProgress: 0, skipped: 0, unknown: 0 };
  assert.deepEqual(outcomeParts({ kind: 'resubmit', state: 'completed' }, { checked: 10, total: 10, counts, ...unsplit(counts) }), [
    { text: '2 failed again', failed: true },
    { text: '1 still failed (not retried)', failed: true },
    { text: '7 completed', failed: false },
  ]);
  const none = { completed: 0, failedAgain: 0, stillFailed: 0, inProgress: 3, skipped: 0, unknown: 0 };
  assert.deepEqual(outcomeParts({ kind: 'resubmit', state: 'completed' }, { checked: 3, total: 3, counts: none, ...unsplit(none) }), [
    { text: '0 failed again', failed: false },
    { text: '3 in progress', failed: false },
    { text: '0 completed', failed: false },
  ]);
  assert.deepEqual(outcomeParts({ kind: 'skip', state: 'completed' }, { checked: 2_000, total: 5_000, counts: { ...none, inProgress: 0, skipped: 2_000 }, ...unsplit(none) }), [
    { text: '2,000 skipped', failed: false },
    { text: '(first 2,000 of 5,000 checked)', failed: false },
  ]);
  assert.equal(outcomeParts({ kind: 'resubmit', state: 'completed' }, { checked: 0, total: 0, counts: none, ...unsplit(none) }), null);
});

test('while a job is running or paused, events it has not changed are "not reached yet", not a failure in red', () => {
  const counts = { completed: 4, failedAgain: 1, stillFailed: 95, inProgress: 0, skipped: 0, unknown: 0 };
  for (const state of ['running', 'paused', 'queued'] as const) {
    assert.deepEqual(outcomeParts({ kind: 'resubmit', state }, { checked: 100, total: 100, counts, ...unsplit(counts) }), [
      { text: '1 failed again', failed: true },
      { text: '95 not reached yet', failed: false },
      { text: '4 completed', failed: false },
    ], state);
  }
  assert.deepEqual(outcomeParts({ kind: 'resubmit', state: 'cancelled' }, { checked: 100, total: 100, counts, ...unsplit(counts) })?.[1], { text: '95 still failed (not retried)', failed: true });
});

test('a skip job says skipped, never retried or failed again', () => {
  const counts = { completed: 0, failedAgain: 1, stillFailed: 2, inProgress: 0, skipped: 7, unknown: 0 };
  const parts = outcomeParts({ kind: 'skip', state: 'completed' }, { checked: 10, total: 10, counts, ...unsplit(counts) });
  assert.deepEqual(parts, [
    { text: '1 failed since it started', failed: true },
    { text: '2 still failed (not skipped)', failed: true },
    { text: '7 skipped', failed: false },
  ]);
  assert.ok(!JSON.stringify(parts).match(/retried|failed again/));
});

test('events the job refused are "refused N" with the reasons, whether it is going or ended - never "not reached yet"', () => {
  // 10 unchanged: 6 not reached, 3 refused (the Manager's reasons), 1 whose command could not be sent.
  const counts = { completed: 2, failedAgain: 0, stillFailed: 10, inProgress: 0, skipped: 0, unknown: 0 };
  const o = {
    checked: 12,
    total: 12,
    counts,
    stillFailedSplit: { notReached: 6, refused: 3, notSent: 1, unknown: 0 },
    refusals: [
      { reason: 'the event has no stored payload to resubmit; resubmit it with an edited payload', events: 2 },
      { reason: 'resubmit is not possible for an event that is Completed', events: 1 },
    ],
  };
  const why = 'the event has no stored payload to resubmit; resubmit it with an edited payload (2); resubmit is not possible for an event that is Completed (1)';
  assert.deepEqual(outcomeParts({ kind: 'resubmit', state: 'running' }, o), [
    { text: '0 failed again', failed: false },
    { text: '6 not reached yet', failed: false },
    { text: '1 not sent', failed: true },
    { text: '3 refused', failed: false, why },
    { text: '2 completed', failed: false },
  ]);
  assert.deepEqual(outcomeParts({ kind: 'resubmit', state: 'completed' }, { ...o, stillFailedSplit: { notReached: 0, refused: 3, notSent: 7, unknown: 0 } }), [
    { text: '0 failed again', failed: false },
    { text: '7 still failed (not retried)', failed: true },
    { text: '3 refused', failed: false, why },
    { text: '2 completed', failed: false },
  ]);
});

test('events that were refused or not sent, the job cannot tell which, read so - without the refusals\' reasons', () => {
  // A broker outage during a long job: 50 send failures and 1 refusal kept, the rest of the reached events in
  // neither list. Old code had no such part: they read "N refused", with the Manager's reasons on hover.
  const counts = { completed: 0, failedAgain: 0, stillFailed: 2_000, inProgress: 0, skipped: 0, unknown: 0 };
  const o = {
    checked: 2_000,
    total: 2_000,
    counts,
    stillFailedSplit: { notReached: 0, refused: 1, notSent: 50, unknown: 1_949 },
    refusals: [{ reason: 'resubmit is not possible for an event that is Completed', events: 1 }],
  };
  const why = 'resubmit is not possible for an event that is Completed (1)';
  assert.deepEqual(outcomeParts({ kind: 'resubmit', state: 'running' }, o), [
    { text: '0 failed again', failed: false },
    { text: '50 not sent', failed: true },
    { text: '1 refused', failed: false, why },
    { text: '1,949 refused or not sent', failed: true },
    { text: '0 completed', failed: false },
  ]);
  assert.deepEqual(outcomeParts({ kind: 'resubmit', state: 'completed' }, o), [
    { text: '0 failed again', failed: false },
    { text: '50 still failed (not retried)', failed: true },
    { text: '1 refused', failed: false, why },
    { text: '1,949 refused or not sent', failed: true },
    { text: '0 completed', failed: false },
  ]);
});

test('an answer from an older replica (no split, no refusals) reads as before, not a crash of the page', () => {
  // During a rolling deploy the outcome may come from a replica that does not send stillFailedSplit or refusals
  // (nor the split's `unknown`). Old code threw reading split.notReached, and the drawer took the layout with it.
  const counts = { completed: 4, failedAgain: 1, stillFailed: 5, inProgress: 0, skipped: 0, unknown: 0 };
  const older = { checked: 10, total: 10, counts };
  assert.deepEqual(outcomeParts({ kind: 'resubmit', state: 'running' }, older), [
    { text: '1 failed again', failed: true },
    { text: '5 not reached yet', failed: false },
    { text: '4 completed', failed: false },
  ]);
  assert.deepEqual(outcomeParts({ kind: 'resubmit', state: 'completed' }, older)?.[1], { text: '5 still failed (not retried)', failed: true });
  const noUnknown = { ...older, stillFailedSplit: { notReached: 0, refused: 2, notSent: 3 }, refusals: [] };
  assert.deepEqual(outcomeParts({ kind: 'resubmit', state: 'completed' }, noUnknown), [
    { text: '1 failed again', failed: true },
    { text: '3 still failed (not retried)', failed: true },
    { text: '2 refused', failed: false },
    { text: '4 completed', failed: false },
  ]);
});

test('a job that refused more events than it kept the reasons of says how many are listed: "N refused, M of them listed"', () => {
  // A cancelled job that refused 53 events and kept the first 50 refusals (MAX_ERRORS_KEPT): the count is exact,
  // the reasons on hover are those of the 50. Old code said "53 refused", as if the reasons covered them all.
  const counts = { completed: 0, failedAgain: 0, stillFailed: 53, inProgress: 0, skipped: 0, unknown: 0 };
  const refusals = [{ reason: 'the event has no stored payload to resubmit; resubmit it with an edited payload', events: 50 }];
  const o = { checked: 53, total: 53, counts, stillFailedSplit: { notReached: 0, refused: 53, notSent: 0, unknown: 0 }, refusals, refusedListed: 50 };
  const why = 'the event has no stored payload to resubmit; resubmit it with an edited payload (50)';
  assert.deepEqual(outcomeParts({ kind: 'resubmit', state: 'cancelled' }, o), [
    { text: '0 failed again', failed: false },
    { text: '53 refused, 50 of them listed', failed: false, why },
    { text: '0 completed', failed: false },
  ]);
  // Every refusal listed: "N refused", as before.
  assert.equal(outcomeParts({ kind: 'resubmit', state: 'cancelled' }, { ...o, refusedListed: 53 })?.[1]?.text, '53 refused');
});
