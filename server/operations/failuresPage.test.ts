// The Failures page in Chromium (playwright-core) on the built console and the embedded stack: failed events of
// two causes show as two groups with their counts; the operator resubmits the bigger group, the confirmation
// states the exact count, and the job runs on the server to completion in the Jobs drawer, which is reachable
// from another page too. The commands reached the endpoint's subscription, one per event. On the Endpoint page,
// rows checked across two pages of the list run as one job over exactly those rows (no 200-row synchronous path),
// and "select all matching" freezes the rest of the filter with its exact count. A group's note and spark show.
// The Jobs drawer names a job by its cause, with its times, the audit's id, commands "sent" and a link to its
// events; a confirmation cancelled leaves no job behind; the Jobs button closes the drawer.
// NIMBUS_CONSOLE_DIR may name another built copy of the console (default: this repository, built on demand).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServiceBusSessionReceiver } from '@azure/service-bus';
import type { Page } from 'playwright-core';
import { MessageType as T } from '@nimbus/sdk/contract';
import { msg } from '../../lib/store/testing/fixtures.ts';
import { CONSOLE_DIR } from '../console.ts';
import { startSeededConsole, type SeededConsole } from '../testing/seededConsole.ts';
import type { ConsoleTestStack } from '../testing/stack.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const DIR = process.env.NIMBUS_CONSOLE_DIR ?? CONSOLE_DIR;
const EP = 'billingendpoint';
const SESSION = 'S-failures-page';

let ui: SeededConsole | undefined;
let stack: ConsoleTestStack;
let pageErrors: string[] = [];

before(async () => {
  ui = await startSeededConsole({ database: 'failurespage', dir: DIR, demoData: false, env: { NIMBUS_OPERATIONS_RATE: '10' } });
  ({ stack, pageErrors } = ui);
});

after(() => ui?.close());

const open = (path: string): Promise<Page> => ui!.open(path);

/**
 * The EventIds of the commands waiting in a session: received until `expected` have arrived (the job's "completed"
 * means sent; on a loaded machine delivery can lag behind it, so an empty 2 s receive is no proof that none are
 * left), then one more wait so a repeated copy would still be seen.
 */
async function drainCommands(receiver: ServiceBusSessionReceiver, expected: number): Promise<string[]> {
  const got: string[] = [];
  const deadline = Date.now() + 60_000;
  while (got.length < expected && Date.now() < deadline) {
    const batch = await receiver.receiveMessages(100, { maxWaitTimeInMs: 2000 });
    got.push(...batch.map((m) => String(m.applicationProperties?.EventId)));
  }
  const extra = await receiver.receiveMessages(100, { maxWaitTimeInMs: 2000 });
  got.push(...extra.map((m) => String(m.applicationProperties?.EventId)));
  return got;
}

async function fail(eventId: string, errorType: string, errorText: string) {
  const request = msg(T.EventRequest, { endpointId: EP, eventId, sessionId: SESSION, eventTypeId: 'OrderPlaced', payload: { eventId } });
  const error = msg(T.ErrorResponse, { endpointId: EP, eventId, sessionId: SESSION, parentMessageId: request.messageId, errorType, errorText });
  for (const m of [request, error]) await stack.store.recordOutcome({ history: { ...m, enqueuedAt: new Date().toISOString() } as never, status: m });
}

describe('Failures page', () => {
  test('an operator resubmits a group and watches the job finish', { timeout: 300_000 }, async () => {
    for (let i = 0; i < 20; i++)
      await fail(`credit-${i}`, 'CreditApprovalRequiredError', `Order ORD-${100 + i}: invoice total ${1100 + i}.00 EUR exceeds the credit limit of 1000.00 for CUST-${i}; approve the credit and resubmit`);
    for (let i = 0; i < 3; i++) await fail(`crm-${i}`, 'CrmUnavailableError', `CRM API answered 503 Service Unavailable (rate limit) while adding order ORD-${i}`);

    const page = await open('/failures');
    const groups = page.locator('[data-testid="failure-groups"] tbody tr');
    await groups.first().waitFor({ timeout: 60_000 });
    assert.equal(await groups.count(), 2);
    const credit = groups.first();
    assert.equal((await credit.locator('[data-testid="group-count"]').textContent())?.trim(), '20');
    assert.match((await credit.textContent()) ?? '', /Order <id>: invoice total <amount> EUR exceeds the credit limit/);

    // The spark shows the 20 arrivals; a note is shown to everyone (and audited: server/failures/routes.test.ts).
    const bars = await credit.locator('svg[aria-label^="Arrivals"] rect').evaluateAll((rs) => rs.map((r) => Number(r.getAttribute('height'))));
    assert.equal(bars.length, 24);
    assert.ok(bars.some((h) => h > 0), 'the spark has the arrivals');
    await credit.getByRole('button', { name: 'Add note' }).click();
    await credit.getByLabel('note').fill('known: CRM maintenance until 10:00');
    await credit.getByRole('button', { name: 'Save' }).click();
    await credit.locator('[data-testid="group-note"]').filter({ hasText: 'known: CRM maintenance until 10:00' }).waitFor();
    const elsewhere = await open('/failures');
    await elsewhere.locator('[data-testid="group-note"]').filter({ hasText: 'known: CRM maintenance until 10:00' }).waitFor({ timeout: 60_000 });
    await elsewhere.close();

    await credit.getByRole('button', { name: 'Resubmit all' }).click();
    const count = page.locator('[data-testid="bulk-count"]');
    await count.waitFor();
    assert.match((await count.textContent()) ?? '', /Exactly 20 events/);
    await page.getByRole('button', { name: 'Resubmit 20 events' }).click();

    // The drawer opens on the job; 10 commands per second: it is seen running, then completed.
    const drawer = page.locator('[data-testid="jobs-drawer"]');
    await drawer.waitFor();
    const job = drawer.locator('li[data-operation]').first();
    await drawer.locator('li[data-state="completed"]').first().waitFor({ timeout: 120_000 });
    assert.match((await job.locator('[data-testid="job-counts"]').textContent()) ?? '', /20 \/ 20 processed.*20 sent/);

    // The drawer is in every page's header.
    const other = await open('/');
    await other.locator('[data-testid="jobs-button"]').click();
    await other.locator('[data-testid="jobs-drawer"] li[data-state="completed"]').first().waitFor();

    // One command per event of the group reached the endpoint; none for the other group.
    const receiver = await stack.serviceBus.client.acceptSession(EP, EP, SESSION, { receiveMode: 'receiveAndDelete' });
    const got = await drainCommands(receiver, 20);
    await receiver.close();
    assert.deepEqual(got.sort(), Array.from({ length: 20 }, (_, i) => `credit-${i}`).sort());
    assert.deepEqual(pageErrors, []);
  });

  test('rows checked across pages of the Endpoint page run as one job over exactly those rows', { timeout: 300_000 }, async () => {
    const ep = 'crmendpoint';
    const session = 'S-rows';
    for (let i = 0; i < 60; i++) {
      const request = msg(T.EventRequest, { endpointId: ep, eventId: `row-${i}`, sessionId: session, eventTypeId: 'OrderPlaced', payload: { i } });
      const error = msg(T.ErrorResponse, { endpointId: ep, eventId: `row-${i}`, sessionId: session, parentMessageId: request.messageId, errorType: 'RowError', errorText: `row ${i} failed` });
      for (const m of [request, error]) await stack.store.recordOutcome({ history: { ...m, enqueuedAt: new Date().toISOString() } as never, status: m });
    }
    const page = await open(`/endpoints/${ep}?status=Failed`);
    const rows = page.locator('[data-testid="events-table"] tbody tr');
    await rows.nth(49).waitFor({ timeout: 60_000 });
    // Page 1 (50 rows): all checked; then page 2, and one of its rows.
    await page.getByLabel('Select all actionable events').check();
    await page.getByRole('button', { name: 'Load more' }).click();
    await rows.nth(59).waitFor();
    await page.locator('[data-testid="events-table"] tbody input[type="checkbox"]:not(:checked)').first().check();
    assert.equal((await page.getByTestId('selection-count').textContent())?.trim(), '51 selected');
    const labels = await page.locator('[data-testid="events-table"] tbody input[type="checkbox"]:checked').evaluateAll((els) => els.map((e) => e.getAttribute('aria-label') ?? ''));
    const chosen = labels.map((l) => l.replace(/^Select /, '')).sort();
    assert.equal(chosen.length, 51);

    await page.getByRole('button', { name: 'Resubmit selected' }).click();
    const count = page.locator('[data-testid="bulk-count"]');
    await count.waitFor();
    assert.match((await count.textContent()) ?? '', /Exactly 51 events \(the 51 selected on crmendpoint\)/);
    await page.getByRole('button', { name: 'Resubmit 51 events' }).click();
    const drawer = page.locator('[data-testid="jobs-drawer"]');
    const job = drawer.locator('li[data-operation][data-state="completed"]').filter({ hasText: '51 / 51' });
    await job.first().waitFor({ timeout: 120_000 });
    assert.match((await job.first().locator('[data-testid="job-counts"]').textContent()) ?? '', /51 \/ 51 processed.*51 sent/);

    const receiver = await stack.serviceBus.client.acceptSession(ep, ep, session, { receiveMode: 'receiveAndDelete' });
    const got = await drainCommands(receiver, chosen.length);
    await receiver.close();
    assert.deepEqual(got.sort(), chosen, 'one command per checked row, none for the unchecked ones');

    // "Select all matching": the 9 rows left Failed, frozen and counted on the server; Cancel discards the job.
    const again = await open(`/endpoints/${ep}?status=Failed`);
    await again.locator('[data-testid="events-table"] tbody tr').first().waitFor({ timeout: 60_000 });
    await again.getByRole('button', { name: 'Select all matching' }).click();
    await again.getByRole('button', { name: 'Resubmit all matching' }).click();
    const frozen = again.locator('[data-testid="bulk-count"]');
    await frozen.waitFor();
    assert.match((await frozen.textContent()) ?? '', /Exactly 9 events/);
    await again.getByRole('button', { name: 'Cancel' }).click();
    await frozen.waitFor({ state: 'detached' });
    assert.deepEqual(pageErrors, []);
  });

  test('the Jobs drawer: a cancelled confirmation leaves no job; a job reads as its cause with times, id, "sent" and its events; the Jobs button closes it', { timeout: 300_000 }, async () => {
    for (let i = 0; i < 4; i++) await fail(`portal-${i}`, 'PartnerPortalError', `Partner portal rejected ORD-${900 + i}: client certificate expired`);
    const page = await open('/failures');
    const row = page.locator('[data-testid="failure-groups"] tbody tr').filter({ hasText: 'client certificate expired' });
    await row.waitFor({ timeout: 60_000 });

    // Skip all → "Skip 4 events?" → Cancel: the prepared job is discarded, not left in the drawer as a job.
    await row.getByRole('button', { name: 'Skip all' }).click();
    const count = page.locator('[data-testid="bulk-count"]');
    await count.waitFor();
    assert.match((await count.textContent()) ?? '', /Exactly 4 events/);
    await page.getByRole('button', { name: 'Cancel' }).click();
    await count.waitFor({ state: 'detached' });

    // Resubmit all, confirmed: the drawer opens on it.
    await row.getByRole('button', { name: 'Resubmit all' }).click();
    await page.getByRole('button', { name: 'Resubmit 4 events' }).click();
    const drawer = page.locator('[data-testid="jobs-drawer"]');
    const job = drawer.locator('li[data-operation][data-state="completed"]').filter({ hasText: 'client certificate expired' });
    await job.waitFor({ timeout: 120_000 });
    // Named by its cause, not a hash; "sent" (commands), not "done"; started and ended; the audit's id; its events.
    const title = (await job.locator('[data-testid="job-title"]').textContent()) ?? '';
    assert.match(title, /^resubmit: Partner portal rejected <id>: client certificate expired · billingendpoint/);
    assert.match((await job.locator('[data-testid="job-counts"]').textContent()) ?? '', /4 \/ 4 processed.*4 sent/);
    const times = (await job.locator('[data-testid="job-times"]').textContent()) ?? '';
    assert.match(times, /started .*ended /);
    const id = await job.getAttribute('data-operation');
    assert.equal((await job.locator('[data-testid="job-id"]').textContent())?.trim(), `operation/${id}`);
    assert.match((await job.locator('[data-testid="job-events"]').getAttribute('href')) ?? '', /^\/endpoints\/billingendpoint\?groupId=[0-9a-f]{20}$/);
    // The cancelled Skip of the same 4 events is not there (the list is loaded: the resubmit is in it).
    assert.equal(await drawer.locator('li[data-operation]').filter({ hasText: '0 / 4' }).count(), 0, 'a job cancelled in its confirmation is not listed');

    // The Jobs button is not covered by the drawer and closes it.
    await page.locator('[data-testid="jobs-button"]').click({ timeout: 15_000 });
    await drawer.waitFor({ state: 'detached' });
    assert.deepEqual(pageErrors, []);
  });

  test('a bulk Skip updates the group counts as soon as the job ends, not at the next 15 s refresh', { timeout: 300_000 }, async () => {
    for (let i = 0; i < 3; i++) await fail(`ledger-${i}`, 'LedgerClosedError', `Ledger rejected order ORD-${700 + i}: accounting period closed`);
    const page = await open('/failures');
    const row = page.locator('[data-testid="failure-groups"] tbody tr').filter({ hasText: 'accounting period closed' });
    await row.waitFor({ timeout: 60_000 });
    const count = () => row.locator('[data-testid="group-count"]').textContent({ timeout: 1000 }).then((t) => t?.trim() ?? null, () => null);
    assert.equal(await count(), '3');
    // Line up with the page's own refresh: right after one of its reads the next is 15 s away, so a change seen
    // within 14 s of it came from the job's end, not from the timer.
    await page.waitForRequest((r) => r.url().includes('/api/failure-groups'), { timeout: 30_000 });
    const refreshed = Date.now();
    await row.getByRole('button', { name: 'Skip all' }).click();
    await page.getByRole('button', { name: 'Skip 3 events' }).click();
    const confirmed = Date.now();
    // The whole gap to the timed refresh, for a loaded machine: the job runs at 10 events/s and the drawer polls it.
    const deadline = refreshed + 14_000;
    let last: string | null = '3';
    while (Date.now() < deadline) {
      last = await count();
      if (last !== '3') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.notEqual(last, '3', `the group still counted 3 events ${((Date.now() - confirmed) / 1000).toFixed(1)} s after the Skip was confirmed`);
    await page.locator('[data-testid="jobs-drawer"] li[data-state="completed"]').filter({ hasText: '3 / 3' }).first().waitFor({ timeout: 60_000 });
    assert.deepEqual(pageErrors, []);
  });
});
