// Which command failures make the Event page read the event again at once (components/EventView.tsx).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from './api.ts';
import { commandFailureMayLeaveStaleEvent, isChangedSinceSeen } from './commandFailure.ts';

const refused = (status: number) => new ApiError(status, 'refused', 'detail');

test('a conflict, a vanished event, a server failure or no answer at all may leave the shown event stale', () => {
  for (const status of [404, 409, 410, 412, 500, 502, 503, 504]) assert.equal(commandFailureMayLeaveStaleEvent(refused(status)), true, String(status));
  assert.equal(commandFailureMayLeaveStaleEvent(new TypeError('Failed to fetch')), true, 'a dropped request may have reached the server');
});

test('a refusal of the request itself leaves the shown event as current as it was', () => {
  for (const status of [400, 401, 403, 413, 415, 422, 429]) assert.equal(commandFailureMayLeaveStaleEvent(refused(status)), false, String(status));
});

test('only a 409 with the code "changed" is the refusal of a click made on an event that has moved on since', () => {
  assert.equal(isChangedSinceSeen(new ApiError(409, 'conflict', 'the event has changed since you opened it …', 'changed')), true);
  // Other conflicts (a state that does not allow the command, a claim under way) and other codes are not.
  assert.equal(isChangedSinceSeen(new ApiError(409, 'conflict', 'skip is not possible for an event that is Completed')), false);
  assert.equal(isChangedSinceSeen(new ApiError(400, 'bad request', 'x', 'changed')), false);
  assert.equal(isChangedSinceSeen(new TypeError('Failed to fetch')), false);
});
