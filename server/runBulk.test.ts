// runBulk's per-event results without a stack: the Manager's refusals reach it as errors, and in the built console
// those come from another bundled copy of http.ts (not instances of the HttpError runBulk imports). Each refusal
// must still read as the 404/409 a single click gets, and an unknown failure as an internal error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runBulk } from './api.ts';
import type { ConsoleContext } from './context.ts';
import { HttpErrorCopy } from './testing/httpErrorCopy.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

test('bulk results carry the refusal of each event even when its error comes from another copy of http.ts', async () => {
  const ctx = {
    store: { listEventSessions: async () => new Map<string, string[]>() },
    manager: {
      executeMany: async () => [
        { ok: false, error: new HttpErrorCopy(409, 'conflict', 'skip is not possible for an event that is Completed') },
        { ok: false, error: new HttpErrorCopy(404, 'not found', 'event nonexist2 is not known') },
        { ok: true, value: { outcome: 'sent', messageId: 'm-1' } },
        { ok: false, error: new TypeError('socket closed') },
      ],
    },
  } as unknown as ConsoleContext;
  const r = await runBulk(ctx, 'billingendpoint', ['evt-completed-1', 'nonexist2', 'evt-failed-1', 'evt-x'], { kind: 'skip' }, 'tester');
  assert.deepEqual(r.results, [
    { eventId: 'evt-completed-1', outcome: 'error', status: 409, error: 'conflict', detail: 'skip is not possible for an event that is Completed' },
    { eventId: 'nonexist2', outcome: 'error', status: 404, error: 'not found', detail: 'event nonexist2 is not known' },
    { eventId: 'evt-failed-1', outcome: 'sent', messageId: 'm-1' },
    { eventId: 'evt-x', outcome: 'error', status: 500, error: 'internal error', detail: 'the command failed' },
  ]);
  assert.deepEqual([r.requested, r.sent, r.failed], [4, 1, 3]);
});
