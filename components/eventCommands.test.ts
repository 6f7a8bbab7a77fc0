// Which commands the Event page offers for an event's state, and what an open dialog says once its command is gone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { commandUnavailableReason, eventChangedText, offersCommand, type EventCommand } from './eventCommands.ts';

const ALL: EventCommand[] = ['resubmit', 'edit', 'skip', 'complete', 'fail'];
const state = (status: string, subStatus: string | null = null, messageType: string | null = null) => ({ status, subStatus, messageType });

test('a failed, dead-lettered or unsupported event offers resubmit and skip, not handoff settlement', () => {
  for (const status of ['Failed', 'DeadLettered', 'Unsupported']) {
    for (const c of ['resubmit', 'edit', 'skip'] as const) assert.equal(commandUnavailableReason(c, state(status)), null, `${status} ${c}`);
    for (const c of ['complete', 'fail'] as const) assert.equal(offersCommand(c, state(status)), false, `${status} ${c}`);
  }
});

test('a handoff offers every command', () => {
  for (const c of ALL) assert.equal(commandUnavailableReason(c, state('Pending', 'Handoff', 'PendingHandoffResponse')), null, c);
});

test('an event that moved on names its real state and the command that is gone', () => {
  assert.equal(commandUnavailableReason('resubmit', state('Completed', null, 'ResolutionResponse')), 'This event is now Completed — Resubmit is no longer available.');
  assert.equal(commandUnavailableReason('skip', state('Skipped', null, 'SkipResponse')), 'This event is now Skipped — Skip is no longer available.');
  assert.equal(
    commandUnavailableReason('edit', state('Pending', null, 'SkipRequest')),
    'This event is now Pending (Skip sent by an operator) — Resubmit with changes is no longer available.',
  );
  assert.equal(
    commandUnavailableReason('complete', state('Pending', null, 'HandoffCompletedRequest')),
    'This event is now Pending (Handoff completion sent by an operator) — Complete handoff is no longer available.',
  );
  // A failed handoff can be resubmitted or skipped, no longer settled.
  assert.equal(commandUnavailableReason('fail', state('Failed', null, 'HandoffFailedRequest')), 'This event is now Failed — Fail handoff is no longer available.');
  assert.equal(commandUnavailableReason('resubmit', state('Deferred', 'Blocked', 'DeferralResponse')), 'This event is now Deferred · Blocked — Resubmit is no longer available.');
});

test('after a "changed" refusal the dialog says what the event now is and what a second confirm acts on', () => {
  assert.equal(
    eventChangedText('edit', { status: 'Failed', subStatus: null, messageType: 'ErrorResponse', messageId: 'm-2' }),
    'The event changed since this dialog opened: it is now Failed, last message ErrorResponse m-2. Nothing was sent; Resubmit edited payload again acts on the event as it is now.',
  );
  assert.match(eventChangedText('skip', { status: 'DeadLettered', subStatus: null, messageType: null, messageId: 'm-3' }), /now DeadLettered, last message m-3\. Nothing was sent; Skip again/);
});
