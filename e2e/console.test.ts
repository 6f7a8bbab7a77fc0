// Browser test of the console: the built Next.js app started through startConsole() against the embedded
// Service Bus emulator and the embedded Cosmos server (real clients), a few seeded rows, and Debian's Chromium
// driven by playwright-core. `next build` runs only when the build is missing or older than a source file.
// Screenshots of every page are kept under test-artifacts/console/ (gitignored).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { MessageType, Prop } from '@nimbus/sdk/contract';
import { seedConsoleData, XSS_TEXT } from '../server/testing/seed.ts';
import { startSeededConsole, type SeededConsole } from '../server/testing/seededConsole.ts';
import type { ConsoleTestStack } from '../server/testing/stack.ts';
import { reloadPage } from '../server/testing/pageWait.ts';
import { PlatformDocs } from '../server/heartbeat/platformDocs.ts';
import { lapseReason } from '../server/operations/authority.ts';
import { JobStore } from '../server/operations/jobs.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let ui: SeededConsole | undefined;
let stack: ConsoleTestStack;
let consoleErrors: string[] = [];

const open = (path: string): Promise<Page> => ui!.open(path);
const shot = (page: Page, name: string) => page.screenshot({ path: join(ui!.artifacts, `${name}.png`), fullPage: true });

before(async () => {
  ui = await startSeededConsole({ artifacts: 'console' });
  ({ stack, consoleErrors } = ui);
  // Reported, not asserted: the build time is a figure for the report, not a pass/fail threshold.
  console.log(`# next build: ${ui.build.built ? `built in ${ui.build.seconds.toFixed(1)} s` : 'up to date, reused .next'}`);
});

after(() => ui?.close());

describe('console in Chromium', () => {
  test('the endpoints page lists the catalog with counts; an event shows its payload escaped (XSS inert)', async () => {
    const page = await open('/');
    const billing = page.locator('tr[data-endpoint="billingendpoint"]');
    await billing.getByRole('link', { name: '2 failed' }).waitFor();
    assert.equal(await page.locator('tr[data-endpoint]').count(), stack.catalog.endpoints.length);
    await shot(page, 'endpoints');

    await billing.getByRole('link', { name: 'billingendpoint' }).click();
    await page.waitForURL(/\/endpoints\/billingendpoint$/);
    await page.getByRole('link', { name: 'evt-failed-1' }).click();
    await page.waitForURL(/\/events\/evt-failed-1$/);
    const payload = page.getByTestId('payload');
    await payload.locator('.cm-editor').waitFor();
    const text = await payload.textContent();
    assert.ok(text?.includes(JSON.stringify(XSS_TEXT).slice(1, -1)), 'the payload is shown as text, markup included');
    // Nothing of the payload became markup: no injected element, no script ran.
    assert.equal(await page.locator('img[src="x"]').count(), 0);
    assert.equal(await payload.locator('img, script').count(), 0);
    assert.equal(await page.evaluate(() => (globalThis as unknown as { __xss?: number }).__xss), undefined);
    assert.match((await page.getByTestId('parked-siblings').textContent()) ?? '', /evt-parked-1/);
    assert.match((await page.getByTestId('history').textContent()) ?? '', /EventRequest.*ErrorResponse/s);
    await shot(page, 'event-failed');
    await page.close();
  });

  test('filters live in the URL and survive a reload', async () => {
    const page = await open('/endpoints/billingendpoint');
    await page.getByRole('button', { name: /^Failed/ }).click();
    await page.waitForURL(/status=Failed/);
    await page.getByLabel('Error text contains').fill('card');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL(/q=card/);
    await reloadPage(page);
    await page.getByRole('link', { name: 'evt-failed-1' }).waitFor();
    assert.equal(await page.getByLabel('Error text contains').inputValue(), 'card');
    assert.equal(await page.getByRole('button', { name: /^Failed/ }).getAttribute('aria-pressed'), 'true');
    assert.equal(await page.locator('[data-testid="events-table"] tbody tr').count(), 1);
    await shot(page, 'endpoint-filtered');
    await page.close();
  });

  test('resubmit from the event page goes to the Manager topic once and shows in the audit trail', async () => {
    const page = await open('/endpoints/billingendpoint/events/evt-failed-1');
    await page.getByRole('button', { name: 'Resubmit', exact: true }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('button', { name: 'Resubmit' }).click();
    await page.getByRole('status').filter({ hasText: 'Resubmit sent' }).waitFor();
    await page.getByTestId('audits').filter({ hasText: 'Resubmit' }).waitFor();
    assert.match((await page.getByTestId('audits').textContent()) ?? '', /by anonymous/);
    assert.equal(await page.getByTestId('event-status').locator('[data-status]').getAttribute('data-status'), 'Pending');
    await page.getByTestId('awaiting').filter({ hasText: 'Resubmission sent' }).waitFor();
    await shot(page, 'event-resubmitted');
    await page.close();

    const receiver = await stack.serviceBus.client.acceptSession('billingendpoint', 'billingendpoint', 'ORD-200');
    try {
      const got = await receiver.receiveMessages(5, { maxWaitTimeInMs: 3000 });
      assert.equal(got.length, 1);
      assert.equal(got[0]!.applicationProperties?.[Prop.MessageType], MessageType.ResubmissionRequest);
      assert.equal(got[0]!.applicationProperties?.[Prop.From], 'Manager');
      for (const m of got) await receiver.completeMessage(m);
    } finally {
      await receiver.close();
    }
  });

  test('after Resubmit the actions wait for the event’s new state: buttons and the r/s shortcuts do nothing until it is in', async () => {
    const page = await open('/endpoints/billingendpoint/events/evt-dead-1');
    const detailsPath = '/api/endpoints/billingendpoint/events/evt-dead-1';
    // Every read of the event after the command is held until the test lets it go, to look at the page in between.
    let sent = false;
    let heldReads = 0;
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    page.on('request', (r) => {
      if (r.method() === 'POST' && r.url().includes('/api/event/resubmit/')) sent = true;
    });
    await page.route(
      (u) => u.pathname === detailsPath,
      async (route) => {
        if (sent) {
          heldReads += 1;
          await released;
        }
        await route.continue();
      },
    );
    const status = () => page.getByTestId('event-status').locator('[data-status]').getAttribute('data-status');
    assert.equal(await status(), 'DeadLettered');
    await page.getByRole('button', { name: 'Resubmit', exact: true }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Resubmit' }).click();
    await page.getByRole('status').filter({ hasText: 'Resubmit sent' }).waitFor();
    // The event is read again at once (not at the next 10 s refresh) …
    for (const end = Date.now() + 30_000; heldReads === 0; await new Promise((r) => setTimeout(r, 50))) assert.ok(Date.now() < end, 'the event is read again after the command');
    // … and until that read is in, the old state shows with every action disabled.
    assert.equal(await status(), 'DeadLettered');
    for (const name of ['Resubmit', 'Resubmit with changes', 'Skip']) assert.equal(await page.getByRole('button', { name, exact: true }).isDisabled(), true, `${name} is disabled`);
    await page.evaluate('document.activeElement && document.activeElement.blur()');
    await page.keyboard.press('r');
    await page.keyboard.press('s');
    release();
    await page.getByTestId('awaiting').filter({ hasText: 'Resubmission sent' }).waitFor();
    assert.equal(await status(), 'Pending');
    // Had a shortcut pressed a button, its confirmation would still be open.
    assert.equal(await page.getByRole('dialog').count(), 0, 'no shortcut opened a confirmation');
    assert.equal(await page.getByRole('button', { name: 'Resubmit', exact: true }).count(), 0);
    await page.unrouteAll({ behavior: 'ignoreErrors' });
    await page.close();
  });

  test('multi-select skip states the exact count before acting', async () => {
    const page = await open('/endpoints/erpendpoint?status=Handoff');
    await page.getByLabel('Select evt-handoff-1').check();
    await page.getByLabel('Select evt-handoff-2').check();
    await page.getByRole('button', { name: 'Skip selected' }).click();
    const dialog = page.getByRole('dialog');
    // The checked rows are frozen as a held job: the count is the job's.
    await dialog.locator('[data-testid="bulk-count"]').waitFor();
    assert.match((await dialog.textContent()) ?? '', /Skip 2 events\?.*Exactly 2 events \(the 2 selected on erpendpoint\)/s);
    await shot(page, 'endpoint-bulk-confirm');
    await dialog.getByRole('button', { name: 'Skip 2 events' }).click();
    await page.locator('[data-testid="jobs-drawer"] li[data-state="completed"]').filter({ hasText: '2 / 2' }).first().waitFor({ timeout: 60_000 });
    await page.close();
  });

  // Before, the drawer showed such a job as "cancelled" alone, as if an operator had cancelled it: the reason the
  // runner wrote on it (stoppedReason, server/operations/authority.ts) was not in the list's answer nor on the page.
  test("a job stopped because its starter's role was revoked says why in the Jobs drawer, as text", async () => {
    // The job as the runner leaves it (authority.test.ts holds the runner's side): cancelled, with the reason. The
    // reason names the starter's display name, which comes from the sign-in token: markup in it must stay text.
    const docs = new PlatformDocs({ endpoint: stack.env.NIMBUS_COSMOS_ENDPOINT!, key: stack.env.NIMBUS_COSMOS_KEY!, database: stack.env.NIMBUS_COSMOS_DATABASE! });
    const jobs = new JobStore(docs);
    const reason = lapseReason(XSS_TEXT, 'Operator', ['billingendpoint']);
    let operationId = '';
    try {
      // Held (prepared) first, so the console's runner never picks it up before it is written as stopped.
      const held = await jobs.create({
        kind: 'resubmit',
        selection: { endpointId: 'billingendpoint', eventIds: ['evt-stopped-1'] },
        rows: [{ endpointId: 'billingendpoint', eventId: 'evt-stopped-1' }],
        startedBy: XSS_TEXT,
        startedById: 'user:oid-stopped',
        ratePerSecond: 0,
        hold: true,
        title: 'resubmit: stopped by a revoked grant',
      });
      operationId = held.operationId;
      const { job, etag } = (await jobs.read(operationId))!;
      const at = new Date().toISOString();
      assert.ok(await jobs.save({ ...job, state: 'cancelled', confirmedAt: at, startedAt: at, finishedAt: at, stoppedReason: reason }, etag));
    } finally {
      docs.close();
    }
    const page = await open('/');
    await page.getByTestId('jobs-button').click();
    const item = page.locator(`[data-testid="jobs-drawer"] li[data-operation="${operationId}"]`);
    await item.waitFor();
    assert.equal(await item.getAttribute('data-state'), 'cancelled');
    await item.getByTestId('job-stopped').waitFor();
    assert.equal(await item.getByTestId('job-stopped').textContent(), `Stopped: ${XSS_TEXT} no longer holds Operator on billingendpoint`);
    // Nothing of the name became markup: no injected element, no script ran.
    assert.equal(await page.locator('img[src="x"]').count(), 0);
    assert.equal(await item.locator('img, script').count(), 0);
    assert.equal(await page.evaluate(() => (globalThis as unknown as { __xss?: number }).__xss), undefined);
    await shot(page, 'jobs-stopped');
    await page.close();
  });

  test('handoff completion from the event page', async () => {
    // The skip above claimed both seeded handoffs; a fresh set (ids suffixed) is seeded for this test.
    await seedConsoleData(stack.store, Date.now(), '-b');
    const page = await open('/endpoints/erpendpoint/events/evt-handoff-1-b');
    await page.getByTestId('handoff-countdown').waitFor();
    await shot(page, 'event-handoff');
    await page.getByRole('button', { name: 'Complete handoff' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Complete handoff' }).click();
    await page.getByRole('status').filter({ hasText: 'Handoff completion sent' }).waitFor();
    await page.getByTestId('audits').filter({ hasText: 'CompleteHandoff' }).waitFor();
    await page.close();
  });

  test('typing in the handoff dialogs keeps focus in the field; Escape closes and returns focus', async () => {
    await seedConsoleData(stack.store, Date.now(), '-c');
    const page = await open('/endpoints/erpendpoint/events/evt-handoff-1-c');
    await page.getByTestId('handoff-countdown').waitFor();
    // Evaluated in the page (a string: this program has no DOM types).
    const focused = () =>
      page.evaluate<string>("document.activeElement?.getAttribute('aria-label') ?? document.activeElement?.textContent ?? ''");

    await page.getByRole('button', { name: 'Fail handoff' }).click();
    const reason = page.getByRole('dialog').getByLabel('Failure reason');
    assert.equal(await focused(), 'Failure reason', 'the dialog opens with focus in its only field');
    // No reason yet: nothing to confirm, and the button says what it would do, not "Working…" (nothing is under way).
    const failButton = page.getByRole('dialog').locator('button').last();
    assert.equal(await failButton.textContent(), 'Fail handoff');
    assert.equal(await failButton.isDisabled(), true);
    // Key by key, as a person types: every keystroke re-renders the dialog.
    await page.keyboard.type('DMF rejected 3 lines', { delay: 15 });
    assert.equal(await reason.inputValue(), 'DMF rejected 3 lines');
    assert.equal(await focused(), 'Failure reason');
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    assert.equal(await focused(), 'Fail handoff', 'focus returns to the button that opened the dialog');

    await page.getByRole('button', { name: 'Complete handoff' }).click();
    await page.keyboard.type('done by job 7', { delay: 15 });
    assert.equal(await page.getByRole('dialog').getByLabel('Handoff note').inputValue(), 'done by job 7');
    // Tab cycles inside the modal: the page behind it is inert.
    for (let i = 0; i < 4; i++) await page.keyboard.press('Tab');
    assert.equal(await page.evaluate<boolean>("Boolean(document.activeElement?.closest('dialog'))"), true);
    await page.getByRole('dialog').getByRole('button', { name: 'Complete handoff' }).click();
    await page.getByRole('status').filter({ hasText: 'Handoff completion sent' }).waitFor();
    await page.getByTestId('audits').filter({ hasText: 'done by job 7' }).waitFor();
    await page.close();
  });

  test('a resubmit or skip that fails keeps its dialog open with the error inside; Cancel closes it, the same dialog retries', async () => {
    // A fresh set of rows (ids suffixed): the tests above acted on the seeded ones.
    await seedConsoleData(stack.store, Date.now(), '-f');
    // Not through open(): Chromium logs the refused requests below as console errors, which the last test counts.
    const page = await ui!.browser.newPage();
    const visit = async (eventId: string) => {
      await page.goto(`${ui!.url}/endpoints/billingendpoint/events/${eventId}`);
      await page.locator('html[data-hydrated]').waitFor({ state: 'attached' });
    };
    const dialog = page.getByRole('dialog');
    const alerts = page.locator('main [role=alert]');
    try {
      // Refused for real: while the page's resubmit is held, another operator skips the event (a concurrent claim),
      // then the resubmit goes on to the server, which answers 409.
      await visit('evt-dead-1-f');
      const resubmitPath = '/api/event/resubmit/billingendpoint/evt-dead-1-f';
      let concurrentSkip: number | undefined;
      await page.route(
        (u) => u.pathname === resubmitPath,
        async (route) => {
          try {
            concurrentSkip = (await fetch(`${ui!.url}/api/event/skip/billingendpoint/evt-dead-1-f`, { method: 'POST' })).status;
          } finally {
            await route.continue();
          }
        },
      );
      const answered = page.waitForResponse((r) => new URL(r.url()).pathname === resubmitPath);
      await page.getByRole('button', { name: 'Resubmit', exact: true }).click();
      await dialog.getByRole('button', { name: 'Resubmit' }).click();
      const answer = await answered;
      assert.equal(concurrentSkip, 200, 'the concurrent skip went through');
      assert.equal(answer.status(), 409);
      const { detail } = (await answer.json()) as { detail: string };
      await dialog.getByRole('alert').filter({ hasText: detail }).waitFor();
      assert.equal(await alerts.count(), 1, 'the error is shown once, in the dialog');
      // The event, read again at once, is no longer resubmittable: the dialog says so instead of offering a retry
      // that could only be refused again (a retry after a failure that leaves the event as it was: below).
      await dialog.getByTestId('command-unavailable').filter({ hasText: 'Resubmit is no longer available' }).waitFor();
      assert.ok(await dialog.getByRole('button', { name: 'Resubmit' }).isDisabled(), 'nothing left to retry');
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await dialog.waitFor({ state: 'detached' });
      assert.equal(await alerts.count(), 0, 'the error went with its dialog');
      assert.equal(await page.getByRole('status').filter({ hasText: /sent/ }).count(), 0, 'nothing was reported sent');
      await page.unrouteAll({ behavior: 'ignoreErrors' });

      // The first skip never reaches the console (the connection drops); pressed again in the same dialog, it goes through.
      await visit('evt-failed-1-f');
      const skipPath = '/api/event/skip/billingendpoint/evt-failed-1-f';
      let attempts = 0;
      await page.route(
        (u) => u.pathname === skipPath,
        (route) => (++attempts === 1 ? route.abort('connectionreset') : route.continue()),
      );
      await page.getByRole('button', { name: 'Skip', exact: true }).click();
      await dialog.getByRole('button', { name: 'Skip' }).click();
      await dialog.getByRole('alert').waitFor();
      assert.equal(await alerts.count(), 1, 'the error is shown once, in the dialog');
      await dialog.getByRole('button', { name: 'Skip' }).click();
      await page.getByRole('status').filter({ hasText: 'Skip sent' }).waitFor();
      await dialog.waitFor({ state: 'detached' });
      assert.equal(await alerts.count(), 0, 'a success leaves no error behind');
      assert.equal(attempts, 2);
    } finally {
      await page.unrouteAll({ behavior: 'ignoreErrors' });
      await page.close();
    }
  });

  test('a command whose dialog was closed while it was sent reports a failure on the page; the next dialog opens clean', async () => {
    await seedConsoleData(stack.store, Date.now(), '-h');
    // Not through open(): Chromium logs the dropped request below as a console error, which the last test counts.
    const page = await ui!.browser.newPage();
    const dialog = page.getByRole('dialog');
    try {
      await page.goto(`${ui!.url}/endpoints/billingendpoint/events/evt-failed-1-h`);
      await page.locator('html[data-hydrated]').waitFor({ state: 'attached' });
      // The resubmit is held until its dialog is closed, then its connection drops.
      const resubmitPath = '/api/event/resubmit/billingendpoint/evt-failed-1-h';
      let release!: () => void;
      const closed = new Promise<void>((resolve) => (release = resolve));
      let held!: () => void;
      const reached = new Promise<void>((resolve) => (held = resolve));
      await page.route(
        (u) => u.pathname === resubmitPath,
        async (route) => {
          held();
          await closed;
          await route.abort('connectionreset');
        },
      );
      await page.getByRole('button', { name: 'Resubmit', exact: true }).click();
      await dialog.getByRole('button', { name: 'Resubmit' }).click();
      await reached;
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await dialog.waitFor({ state: 'detached' });
      release();
      // The failure is on the page (no dialog is open to hold it) ...
      const pageAlert = page.locator('main [role=alert]');
      await pageAlert.waitFor();
      assert.equal(await pageAlert.count(), 1);
      // ... and not carried into the next dialog, which opens clean.
      await page.getByRole('button', { name: 'Skip', exact: true }).click();
      await dialog.getByRole('button', { name: 'Skip' }).waitFor();
      assert.equal(await dialog.getByRole('alert').count(), 0, 'the Skip dialog shows no error of the resubmit');
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await dialog.waitFor({ state: 'detached' });
    } finally {
      await page.unrouteAll({ behavior: 'ignoreErrors' });
      await page.close();
    }
  });

  test('a bulk job confirmed again after a failure shows no stale error while it is sent', async () => {
    await seedConsoleData(stack.store, Date.now(), '-i');
    // Not through open(): Chromium logs the dropped request below as a console error, which the last test counts.
    const page = await ui!.browser.newPage();
    try {
      // The first start of the frozen job drops its connection; the second is held while the dialog is looked at.
      let attempts = 0;
      let release!: () => void;
      const looked = new Promise<void>((resolve) => (release = resolve));
      let held!: () => void;
      const reached = new Promise<void>((resolve) => (held = resolve));
      await page.route(
        (u) => /^\/api\/operations\/[^/]+\/resume$/.test(u.pathname),
        async (route) => {
          if (++attempts === 1) return route.abort('connectionreset');
          held();
          await looked;
          await route.continue();
        },
      );
      await page.goto(`${ui!.url}/endpoints/erpendpoint?status=Handoff`);
      await page.locator('html[data-hydrated]').waitFor({ state: 'attached' });
      await page.getByLabel('Select evt-handoff-1-i').check();
      await page.getByRole('button', { name: 'Skip selected' }).click();
      const dialog = page.getByRole('dialog');
      const confirm = dialog.getByRole('button', { name: 'Skip 1 event', exact: true });
      await confirm.click();
      await dialog.getByRole('alert').waitFor();
      await confirm.click();
      await reached;
      const alertsWhileSent = await dialog.getByRole('alert').count();
      release();
      assert.equal(alertsWhileSent, 0, "the first attempt's error is gone while the retry is sent");
      await dialog.waitFor({ state: 'detached' });
    } finally {
      await page.unrouteAll({ behavior: 'ignoreErrors' });
      await page.close();
    }
  });

  test('a bulk job whose selection cannot be frozen says why inside its dialog, as an alert', async () => {
    await seedConsoleData(stack.store, Date.now(), '-g');
    // Not through open(): Chromium logs the refused request as a console error, which the last test counts.
    const page = await ui!.browser.newPage();
    try {
      // Freezing the selection (POST /api/operations) fails as a store outage answers it.
      await page.route(
        (u) => u.pathname === '/api/operations',
        (route) =>
          route.request().method() === 'POST'
            ? route.fulfill({ status: 503, contentType: 'application/json', body: JSON.stringify({ error: 'unavailable', detail: 'injected outage' }) })
            : route.continue(),
      );
      await page.goto(`${ui!.url}/endpoints/erpendpoint?status=Handoff`);
      await page.locator('html[data-hydrated]').waitFor({ state: 'attached' });
      await page.getByLabel('Select evt-handoff-1-g').check();
      await page.getByRole('button', { name: 'Skip selected' }).click();
      const dialog = page.getByRole('dialog');
      await dialog.getByRole('alert').filter({ hasText: 'injected outage' }).waitFor();
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await dialog.waitFor({ state: 'detached' });
    } finally {
      await page.unrouteAll({ behavior: 'ignoreErrors' });
      await page.close();
    }
  });

  test('times say their zone; the UTC/local switch applies everywhere and is remembered', async () => {
    const page = await open('/endpoints/erpendpoint/events/evt-handoff-1-c');
    // The browser in a zone that is neither UTC nor likely the server's: its local times can only come from the
    // browser, so seeing one also says the page has hydrated (the server's HTML always shows UTC). Acting on the
    // switch before hydration would be lost, and local time equal to UTC would prove nothing.
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Emulation.setTimezoneOverride', { timezoneId: 'Asia/Kathmandu' });
    await reloadPage(page);
    const times = page.getByTestId('audits').locator('time');
    const localShown = times.filter({ hasText: /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} GMT\+5:45$/ }).first();
    const utcShown = page.getByTestId('audits').locator('time[title$="GMT+5:45"]').filter({ hasText: / UTC$/ }).first();

    // Which wait timed out, in the failure: the three below look alike in a stack trace.
    const seen = (what: string, locator: typeof times) =>
      locator.waitFor().catch(async (err: Error) => {
        const first = page.locator('main time').first();
        const text = await first.textContent({ timeout: 1_000 }).catch(() => null);
        const title = await first.getAttribute('title', { timeout: 1_000 }).catch(() => null);
        throw new Error(`${what}: not seen; the first time reads "${text}" titled "${title}" (${err.message.split('\n')[0]})`);
      });
    await seen('local time after hydration', localShown);
    assert.match((await localShown.getAttribute('title')) ?? '', / UTC$/, 'UTC on hover');
    assert.equal(await times.filter({ hasText: / UTC$/ }).count(), 0, 'every time on the page is local');
    const switcher = page.getByRole('button', { name: 'Local time', exact: true });
    assert.equal(await switcher.getAttribute('aria-pressed'), 'false');
    await switcher.click();
    await seen('UTC after the switch', utcShown);
    assert.equal(await times.filter({ hasText: /GMT\+5:45$/ }).count(), 0, 'every time on the page switched');

    // Remembered: after a reload the page hydrates straight into UTC, its hover text the browser's local time.
    await reloadPage(page);
    await seen('UTC after a reload', utcShown);
    assert.equal(await page.getByRole('button', { name: 'UTC', exact: true }).getAttribute('aria-pressed'), 'true');
    await page.getByRole('button', { name: 'UTC', exact: true }).click();
    await seen('local time after switching back', localShown);
    // Relative times ("3m 5s ago", the Endpoints page's last activity) follow the same rule on hover.
    await page.goto(ui!.url + '/');
    await seen('an "ago" with local time on hover', page.locator('main time[title$="GMT+5:45"]').filter({ hasText: / ago$/ }).first());
    await cdp.detach();
    await page.close();
  });

  test('the Monitor and Flow pages render with data', async () => {
    const monitor = await open('/monitor');
    await monitor.locator('[data-band="Failing"]').getByText('billingendpoint').waitFor();
    assert.match((await monitor.getByTestId('kpis').textContent()) ?? '', /Failed/);
    await shot(monitor, 'monitor');
    await monitor.close();
    const flow = await open('/flow?period=60');
    await flow.locator('[data-consumer="billingendpoint"]').first().waitFor();
    await flow.getByLabel('Event type').selectOption('OrderCancelled');
    await flow.waitForURL(/eventTypeId=OrderCancelled/);
    await flow.getByTestId('flow').getByText('OrderCancelled', { exact: true }).waitFor();
    assert.equal(await flow.getByTestId('flow').getByText('OrderPlaced', { exact: true }).count(), 0);
    await shot(flow, 'flow');
    await flow.close();
  });

  test('the header search finds a session and opens an exact event id', async () => {
    const page = await open('/');
    await page.getByLabel('Search by event id or session id').fill('ORD-2');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/search\?q=ORD-2/);
    await page.getByRole('link', { name: 'evt-parked-1' }).first().waitFor();
    await shot(page, 'search');
    await page.getByLabel('Search by event id or session id').fill('evt-completed-1');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/events\/evt-completed-1$/);
    await page.getByTestId('event-id').waitFor();
    await page.close();
  });

  test('no page logged a console error', () => {
    assert.deepEqual(consoleErrors, []);
  });
});
