// The follow-up of a bulk job and the confirmation of the next one, in Chromium (playwright-core) on the built
// console and the embedded stack: a group of three failed events, one of them with no stored payload, is
// resubmitted; in the Jobs drawer the job's line counts that one as "1 refused" with the Manager's reason, not as
// "not reached yet" or still failed. "Resubmit all" on the same group again: the confirmation names the previous job
// (its id, who, when: 2 resubmitted, 0 failed again), and its link cancels this confirmation and opens the drawer on it.
// NIMBUS_CONSOLE_DIR may name another built copy of the console (default: this repository, built on demand).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T } from '@nimbus/sdk/contract';
import { msg } from '../../lib/store/testing/fixtures.ts';
import { CONSOLE_DIR } from '../console.ts';
import { startSeededConsole, type SeededConsole } from '../testing/seededConsole.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const DIR = process.env.NIMBUS_CONSOLE_DIR ?? CONSOLE_DIR;
const EP = 'billingendpoint';
const SESSION = 'S-previous-job';
const CAUSE = 'stock ledger locked';

let ui: SeededConsole | undefined;

before(async () => {
  ui = await startSeededConsole({ database: 'previousjobpage', dir: DIR, demoData: false, env: { NIMBUS_OPERATIONS_RATE: '10' } });
});
after(() => ui?.close());

/** A failed event as the Resolver records it; `payload: false` leaves it nothing to resubmit. */
async function fail(eventId: string, payload = true): Promise<void> {
  const request = msg(T.EventRequest, { endpointId: EP, eventId, sessionId: SESSION, eventTypeId: 'OrderPlaced', ...(payload ? { payload: { eventId } } : {}) });
  const error = msg(T.ErrorResponse, { endpointId: EP, eventId, sessionId: SESSION, parentMessageId: request.messageId, errorType: 'WarehouseError', errorText: `Warehouse API rejected ${eventId}: ${CAUSE}` });
  for (const m of [request, error]) await ui!.stack.store.recordOutcome({ history: { ...m, enqueuedAt: new Date().toISOString() } as never, status: m });
}

test('a refused event reads "1 refused" with its reason; the next confirmation names the previous job and opens it', { timeout: 300_000 }, async () => {
  await fail('wh-0');
  await fail('wh-1');
  await fail('wh-2', false);
  const page = await ui!.open('/failures');
  const row = page.locator('[data-testid="failure-groups"] tbody tr').filter({ hasText: CAUSE });
  await row.waitFor({ timeout: 60_000 });
  await row.getByRole('button', { name: 'Resubmit all' }).click();
  await page.getByRole('button', { name: 'Resubmit 3 events' }).click();

  const drawer = page.locator('[data-testid="jobs-drawer"]');
  const job = drawer.locator('li[data-operation][data-state="completed"]').filter({ hasText: CAUSE });
  await job.waitFor({ timeout: 120_000 });
  const id = await job.getAttribute('data-operation');
  assert.ok(id);
  // The refused event: its own part, with the Manager's reason; not counted as still failed.
  const refused = job.locator('[data-testid="job-outcome"] [data-why]').filter({ hasText: '1 refused' });
  await refused.waitFor({ timeout: 60_000 });
  assert.match((await refused.getAttribute('title')) ?? '', /^the event has no stored payload to resubmit; resubmit it with an edited payload \(1\)$/);
  assert.doesNotMatch((await job.locator('[data-testid="job-outcome"]').textContent()) ?? '', /not reached yet|still failed/);

  // The drawer closed (it lies over the actions column), "Resubmit all" again on what is left of the group.
  await page.locator('[data-testid="jobs-button"]').click();
  await drawer.waitFor({ state: 'detached' });
  await row.getByRole('button', { name: 'Resubmit all' }).click();
  const note = page.locator('[data-testid="previous-job"]');
  await note.waitFor({ timeout: 60_000 });
  assert.match((await page.locator('[data-testid="bulk-count"]').textContent()) ?? '', /Exactly 1 event/);
  assert.match(
    (await note.textContent()) ?? '',
    new RegExp(`^A previous job \\(operation/${id}, by [^,]+, at .+: 2 resubmitted, 0 failed again\\) covered these events\\.`),
  );
  assert.ok(Date.parse((await note.locator('time').getAttribute('datetime')) ?? '') > 0, 'when it started, as a time');
  await note.getByRole('button', { name: 'Cancel this and show that job in the Jobs drawer' }).click();
  await page.locator('[data-testid="bulk-count"]').waitFor({ state: 'detached' });
  await drawer.locator(`li[data-operation="${id}"][data-focused="true"]`).waitFor({ timeout: 30_000 });
  // The confirmation was cancelled: no second job is listed.
  assert.equal(await drawer.locator('li[data-operation]').filter({ hasText: CAUSE }).count(), 1);
  assert.deepEqual(ui!.pageErrors, []);
});
