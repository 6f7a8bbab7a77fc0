// Two findings of an operator's walk, in Chromium. The follow-up of a bulk retry: after "Resubmit all" on the
// Failures page, the Jobs drawer says what became of the job's events, not only that commands were sent: how many
// completed and how many failed again. A search by session id leads to the session's full list on an endpoint,
// where its oldest failure (the one holding the others back, cut from the newest 25) can be found.
// Real parts throughout: the built console on the embedded emulator and Cosmos server, the real Resolver recording
// outcomes, and the demo endpoints on the SDK handling the resubmissions (a credit approval completes on resubmit;
// an order whose address lost its postal code is dead-lettered again).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { pino } from 'pino';
import { MessageType, ResolutionStatus } from '@nimbus/sdk/contract';
import { DemoEndpoint, startDemo } from '../demo/index.ts';
import { startResolver } from '../resolver-worker/index.ts';
import { until, WAIT_MS } from '../server/testing/pageWait.ts';
import { parkedBehind, seedEvent } from '../server/testing/seed.ts';
import { startSeededConsole, type SeededConsole } from '../server/testing/seededConsole.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let ui: SeededConsole | undefined;

/** Polls until `probe` answers; fails naming `what`. */
async function eventually(what: string, probe: () => Promise<boolean>, ms = 120_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await probe())) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

before(async () => {
  ui = await startSeededConsole({
    demoData: false,
    artifacts: 'job-followup',
    prepare: async ({ stack, base, defer }) => {
      // One customer's session as a blocked one looks: its failure at billing first (oldest), then its later events,
      // parked behind it at billing and handled at the CRM. A search for the session lists the newest 25: not the failure.
      const order = { eventTypeId: 'OrderPlaced', sessionId: 'WALK-S1', payload: { orderId: 'ORD-1' } };
      await seedEvent(stack.store, base, { ...order, endpointId: 'billingendpoint', eventId: 'walk-s1-failed' }, MessageType.ErrorResponse, {
        errorText: 'credit limit exceeded',
      });
      for (let n = 0; n < 13; n++) {
        await seedEvent(stack.store, base, { ...order, endpointId: 'crmendpoint', eventId: `walk-s1-crm-${n}` }, MessageType.ResolutionResponse);
        await seedEvent(stack.store, base, { ...order, endpointId: 'billingendpoint', eventId: `walk-s1-parked-${n}` }, MessageType.DeferralResponse, parkedBehind(order.sessionId, 'walk-s1-failed'));
      }

      const resolver = startResolver({ client: stack.serviceBus.client, store: stack.store, concurrency: 4, log: pino({ level: 'silent' }), history: { flushMs: 100 } });
      defer(() => resolver.stop());
      // The traffic's opening: one event of each kind (the broken address among them) and two credit holds.
      const demo = await startDemo({
        client: stack.serviceBus.client,
        catalog: stack.catalog,
        ratePerSecond: 10,
        eventLimit: 20,
        operatorCases: 2,
        timings: { retryDelayMs: 300, handoffMinMs: 200, handoffMaxMs: 400, sessionIdleTimeoutMs: 300 },
      });
      defer(() => demo.stop());
      const count = async (endpointId: string, status: ResolutionStatus) =>
        (await stack.store.listEvents({ endpointId, statuses: [status], pageSize: 50 })).items.length;
      await eventually('two failed credit approvals and a dead-lettered order', async () =>
        (await count(DemoEndpoint.billing, ResolutionStatus.Failed)) >= 2 && (await count(DemoEndpoint.shipping, ResolutionStatus.DeadLettered)) >= 1,
      );
    },
  });
});

after(() => ui?.close());

/** Resubmits the group whose cause reads `cause` from the Failures page; answers how many events the job froze. */
async function resubmitAll(page: Page, cause: string): Promise<number> {
  const row = page.getByTestId('failure-groups').locator('tr', { hasText: cause });
  await row.getByRole('button', { name: 'Resubmit all' }).click();
  const confirm = page.getByRole('dialog').getByRole('button', { name: /^Resubmit \d+ events?$/ });
  const total = Number(/\d+/.exec((await confirm.textContent()) ?? '')?.[0]);
  await confirm.click();
  await page.getByRole('dialog').waitFor({ state: 'detached' });
  return total;
}

/** The drawer's follow-up line of the job titled with `cause`, e.g. "now: 0 failed again 2 completed". */
async function outcomeText(page: Page, cause: string): Promise<string> {
  const job = page.getByTestId('jobs-drawer').locator('li', { hasText: cause }).first();
  const line = job.getByTestId('job-outcome');
  await line.waitFor({ timeout: 1_000 });
  // The line's own parts only: once it settles it adds "as of T · Refresh" (job-outcome-settled), which is not a count.
  return (await line.locator(':scope > span:not([data-testid="job-outcome-settled"])').allTextContents()).join(' ');
}

describe('after a bulk retry', () => {
  test('the Jobs drawer shows how many of the retried events completed and how many failed again', async () => {
    const page = await ui!.open('/failures');
    try {
      const credits = await resubmitAll(page, 'CreditApprovalRequiredError');
      assert.ok(credits >= 2, `the credit holds frozen: ${credits}`);
      await page.getByTestId('jobs-drawer').waitFor();
      // The approvals complete on resubmission: none failed again.
      await until(() => outcomeText(page, 'exceeds the credit limit'), `now: 0 failed again ${credits} completed`, 'the credit job follow-up', page, WAIT_MS * 3);

      // The drawer stays open over the page; close it to reach the next group's button.
      await page.getByTestId('jobs-drawer').getByRole('button', { name: 'Close' }).click();
      const broken = await resubmitAll(page, 'PermanentFailureError');
      // Resubmitted unchanged, an order without its postal code is dead-lettered again: the drawer says so.
      await until(() => outcomeText(page, 'postalCode'), `now: ${broken} failed again 0 completed`, 'the broken-address job follow-up', page, WAIT_MS * 3);
      await page.screenshot({ path: `${ui!.artifacts}/drawer.png` });
    } finally {
      await page.close();
    }
  });
});

describe('a search by session id', () => {
  test("leads to the session's full list on an endpoint, where its oldest failure is", async () => {
    const page = await ui!.open('/search?q=WALK-S1');
    try {
      await page.getByTestId('search-truncated').waitFor();
      assert.equal(await page.locator('main').getByText('walk-s1-failed').count(), 0, 'the failure is older than the 25 listed');
      await page.getByTestId('search-session-links').getByRole('link', { name: 'billingendpoint', exact: true }).click();
      // The session's failures: the list is newest first, so without the filter its failure is below the events parked behind it.
      await page.waitForURL(
        (u) => u.pathname === '/endpoints/billingendpoint' && u.searchParams.get('sessionId') === 'WALK-S1' && u.searchParams.get('status') === 'Failed,DeadLettered,Unsupported',
      );
      const firstRow = page.locator('main table tbody tr').first();
      await firstRow.getByRole('link', { name: 'walk-s1-failed' }).waitFor();
      assert.equal(await page.locator('main table').getByText(/walk-s1-parked-/).count(), 0, 'only its failures');

      // Each listed session links to its endpoint's list of it too.
      await page.goto(`${ui!.url}/search?q=WALK-S1`);
      const first = page.locator('main table tbody tr').first();
      await first.getByRole('link', { name: 'WALK-S1', exact: true }).waitFor();
      const endpoint = (await first.locator('td').nth(1).textContent())?.trim();
      assert.equal(await first.getByRole('link', { name: 'WALK-S1', exact: true }).getAttribute('href'), `/endpoints/${endpoint}?sessionId=WALK-S1`);
    } finally {
      await page.close();
    }
  });
});
