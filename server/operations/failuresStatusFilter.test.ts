// The Failures page's status filter in Chromium (playwright-core) on the built console and the embedded stack: one
// cause with Failed and DeadLettered rows and another with Failed rows alone. Picking "DeadLettered" in the labelled
// Status box (by keyboard) puts it in the URL, narrows the list to the dead-lettered rows (the other cause goes, the
// count drops), and the group's Export link, "Skip all" and its endpoint link carry it: the export is of those rows,
// the confirmation counts them, and the endpoint link opens the Endpoint page on them (it opened all the group's
// rows there, 5 for a row that said 2). A reload keeps the filter.
// NIMBUS_CONSOLE_DIR may name another built copy of the console (default: this repository, built on demand).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { MessageType as T } from '@nimbus/sdk/contract';
import { msg } from '../../lib/store/testing/fixtures.ts';
import { CONSOLE_DIR } from '../console.ts';
import { startSeededConsole, type SeededConsole } from '../testing/seededConsole.ts';
import { reloadPage } from '../testing/pageWait.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const DIR = process.env.NIMBUS_CONSOLE_DIR ?? CONSOLE_DIR;
const EP = 'billingendpoint';

let ui: SeededConsole | undefined;

/** An event that failed with this cause; with `deadLetterReason` the row is DeadLettered instead of Failed. */
async function fail(eventId: string, errorType: string, errorText: string, deadLetterReason?: string) {
  const { stack } = ui!;
  const sessionId = `S-${eventId}`;
  const request = msg(T.EventRequest, { endpointId: EP, eventId, sessionId, eventTypeId: 'OrderPlaced', payload: { eventId } });
  const error = msg(T.ErrorResponse, {
    endpointId: EP,
    eventId,
    sessionId,
    parentMessageId: request.messageId,
    errorType,
    errorText,
    ...(deadLetterReason ? { deadLetterReason, deadLetterErrorDescription: 'delivery attempts exhausted' } : {}),
  });
  for (const m of [request, error]) await stack.store.recordOutcome({ history: { ...m, enqueuedAt: new Date().toISOString() } as never, status: m });
}

before(async () => {
  ui = await startSeededConsole({ database: 'failuresstatus', dir: DIR, demoData: false });
});

after(() => ui?.close());

const exportHref = (page: Page, cause: string) =>
  page.locator('[data-testid="failure-groups"] tbody tr').filter({ hasText: cause }).getByRole('link', { name: 'Export CSV' }).getAttribute('href');

describe('Failures page status filter', () => {
  test('picking a status narrows the list, and the Export link and Skip all carry it', { timeout: 300_000 }, async () => {
    for (let i = 0; i < 3; i++) await fail(`tax-f-${i}`, 'TaxEngineError', 'tax engine timed out');
    for (let i = 0; i < 2; i++) await fail(`tax-d-${i}`, 'TaxEngineError', 'tax engine timed out', 'MaxDeliveryCountExceeded');
    for (let i = 0; i < 4; i++) await fail(`crm-f-${i}`, 'CrmUnavailableError', 'CRM API answered 503');

    const page = await ui!.open('/failures');
    const rows = page.locator('[data-testid="failure-groups"] tbody tr');
    const tax = rows.filter({ hasText: 'tax engine timed out' });
    await rows.nth(1).waitFor({ timeout: 60_000 });
    assert.equal((await tax.locator('[data-testid="group-count"]').textContent())?.trim(), '5');
    assert.doesNotMatch((await exportHref(page, 'tax engine timed out')) ?? '', /status=/, 'no status: the export has none');

    // The box is found by its label and taken by keyboard: focused, a typed "D" picks DeadLettered.
    const status = page.getByLabel('Status');
    await status.focus();
    await page.keyboard.press('D');
    await page.waitForURL(/[?&]status=DeadLettered(&|$)/);
    // The answer for the status is in when the group counts its dead-lettered rows alone (the list is empty meanwhile).
    await tax.locator('[data-testid="group-count"]').filter({ hasText: /^\s*2\s*$/ }).waitFor({ timeout: 60_000 });
    assert.equal(await rows.count(), 1, 'only the cause with dead-lettered rows');
    const href = (await exportHref(page, 'tax engine timed out')) ?? '';
    assert.match(href, /[?&]status=DeadLettered(&|$)/, href);

    // The export is of the rows counted: the two dead-lettered ones.
    const csv = await page.evaluate(async (url) => (await fetch(url)).text(), href);
    const ids = csv.split('\r\n').filter((l) => l.includes('tax-')).map((l) => l.split(',')[1]).sort();
    assert.deepEqual(ids, ['tax-d-0', 'tax-d-1']);

    // "Skip all" counts what the page shows; cancelled, nothing is done.
    await tax.getByRole('button', { name: 'Skip all' }).click();
    const count = page.locator('[data-testid="bulk-count"]');
    await count.waitFor();
    assert.match((await count.textContent()) ?? '', /Exactly 2 events/);
    await page.getByRole('button', { name: 'Cancel' }).click();
    await count.waitFor({ state: 'detached' });

    // The state is the URL: a reload keeps it, and the box shows it.
    await reloadPage(page);
    await page.locator('html[data-hydrated]').waitFor({ state: 'attached' });
    assert.equal(await page.getByLabel('Status').inputValue(), 'DeadLettered');
    await tax.locator('[data-testid="group-count"]').filter({ hasText: /^\s*2\s*$/ }).waitFor({ timeout: 60_000 });
    assert.equal(await rows.count(), 1);

    // The row's endpoint link, "billingendpoint (2)", opens the Endpoint page on the two rows it counts.
    const endpointLink = tax.getByRole('link', { name: EP, exact: true });
    const endpointHref = (await endpointLink.getAttribute('href')) ?? '';
    assert.match(endpointHref, /[?&]status=DeadLettered(&|$)/, endpointHref);
    await endpointLink.click();
    await page.waitForURL(/\/endpoints\/billingendpoint\?/);
    const eventLinks = page.locator('[data-testid="events-table"] tbody tr td:nth-child(3) a');
    await eventLinks.first().waitFor({ timeout: 60_000 });
    assert.deepEqual((await eventLinks.allTextContents()).map((t) => t.trim()).sort(), ['tax-d-0', 'tax-d-1']);
    assert.deepEqual(ui!.pageErrors, []);
  });
});
