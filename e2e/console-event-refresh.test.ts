// Browser test of the Event page after a refused command: the built console on the embedded Service Bus emulator
// and Cosmos server (server/testing/seededConsole.ts), real Chromium. A command answered 409 means the event moved
// on behind the page (another operator resubmitted or skipped it): the page must read the event again at once,
// not show the old state until its timed refresh (every 10 s, components/queries.ts eventQuery) comes round. The
// dialog then stays open with what the operator typed, but when the event no longer offers the command its confirm
// button is disabled and the dialog says why; after a failure that left the command on offer (a 5xx) it stays usable.
// A refusal because the event changed since the dialog opened (409 "changed": another operator's resubmission failed
// again under a new message) says what the event now is, and a second confirm acts on that state.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page, Request } from 'playwright-core';
import { MessageType, Prop } from '@nimbus/sdk/contract';
import type { StatusWrite } from '../lib/store/index.ts';
import { msg } from '../lib/store/testing/fixtures.ts';
import { seedEvent, type SeededEvent } from '../server/testing/seed.ts';
import { drainSession, jsonBody } from '../server/testing/sessionWire.ts';
import { startSeededConsole, type SeededConsole } from '../server/testing/seededConsole.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let ui: SeededConsole | undefined;
/** A Failed order of its own, for the test of a refusal because the event changed behind the dialog. */
let failedAgain: SeededEvent | undefined;

before(async () => {
  ui = await startSeededConsole({
    // One more dead-lettered order, for a test of its own (the demo's evt-dead-1 is skipped by the first test).
    prepare: async ({ stack, base }) => {
      await seedEvent(stack.store, base, { endpointId: 'billingendpoint', eventId: 'evt-dead-2', sessionId: 'ORD-301', eventTypeId: 'OrderPlaced', payload: { orderId: 'ORD-301' } }, MessageType.ErrorResponse, {
        deadLetterReason: 'PayloadDeserializationError',
        errorText: 'malformed payload',
      });
      failedAgain = await seedEvent(stack.store, base, { endpointId: 'billingendpoint', eventId: 'evt-failed-again', sessionId: 'ORD-302', eventTypeId: 'OrderPlaced', payload: { orderId: 'ORD-302' } }, MessageType.ErrorResponse, {
        errorType: 'LedgerTimeout',
        errorText: 'ledger did not answer',
      });
    },
  });
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

  test('an edited resubmit refused because someone skipped the event keeps the edit, and the dialog says why it cannot be sent', async () => {
    const page = await ui!.browser.newPage();
    const resubmitPath = '/api/event/resubmit/billingendpoint/evt-failed-1';
    const detailsPath = '/api/endpoints/billingendpoint/events/evt-failed-1';
    try {
      await page.goto(`${ui!.url}/endpoints/billingendpoint/events/evt-failed-1`);
      await page.locator('html[data-hydrated]').waitFor({ state: 'attached' });
      // While the page's resubmit is held, another operator skips the event. (Another operator's plain resubmit
      // would be refused with 409 too - a repeat asking for a different payload, server/manager/repeatConflict.ts.)
      const concurrentSkip = actConcurrently(page, resubmitPath, () => fetch(`${ui!.url}/api/event/skip/billingendpoint/evt-failed-1`, { method: 'POST' }));

      await page.getByRole('button', { name: 'Resubmit with changes' }).click();
      const dialog = page.getByRole('dialog');
      const editor = dialog.getByLabel('Edited payload (JSON)');
      await editor.waitFor();
      await editor.fill(JSON.stringify(EDITED_ORDER, null, 2));
      await dialog.getByTestId('edit-problems').getByText('Valid JSON', { exact: true }).waitFor();
      const send = dialog.getByRole('button', { name: 'Resubmit edited payload' });
      const answer = await refusedAndReadAgain(page, resubmitPath, detailsPath, concurrentSkip, () => send.click());

      // The page behind has the state the other operator left; the dialog says so and offers nothing to send.
      const unavailable = dialog.getByTestId('command-unavailable');
      await unavailable.waitFor();
      assert.equal(await unavailable.textContent(), 'This event is now Pending (Skip sent by an operator) — Resubmit with changes is no longer available.');
      assert.equal(await send.isDisabled(), true, 'the edited payload can no longer be sent');
      // Focus was on the button just disabled: it moves to Cancel, the one thing left to do, not to nowhere.
      assert.equal(await focusedText(page), 'Cancel');
      // Still there: the refusal's reason and the operator's edit, as typed (to copy, or to compare).
      const { detail } = (await answer.json()) as { detail: string };
      await dialog.getByRole('alert').filter({ hasText: detail }).waitFor();
      assert.match((await editor.textContent()) ?? '', /"fixedBy": "operator"/);

      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await dialog.waitFor({ state: 'detached' });
      // The button that opened it is gone (the event is no longer actionable): focus lands on the event, not nowhere.
      assert.equal(await focusedTestId(page), 'event-id');
    } finally {
      await page.unrouteAll({ behavior: 'ignoreErrors' });
      await page.close();
    }
  });

  test('an edit under way while someone else resubmits their own payload is kept, and the dialog says the resubmit is gone', async () => {
    const page = await ui!.browser.newPage();
    try {
      await page.goto(`${ui!.url}/endpoints/billingendpoint/events/evt-dead-2`);
      await page.locator('html[data-hydrated]').waitFor({ state: 'attached' });
      await page.getByRole('button', { name: 'Resubmit with changes' }).click();
      const dialog = page.getByRole('dialog');
      const editor = dialog.getByLabel('Edited payload (JSON)');
      await editor.waitFor();
      await editor.fill(JSON.stringify({ ...EDITED_ORDER, orderId: 'ORD-301' }, null, 2));
      await dialog.getByTestId('edit-problems').getByText('Valid JSON', { exact: true }).waitFor();

      // Another operator resubmits the event with a payload of their own: the stored payload changes, and the page
      // reads it at its next timed refresh, behind the open dialog.
      const theirs = { ...EDITED_ORDER, orderId: 'ORD-301', fixedBy: 'another operator' };
      const res = await fetch(`${ui!.url}/api/event/resubmit/billingendpoint/evt-dead-2`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ payload: theirs }),
      });
      assert.equal(res.status, 200, await res.text());
      await page.getByTestId('payload').filter({ hasText: 'another operator' }).waitFor({ state: 'attached', timeout: 60_000 });

      const unavailable = dialog.getByTestId('command-unavailable');
      await unavailable.waitFor();
      assert.equal(await unavailable.textContent(), 'This event is now Pending (Resubmission sent by an operator) — Resubmit with changes is no longer available.');
      assert.equal(await dialog.getByRole('button', { name: 'Resubmit edited payload' }).isDisabled(), true);
      // The editor was not made again from the new stored payload: the operator's edit is as typed.
      const text = (await editor.textContent()) ?? '';
      assert.match(text, /"fixedBy": "operator"/);
      assert.doesNotMatch(text, /another operator/);
      await page.keyboard.press('Escape');
      await dialog.waitFor({ state: 'detached' });
    } finally {
      await page.close();
    }
  });

  test('a handoff completion refused because someone failed the handoff keeps the note, and the dialog says why', async () => {
    const page = await ui!.browser.newPage();
    const handoffMessageId = ui!.demo!.handoff.lastMessageId;
    const completePath = `/api/event/handoff/complete/erpendpoint/evt-handoff-1/${handoffMessageId}`;
    const detailsPath = '/api/endpoints/erpendpoint/events/evt-handoff-1';
    try {
      await page.goto(`${ui!.url}/endpoints/erpendpoint/events/evt-handoff-1`);
      await page.locator('html[data-hydrated]').waitFor({ state: 'attached' });
      // While the page's completion is held, another operator fails the handoff.
      const concurrentFail = actConcurrently(page, completePath, () =>
        fetch(`${ui!.url}/api/event/handoff/fail/erpendpoint/evt-handoff-1/${handoffMessageId}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ errorText: 'ledger import rejected' }),
        }),
      );

      await page.getByRole('button', { name: 'Complete handoff' }).click();
      const dialog = page.getByRole('dialog');
      const note = dialog.getByLabel('Handoff note');
      await note.fill('ledger import checked by hand');
      const confirm = dialog.getByRole('button', { name: 'Complete handoff' });
      await refusedAndReadAgain(page, completePath, detailsPath, concurrentFail, () => confirm.click());

      const unavailable = dialog.getByTestId('command-unavailable');
      await unavailable.waitFor();
      assert.equal(await unavailable.textContent(), 'This event is now Pending (Handoff failure sent by an operator) — Complete handoff is no longer available.');
      assert.equal(await confirm.isDisabled(), true);
      assert.equal(await note.inputValue(), 'ledger import checked by hand', 'the note is kept');

      await page.keyboard.press('Escape');
      await dialog.waitFor({ state: 'detached' });
      assert.equal(await focusedTestId(page), 'event-id');
    } finally {
      await page.unrouteAll({ behavior: 'ignoreErrors' });
      await page.close();
    }
  });

  test('a skip that fails with 503 leaves the event skippable: the dialog stays usable and the retry goes through', async () => {
    const page = await ui!.browser.newPage();
    const skipPath = '/api/event/skip/erpendpoint/evt-handoff-2';
    const detailsPath = '/api/endpoints/erpendpoint/events/evt-handoff-2';
    try {
      await page.goto(`${ui!.url}/endpoints/erpendpoint/events/evt-handoff-2`);
      await page.locator('html[data-hydrated]').waitFor({ state: 'attached' });
      // The first skip fails as a broker outage would (the server undoes its claim); the retry reaches the server.
      let attempts = 0;
      await page.route(
        (u) => u.pathname === skipPath,
        (route) =>
          ++attempts === 1
            ? route.fulfill({ status: 503, contentType: 'application/json', body: JSON.stringify({ error: 'unavailable', detail: 'the broker did not answer; try again' }) })
            : route.continue(),
      );

      await page.getByRole('button', { name: 'Skip', exact: true }).click();
      const dialog = page.getByRole('dialog');
      const confirm = dialog.getByRole('button', { name: 'Skip' });
      await refusedAndReadAgain(page, skipPath, detailsPath, Promise.resolve(200), () => confirm.click());
      await dialog.getByRole('alert').filter({ hasText: 'the broker did not answer' }).waitFor();
      // The event read again still offers Skip: nothing says otherwise, and the retry is at hand.
      assert.equal(await dialog.getByTestId('command-unavailable').count(), 0);
      assert.equal(await confirm.isDisabled(), false);
      await confirm.click();
      await page.getByRole('status').filter({ hasText: 'Skip sent' }).waitFor();
      await dialog.waitFor({ state: 'detached' });
      assert.equal(attempts, 2);
    } finally {
      await page.unrouteAll({ behavior: 'ignoreErrors' });
      await page.close();
    }
  });
});

describe('event page after a refusal because the event changed since the dialog opened', () => {
  test('an edited resubmit refused because another resubmission failed again says what the event now is, keeps the edit, and the second confirm sends it', async () => {
    const page = await ui!.browser.newPage();
    const ev = failedAgain!;
    const resubmitPath = `/api/event/resubmit/${ev.endpointId}/${ev.eventId}`;
    const sentBodies: unknown[] = [];
    page.on('request', (r) => {
      if (r.method() === 'POST' && new URL(r.url()).pathname === resubmitPath) sentBodies.push(r.postDataJSON());
    });
    try {
      await page.goto(`${ui!.url}/endpoints/${ev.endpointId}/events/${ev.eventId}`);
      await page.locator('html[data-hydrated]').waitFor({ state: 'attached' });
      await page.getByRole('button', { name: 'Resubmit with changes' }).click();
      const dialog = page.getByRole('dialog');
      const editor = dialog.getByLabel('Edited payload (JSON)');
      await editor.waitFor();
      await editor.fill(JSON.stringify({ ...EDITED_ORDER, orderId: 'ORD-302' }, null, 2));
      await dialog.getByTestId('edit-problems').getByText('Valid JSON', { exact: true }).waitFor();

      // Behind the dialog, another operator resubmits the event (a plain resubmit, through the console's API) and
      // the resubmission fails again: the Resolver records the command and the new failure (as it writes them), so
      // the event is Failed again - it still offers Resubmit with changes - under a new last message.
      const theirs = await fetch(`${ui!.url}${resubmitPath}`, { method: 'POST' });
      assert.equal(theirs.status, 200, await theirs.clone().text());
      const command = ((await theirs.json()) as { messageId: string }).messageId;
      const record = (m: StatusWrite) => ui!.stack.store.recordOutcome({ history: { ...m, enqueuedAt: m.enqueuedAt ?? new Date().toISOString() }, status: m });
      const base = { endpointId: ev.endpointId, eventId: ev.eventId, sessionId: ev.sessionId };
      await record(msg(MessageType.ResubmissionRequest, { ...base, messageId: command, parentMessageId: ev.lastMessageId, payload: ev.payload, from: 'Manager', to: ev.endpointId }));
      const again = msg(MessageType.ErrorResponse, { ...base, parentMessageId: command, errorType: 'LedgerTimeout', errorText: 'ledger did not answer again', from: ev.endpointId, to: 'Resolver' });
      await record(again);

      // The first confirm carries the message the dialog opened on: refused, nothing sent.
      const send = dialog.getByRole('button', { name: 'Resubmit edited payload' });
      const refused = page.waitForResponse((r) => new URL(r.url()).pathname === resubmitPath, { timeout: 60_000 });
      await send.click();
      const first = await refused;
      assert.equal(first.status(), 409);
      const answer = (await first.json()) as { detail: string; code?: string };
      await dialog.getByRole('alert').filter({ hasText: answer.detail }).waitFor();
      // Once the event has been read again, the dialog says what it now is, and the edit is as typed.
      const changed = dialog.getByTestId('event-changed');
      await changed.waitFor();
      assert.equal(
        await changed.textContent(),
        `The event changed since this dialog opened: it is now Failed, last message ErrorResponse ${again.messageId}. Nothing was sent; Resubmit edited payload again acts on the event as it is now.`,
      );
      assert.match((await editor.textContent()) ?? '', /"fixedBy": "operator"/);
      assert.equal(await dialog.getByTestId('command-unavailable').count(), 0, 'the event still offers the command');

      // The second, deliberate confirm acts on the new state: sent, with the edited payload.
      const sent = page.waitForResponse((r) => new URL(r.url()).pathname === resubmitPath, { timeout: 60_000 });
      await send.click();
      const second = await sent;
      assert.equal(second.status(), 200, await second.text());
      assert.equal(((await second.json()) as { outcome: string }).outcome, 'sent');
      await dialog.waitFor({ state: 'detached' });
      await page.getByRole('status').filter({ hasText: 'Edited resubmission sent' }).waitFor();

      assert.equal(answer.code, 'changed', 'the refusal names itself by a stable code');
      assert.deepEqual(
        sentBodies.map((b) => (b as { lastMessageId?: string }).lastMessageId),
        [ev.lastMessageId, again.messageId],
        'the first confirm carried the message the dialog opened on, the second the one it then showed',
      );
      // On the wire: the other operator's resubmission, then this one with the operator's edit.
      const wire = (await drainSession(ui!.stack.serviceBus.client, ev.endpointId, ev.sessionId)).map((m) => {
        const body = jsonBody(m) as { EventContent?: { EventJson?: string } | null };
        return { type: m.applicationProperties?.[Prop.MessageType], payload: JSON.parse(body.EventContent?.EventJson ?? 'null') as { fixedBy?: string } | null };
      });
      assert.deepEqual(wire.map((w) => w.type), [MessageType.ResubmissionRequest, MessageType.ResubmissionRequest]);
      assert.equal(wire[0]!.payload?.fixedBy, undefined, "the other operator's resubmission of the stored payload");
      assert.equal(wire[1]!.payload?.fixedBy, 'operator', 'the edited payload went out');
    } finally {
      await page.close();
    }
  });
});

/** A payload of evt-failed-1 that passes the OrderPlaced schema of the demo catalog, marked as the operator's edit. */
const EDITED_ORDER = { orderId: 'ORD-200', customerId: 'CUST-9', lines: [{ sku: 'MUG-BLUE', quantity: 2, unitPrice: 9.5 }], total: 19, currency: 'EUR', fixedBy: 'operator' };

/**
 * Holds the page's command to `commandPath` until another operator's `act` (a request from this process, which the
 * page's routes do not see) is answered: the command then reaches the server after it, and is refused for real.
 * Resolves to the status `act` was answered with.
 */
function actConcurrently(page: Page, commandPath: string, act: () => Promise<Response>): Promise<number> {
  return new Promise((resolve, reject) => {
    void page.route(
      (u) => u.pathname === commandPath,
      async (route) => {
        try {
          resolve((await act()).status);
        } catch (err) {
          reject(err instanceof Error ? err : new Error(String(err)));
        } finally {
          await route.continue();
        }
      },
    );
  });
}

/**
 * Presses the command's confirm button and waits for the other operator's command (`concurrent`, its status), the
 * command's refusal and then for the page's read of the
 * event that started after it (commandFailure.ts): what the dialog shows next is about the event as read again.
 */
async function refusedAndReadAgain(page: Page, commandPath: string, detailsPath: string, concurrent: Promise<number>, press: () => Promise<void>) {
  let refused = false;
  let readStarted!: (r: Request) => void;
  const readAgain = new Promise<Request>((resolve) => (readStarted = resolve));
  // Listeners, not waits begun after the refusal: the read may start before this function's await returns.
  page.on('response', (r) => {
    if (new URL(r.url()).pathname === commandPath && r.status() >= 400) refused = true;
  });
  page.on('request', (r) => {
    if (refused && r.method() === 'GET' && new URL(r.url()).pathname === detailsPath) readStarted(r);
  });
  const answered = page.waitForResponse((r) => new URL(r.url()).pathname === commandPath, { timeout: 60_000 });
  await press();
  const answer = await answered;
  assert.equal(await concurrent, 200, "the other operator's command went through");
  assert.ok(answer.status() >= 400, `the command was refused (${answer.status()})`);
  await (await readAgain).response();
  return answer;
}

/** The data-testid of the focused element (its tag name when it has none: BODY when focus went nowhere). */
function focusedTestId(page: Page): Promise<string | null> {
  type El = { getAttribute(name: string): string | null; tagName: string };
  return page.evaluate(() => {
    const el = (globalThis as unknown as { document: { activeElement: El | null } }).document.activeElement;
    return el ? (el.getAttribute('data-testid') ?? el.tagName) : null;
  });
}

/** The text of the focused element. */
function focusedText(page: Page): Promise<string | null> {
  return page.evaluate(() => (globalThis as unknown as { document: { activeElement: { textContent: string | null } | null } }).document.activeElement?.textContent ?? null);
}
