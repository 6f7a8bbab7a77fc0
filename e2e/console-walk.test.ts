// Findings of an operator's walk through the console, each pinned by a test: the Failures page's times follow the
// header's local/UTC rule like every other time; a Flow consumer card accounts for every outcome it counts (its
// numbers add up to its total); one failed event is "1 failed event" (Endpoints, Failures), not "1 failed events"; an
// unknown event's page keeps its breadcrumb, the way back to its endpoint; the charts' time axis and legend follow the
// local/UTC switch too; a dead letter's description is not repeated when it is the error text; `j` on the Endpoint
// page steps into the event list, not the charts' legends. The built console against the embedded
// Service Bus emulator and Cosmos server, with Debian's Chromium (server/testing/seededConsole.ts).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Locator, Page } from 'playwright-core';
import { MessageType } from '@nimbus/sdk/contract';
import { seedEvent } from '../server/testing/seed.ts';
import { startSeededConsole, type SeededConsole } from '../server/testing/seededConsole.ts';
import { reloadPage } from '../server/testing/pageWait.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let ui: SeededConsole | undefined;
const DEAD_TEXT = 'OrderPlaced payload does not match its schema: shippingAddress.postalCode: Required';

before(async () => {
  ui = await startSeededConsole({
    // No demo rows: the Endpoints badge below counts exactly the one failure seeded here.
    demoData: false,
    prepare: async ({ stack, base }) => {
      const customer = { endpointId: 'crmendpoint', eventTypeId: 'CustomerUpdated', payload: { customerId: 'CUST-1' } };
      await seedEvent(stack.store, base, { ...customer, eventId: 'walk-unsupported-1', sessionId: 'CUST-1' }, MessageType.UnsupportedResponse, {
        errorText: 'no handler for event type CustomerUpdated',
      });
      await seedEvent(stack.store, base, { ...customer, eventId: 'walk-skipped-1', sessionId: 'CUST-2' }, MessageType.SkipResponse);
      await seedEvent(stack.store, base, { ...customer, eventId: 'walk-completed-1', sessionId: 'CUST-3' }, MessageType.ResolutionResponse);
    },
  });
});

after(() => ui?.close());

/** Fails with what the locator's first match reads when it does not appear (a bare timeout says nothing). */
async function seen(what: string, locator: Locator, page: Page): Promise<void> {
  await locator.first().waitFor().catch(async (err: Error) => {
    const text = await page.locator('main').textContent({ timeout: 1_000 }).catch(() => null);
    throw new Error(`${what}: not seen in "${text?.slice(0, 400)}" (${err.message.split('\n')[0]})`);
  });
}

describe('an operator walk', () => {
  test('Failures: first and last seen follow the local/UTC switch, in the format of every other time', async () => {
    const page = await ui!.open('/failures');
    // A zone that is neither UTC nor the server's: a local time can only come from the browser's rule.
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Emulation.setTimezoneOverride', { timezoneId: 'Asia/Kathmandu' });
    await reloadPage(page);
    const groups = page.getByTestId('failure-groups');
    await seen('the Unsupported group', groups.getByText('no handler for event type CustomerUpdated'), page);
    const times = groups.locator('time');
    const local = times.filter({ hasText: /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} GMT\+5:45$/ });
    await seen('first and last seen in local time', local, page);
    assert.equal(await local.count(), 2, 'first and last seen, both local');

    try {
      await page.getByRole('button', { name: 'Local time', exact: true }).click();
      const utc = times.filter({ hasText: /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC$/ });
      await seen('first and last seen in UTC after the switch', utc, page);
      assert.equal(await utc.count(), 2, 'both switched');
    } finally {
      // The choice is kept in local storage, shared with the other tests' pages.
      await page.getByRole('button', { name: 'UTC', exact: true }).click();
      await cdp.detach();
      await page.close();
    }
  });

  test('Flow: a consumer card shows its unsupported and skipped events, so its counts add up to its total', async () => {
    const page = await ui!.open('/flow?period=60');
    const card = page.locator('[data-consumer="crmendpoint"][href$="eventTypeId=CustomerUpdated"]');
    await seen('the crmendpoint card', card.getByText('events', { exact: true }), page);
    const counts = async () => {
      const text = (await card.textContent()) ?? '';
      const n = (label: string) => Number(new RegExp(`(\\d+) ${label}`, 'i').exec(text)?.[1] ?? NaN);
      return { text, total: n('events'), completed: n('completed'), unsupported: n('unsupported'), skipped: n('skipped') };
    };
    const c = await counts();
    assert.deepEqual({ total: c.total, completed: c.completed, unsupported: c.unsupported, skipped: c.skipped }, { total: 3, completed: 1, unsupported: 1, skipped: 1 }, c.text);
    await page.close();
  });

  test('Endpoints and Failures: one failed event is counted in the singular', async () => {
    const page = await ui!.open('/');
    const badge = page.locator('main').getByText(/^\d+ failed events?$/);
    await seen('the Endpoints badge', badge, page);
    assert.equal(await badge.textContent(), '1 failed event');
    await page.close();

    const failures = await ui!.open('/failures');
    const summary = failures.locator('main').getByText(/^\d+ failed events? in \d+ groups?$/);
    await seen('the Failures summary', summary, failures);
    assert.equal(await summary.textContent(), '1 failed event in 1 group');
    await failures.close();
  });

  test('an unknown event says so under its breadcrumb, whose endpoint link leads back', async () => {
    const page = await ui!.open('/endpoints/billingendpoint/events/walk-no-such-event');
    await seen('the error', page.getByRole('alert').filter({ hasText: 'walk-no-such-event is not known on endpoint billingendpoint' }), page);
    const crumbs = page.getByRole('navigation', { name: 'Breadcrumb' });
    await seen('the breadcrumb', crumbs, page);
    await crumbs.getByRole('link', { name: 'billingendpoint', exact: true }).click();
    await page.waitForURL((u) => u.pathname === '/endpoints/billingendpoint');
    await page.close();
  });

  test('Monitor: the chart under the cursor tells its time in local time, and in UTC after the switch', async () => {
    const page = await ui!.open('/monitor');
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Emulation.setTimezoneOverride', { timezoneId: 'Asia/Kathmandu' });
    await reloadPage(page);
    await page.locator('html[data-hydrated]').waitFor({ state: 'attached' });
    const chart = page.getByTestId('monitor-history').locator('.uplot').first();
    /** The legend's time at the middle of the chart, in minutes of the day (uPlot writes e.g. `2026-12-04 4:30pm`). */
    const minutesUnderCursor = async (): Promise<number> => {
      await chart.locator('.u-over').hover();
      const text = (await chart.locator('.u-legend .u-series').first().locator('.u-value').textContent()) ?? '';
      const m = /(\d{1,2}):(\d\d)\s*(am|pm)/i.exec(text);
      assert.ok(m, `a time in the legend, read "${text}"`);
      return ((Number(m[1]) % 12) + (m[3]!.toLowerCase() === 'pm' ? 12 : 0)) * 60 + Number(m[2]);
    };
    try {
      await seen('the platform chart', chart.locator('.u-over'), page);
      const local = await minutesUnderCursor();
      await page.getByRole('button', { name: 'Local time', exact: true }).click();
      await page.getByRole('button', { name: 'UTC', exact: true }).waitFor();
      await page.mouse.move(0, 0);
      // The chart is drawn again for the new rule: read it once it is back.
      await seen('the platform chart after the switch', chart.locator('.u-over'), page);
      const utc = await minutesUnderCursor();
      // Kathmandu is UTC+5:45 (no daylight saving): the same point in time reads 345 minutes earlier in UTC.
      assert.equal((local - utc + 1440) % 1440, 345, `local ${local} min, UTC ${utc} min`);
    } finally {
      await page.getByRole('button', { name: 'UTC', exact: true }).click();
      await cdp.detach();
      await page.close();
    }
  });

  test('a dead letter whose description is its error text shows that text once in its panel', async () => {
    // Seeded here, not before the console starts: the tests above count the failed events (one, the Unsupported).
    // As the SDK dead-letters a permanent failure: the description is the error text again.
    await seedEvent(ui!.stack.store, Date.now(), { endpointId: 'shippingendpoint', eventTypeId: 'OrderPlaced', payload: { orderId: 'ORD-9' }, eventId: 'walk-dead-1', sessionId: 'CUST-4' }, MessageType.ErrorResponse, {
      errorText: DEAD_TEXT,
      errorType: 'PermanentFailureError',
      deadLetterReason: `Permanent failure: PermanentFailureError: ${DEAD_TEXT}`,
      deadLetterErrorDescription: DEAD_TEXT,
    });
    const page = await ui!.open('/endpoints/shippingendpoint/events/walk-dead-1');
    const panel = page.locator('section', { has: page.getByRole('heading', { name: 'Dead letter' }) }).last();
    await seen('the dead-letter panel', panel.getByText('Dead-letter reason:'), page);
    assert.equal(await panel.getByText(DEAD_TEXT, { exact: true }).count(), 1, (await panel.textContent()) ?? '');
    await page.close();
  });

  test('j on the Endpoint page focuses the first event of the list, not a chart legend', async () => {
    const page = await ui!.open('/endpoints/crmendpoint');
    // Both are on the page: the charts' legends (uPlot draws them as tables too) and the event list.
    await seen('a chart legend', page.locator('main .u-legend tr'), page);
    const firstEvent = page.locator('main table tbody tr a[href*="/events/"]').first();
    await seen('the event list', firstEvent, page);
    await page.keyboard.press('j');
    const focused = await page.evaluate<{ tag: string | null; text: string | null; inLegend: boolean }>(
      "(() => { const a = document.activeElement; return { tag: a?.tagName ?? null, text: a?.textContent?.trim() ?? null, inLegend: a?.closest('.u-legend') != null }; })()",
    );
    assert.deepEqual(focused, { tag: 'A', text: await firstEvent.textContent(), inLegend: false });
    await page.close();
  });
});
