// Browser test of the Event page after a refused command: the built console on the embedded Service Bus emulator
// and Cosmos server (server/testing/seededConsole.ts), real Chromium. A command answered 409 means the event moved
// on behind the page (another operator resubmitted or skipped it): the page must read the event again at once,
// not show the old state until its timed refresh (every 10 s, components/queries.ts eventQuery) comes round.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Request } from 'playwright-core';
import { startSeededConsole, type SeededConsole } from '../server/testing/seededConsole.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let ui: SeededConsole | undefined;

before(async () => {
  ui = await startSeededConsole();
});

after(() => ui?.close());

/** The Event page's timed refresh (components/queries.ts eventQuery): the next timed read is at least this long after one. */
const TIMED_REFRESH_MS = 10_000;

/**
 * How long the page may take to read the event after the 409. The test is conclusive only when the 409 arrives at
 * least this long before the next timed read could start: a read after the 409 and before then is the page's answer
 * to it, not the timer's.
 */
const PROMPT_READ_MS = 4_000;

/**
 * When a request started, by the browser's own record (epoch ms, the machine's clock, which this process shares):
 * free of the lag with which its event reaches this process.
 */
async function startedAt(r: Request): Promise<number> {
  await r.response(); // timing is complete once the response is in
  return r.timing().startTime;
}

describe('event page after a refused command', () => {
  test('a resubmit refused with 409 reads the event again at once: the page behind the dialog shows the new state', async () => {
    // Not through open(): Chromium logs the refused request as a console error.
    const page = await ui!.browser.newPage();
    const detailsPath = '/api/endpoints/billingendpoint/events/evt-dead-1';
    const resubmitPath = '/api/event/resubmit/billingendpoint/evt-dead-1';
    const isDetailsRead = (r: Request) => r.method() === 'GET' && new URL(r.url()).pathname === detailsPath;
    const status = () => page.getByTestId('event-status').locator('[data-status]').getAttribute('data-status');
    try {
      await page.goto(`${ui!.url}/endpoints/billingendpoint/events/evt-dead-1`);
      await page.locator('html[data-hydrated]').waitFor({ state: 'attached' });
      assert.equal(await status(), 'DeadLettered');

      // Refused for real: while the page's resubmit is held, another operator skips the event (the console claims
      // it: Pending, a SkipRequest sent), then the resubmit goes on to the server, which answers 409.
      let concurrentSkip: number | undefined;
      await page.route(
        (u) => u.pathname === resubmitPath,
        async (route) => {
          try {
            concurrentSkip = (await fetch(`${ui!.url}/api/event/skip/billingendpoint/evt-dead-1`, { method: 'POST' })).status;
          } finally {
            await route.continue();
          }
        },
      );
      // The first read of the event that starts after the 409 has arrived (a listener, not a wait begun after it:
      // the read may start before this test's await returns).
      let conflicted = false;
      /** When this process saw the 409 (at or after it arrived: a late sighting only makes the test stricter). */
      let conflictAt = 0;
      let readAfterConflict!: (r: Request) => void;
      const readAgain = new Promise<Request>((resolve) => (readAfterConflict = resolve));
      page.on('response', (r) => {
        if (new URL(r.url()).pathname === resubmitPath && r.status() === 409) {
          conflicted = true;
          conflictAt = Date.now();
        }
      });
      page.on('request', (r) => {
        if (conflicted && isDetailsRead(r)) readAfterConflict(r);
      });

      // In step with the timed refresh: after one of its reads the next is at least TIMED_REFRESH_MS away, so a read
      // after the 409 that starts before then is the page's answer to it, not the timer's. When this read started is
      // recorded: on a loaded box the 409 may come long after it.
      const timedRead = await page.waitForRequest(isDetailsRead, { timeout: 30_000 });
      const nextTimedRead = (await startedAt(timedRead)) + TIMED_REFRESH_MS;
      const answered = page.waitForResponse((r) => new URL(r.url()).pathname === resubmitPath);
      await page.getByRole('button', { name: 'Resubmit', exact: true }).click();
      const dialog = page.getByRole('dialog');
      await dialog.getByRole('button', { name: 'Resubmit' }).click();
      const answer = await answered;
      assert.equal(concurrentSkip, 200, 'the concurrent skip went through');
      assert.equal(answer.status(), 409);

      const lateBy = conflictAt - (nextTimedRead - PROMPT_READ_MS);
      assert.ok(
        lateBy <= 0,
        `inconclusive: the 409 arrived ${Math.round(lateBy)} ms too late after the timed read (the box is too loaded) ` +
          `to tell the page's read from the timed refresh's`,
      );
      // Waited for without a limit of its own: when it started is what counts (the test's own timeout bounds it).
      const readAt = await startedAt(await readAgain);
      assert.ok(
        readAt < nextTimedRead,
        `the event is read again after the 409 before the next timed refresh could (${Math.round(readAt - conflictAt)} ms after the 409)`,
      );

      // The dialog keeps the error; the page behind it shows the state the other operator left.
      const { detail } = (await answer.json()) as { detail: string };
      await dialog.getByRole('alert').filter({ hasText: detail }).waitFor();
      await page.getByTestId('awaiting').filter({ hasText: 'Skip sent by an operator' }).waitFor();
      assert.equal(await status(), 'Pending');
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await dialog.waitFor({ state: 'detached' });
      // No longer actionable: the page offers no Resubmit that would only be refused again.
      assert.equal(await page.getByRole('button', { name: 'Resubmit', exact: true }).count(), 0);
    } finally {
      await page.unrouteAll({ behavior: 'ignoreErrors' });
      await page.close();
    }
  });
});
