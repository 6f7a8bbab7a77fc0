// URL state of the dead-letter browser and the alert pages (issue 20): their filter, sort and paging position live
// in the URL, so a reload opens the same view and Back returns to the one before. The built console against the
// embedded Service Bus emulator and Cosmos server, with Debian's Chromium, as e2e/console-data.test.ts; the dead
// letters are made with the real Service Bus client, the alert rules and history written with the alert store.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { BrowserContext, Page } from 'playwright-core';
import { Topic } from '@nimbus/sdk/contract';
import type { RunningConsole } from '../server/console.ts';
import { AlertStore } from '../server/alerts/alertStore.ts';
import { writeAudit } from '../server/audit/auditLog.ts';
import { gotoHydrated, reloadHydrated, until } from '../server/testing/pageWait.ts';
import { assertIdRefused } from '../server/testing/idRefusal.ts';
import { errorsLoading, startSeededConsole, type SeededConsole } from '../server/testing/seededConsole.ts';
import type { ConsoleTestStack } from '../server/testing/stack.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let ui: SeededConsole | undefined;
let consoleApp: RunningConsole;
let browser: BrowserContext;

/** 28 dead letters on the Resolver subscription (more than one page of 25): 26 with reason A, 2 with reason B. */
const REASON_A = 'UrlStateThrottled';
const REASON_B = 'UrlStateMalformed';
const DEAD_LETTERS = 28;

async function deadLetterOnResolver(stack: ConsoleTestStack, count: number): Promise<void> {
  const sessionId = `urlstate-${randomUUID()}`;
  const sender = stack.serviceBus.client.createSender(Topic.Resolver);
  await sender.sendMessages(
    Array.from({ length: count }, (_, i) => ({ messageId: `urlstate-${i}`, sessionId, body: Buffer.from(JSON.stringify({ i })), applicationProperties: { To: 'billingendpoint' } })),
  );
  await sender.close();
  const receiver = await stack.serviceBus.client.acceptSession(Topic.Resolver, Topic.Resolver, sessionId);
  let done = 0;
  while (done < count) {
    const batch = await receiver.receiveMessages(count - done, { maxWaitTimeInMs: 5000 });
    assert.ok(batch.length > 0, `received ${done} of ${count} messages to dead-letter`);
    for (const m of batch) {
      const reason = done < count - 2 ? REASON_A : REASON_B;
      await receiver.deadLetterMessage(m, { deadLetterReason: reason, deadLetterErrorDescription: 'made by the URL state test' });
      done += 1;
    }
  }
  await receiver.close();
}

async function seedAlerts(stack: ConsoleTestStack): Promise<void> {
  const alerts = new AlertStore(stack.store.database);
  const rule = (name: string, type: 'failureRate' | 'deadLetterBacklog' | 'pendingHandoff', threshold: number | null) =>
    alerts.saveRule({ name, type, endpointId: type === 'failureRate' ? 'billingendpoint' : null, threshold, durationSeconds: null, cooldownSeconds: 900, channelIds: [], enabled: false }, 'test');
  await rule('alpha failures', 'failureRate', 1000);
  await rule('beta backlog', 'deadLetterBacklog', 1000);
  await rule('gamma handoffs', 'pendingHandoff', null);
  const now = Date.now();
  const alert = (n: number, ruleName: string, recovered: boolean) =>
    alerts.putAlert({
      id: `urlstate-alert-${n}`,
      kind: 'alert',
      ruleId: `rule-${ruleName}`,
      ruleName,
      ruleType: 'deadLetterBacklog',
      endpointId: null,
      firedAt: new Date(now - n * 60_000).toISOString(),
      recoveredAt: recovered ? new Date(now - n * 60_000 + 30_000).toISOString() : null,
      value: 5,
      threshold: 1,
      summary: `${ruleName} fired (${n})`,
      link: '/topology/subscriptions',
      deliveries: [],
    });
  await alert(1, 'beta backlog', false);
  await alert(2, 'alpha failures', true);
  await alert(3, 'gamma handoffs', true);
}

/** Audit entries on two events whose ids differ by a leading space: the Audit log's event id filter is exact. */
const AUDITED = 'urlstate-audited';
async function seedAuditOnIds(stack: ConsoleTestStack): Promise<void> {
  for (const eventId of [AUDITED, ` ${AUDITED}`])
    await writeAudit(stack.store.database, {
      actorKind: 'user', actorId: 'oid-urlstate', actorName: 'urlstate@test', roles: 'Operator', action: 'resubmit',
      endpointId: 'billingendpoint', eventId, target: null, outcome: 'succeeded', status: 200, reason: null, details: null,
    });
}

before(async () => {
  ui = await startSeededConsole({
    prepare: async ({ stack }) => {
      await deadLetterOnResolver(stack, DEAD_LETTERS);
      await seedAlerts(stack);
      await seedAuditOnIds(stack);
    },
  });
  ({ app: consoleApp, browser } = ui);
});

after(() => ui?.close());

const param = (page: Page, key: string) => new URL(page.url()).searchParams.get(key);

describe('dead letters: reason filter and paging position in the URL', () => {
  const path = '/topology/subscriptions/Resolver/Resolver';
  const shown = (page: Page) => page.evaluate<string[]>("[...document.querySelectorAll('li[data-dead-letter]')].map((li) => li.getAttribute('data-dead-letter'))");

  test('Next and the filter go into the URL; a reload restores them and Back returns to the state before', async () => {
    const page = await browser.newPage();
    await gotoHydrated(page, consoleApp.url + path);
    await until(async () => (await shown(page)).length, 25, 'first page');
    const firstPage = await shown(page);

    await page.getByRole('button', { name: 'Next' }).click();
    await page.waitForURL(/[?&]from=\d+/);
    await until(async () => (await shown(page)).length, DEAD_LETTERS - 25, 'second page');
    const secondPage = await shown(page);
    assert.equal(secondPage.some((id) => firstPage.includes(id)), false, 'the second page has other dead letters');

    await reloadHydrated(page);
    await until(() => shown(page), secondPage, 'the second page after a reload');
    assert.equal(await page.getByRole('button', { name: 'Previous' }).isEnabled(), true);

    await page.goBack();
    await until(() => shown(page), firstPage, 'Back: the first page');
    assert.equal(param(page, 'from'), null);

    await page.getByLabel('Filter by reason').fill(REASON_B);
    await page.getByRole('button', { name: 'Filter', exact: true }).click();
    await page.waitForURL(new RegExp(`[?&]reason=${REASON_B}`));
    await until(async () => (await shown(page)).length, 2, 'filtered by reason');

    await reloadHydrated(page);
    await until(async () => (await shown(page)).length, 2, 'filtered after a reload');
    assert.equal(await page.getByLabel('Filter by reason').inputValue(), REASON_B);

    await page.goBack();
    await until(() => shown(page), firstPage, 'Back: unfiltered');
    assert.equal(param(page, 'reason'), null);
    assert.equal(await page.getByLabel('Filter by reason').inputValue(), '', 'the box follows the URL');
    await page.goForward();
    await until(async () => (await shown(page)).length, 2, 'Forward: filtered again');
    assert.equal(await page.getByLabel('Filter by reason').inputValue(), REASON_B);

    // A hand-edited URL with a bad position opens the first page instead of an error.
    await page.goto(`${consoleApp.url}${path}?from=abc&prev=x,1`);
    await until(() => shown(page), firstPage, 'a bad from falls back to the first page');
    await page.close();
  });

  test('the first page of the URL’s filter is in the first HTML', async () => {
    const html = await (await fetch(`${consoleApp.url}${path}?reason=${REASON_B}`)).text();
    assert.match(html, /data-dead-letter="urlstate-2[67]"/);
    assert.doesNotMatch(html, /data-dead-letter="urlstate-0"/);
  });
});

describe('endpoint events: status chips and applied filters are history entries', () => {
  const shown = (page: Page) =>
    page.evaluate<string[]>("[...document.querySelectorAll('[data-testid=events-table] tbody a[href*=\"/events/\"]')].map((a) => a.textContent).sort()");
  const pressed = (page: Page) => page.evaluate<string[]>("[...document.querySelectorAll('[aria-label=\"Status filter\"] button[aria-pressed=true]')].map((b) => b.firstChild.textContent)");

  test('Back undoes the last chip or applied filter and stays on the endpoint page', async () => {
    const page = await browser.newPage();
    // Opened from the Endpoints page, as an operator does: Back past the endpoint page's own entries leaves it.
    await gotoHydrated(page, consoleApp.url + '/');
    await gotoHydrated(page, consoleApp.url + '/endpoints/billingendpoint');
    const all = ['evt-completed-1', 'evt-dead-1', 'evt-failed-1', 'evt-parked-1'];
    await until(() => shown(page), all, 'every seeded event', page);

    await page.getByRole('button', { name: /^Failed/ }).click();
    await page.waitForURL(/[?&]status=Failed$/);
    await until(() => shown(page), ['evt-failed-1'], 'Failed only', page);
    await page.getByRole('button', { name: /^Deferred/ }).click();
    await page.waitForURL(/[?&]status=Failed%2CDeferred$/);
    await until(() => shown(page), ['evt-failed-1', 'evt-parked-1'], 'Failed and Deferred', page);

    await page.goBack();
    await until(() => shown(page), ['evt-failed-1'], 'Back: Failed only again', page);
    assert.equal(new URL(page.url()).pathname, '/endpoints/billingendpoint');
    assert.deepEqual(await pressed(page), ['Failed'], 'the chips follow the URL');

    await page.getByLabel('Error text contains').fill('card declined');
    await page.getByRole('button', { name: 'Apply', exact: true }).click();
    await page.waitForURL(/[?&]q=card/);
    await page.goBack();
    await page.waitForURL((u) => u.searchParams.get('q') === null && u.pathname === '/endpoints/billingendpoint');
    await until(() => page.getByLabel('Error text contains').inputValue(), '', 'Back: the box follows the URL', page);

    await page.goBack();
    await until(() => shown(page), all, 'Back: every status', page);
    assert.equal(new URL(page.url()).pathname, '/endpoints/billingendpoint');
    assert.deepEqual(await pressed(page), []);
    await page.close();
  });
});

describe('flow and audit: a period, event type or applied audit filter is a history entry', () => {
  test('Flow: Back undoes the last period or event-type choice and stays on the Flow page', async () => {
    const page = await browser.newPage();
    await gotoHydrated(page, consoleApp.url + '/');
    await gotoHydrated(page, consoleApp.url + '/flow');
    const period = page.getByLabel('Period');
    const type = page.getByLabel('Event type');
    // The event-type choices come from the flow's own read.
    await until(async () => (await type.locator('option').count()) > 1, true, 'event types to choose from', page);
    const firstType = await type.locator('option').nth(1).getAttribute('value');
    assert.ok(firstType);

    await period.selectOption('60');
    await page.waitForURL((u) => u.searchParams.get('period') === '60');
    await type.selectOption(firstType);
    await page.waitForURL((u) => u.searchParams.get('eventTypeId') === firstType);

    await page.goBack();
    await page.waitForURL((u) => u.pathname === '/flow' && u.searchParams.get('eventTypeId') === null);
    assert.equal(param(page, 'period'), '60');
    await until(() => type.inputValue(), '', 'Back: every event type', page);
    assert.equal(await period.inputValue(), '60');

    await page.goBack();
    await page.waitForURL((u) => u.pathname === '/flow' && u.search === '');
    await until(() => period.inputValue(), '15', 'Back: the default period', page);

    await page.goBack();
    await page.waitForURL((u) => u.pathname === '/');
    await page.close();
  });

  test('Audit: Back undoes the last applied filter, the form follows, and re-applying the same filter adds no entry', async () => {
    const page = await browser.newPage();
    await gotoHydrated(page, consoleApp.url + '/');
    await gotoHydrated(page, consoleApp.url + '/audit');
    const action = page.getByLabel('Action contains');
    const outcome = page.getByLabel('Outcome');
    const filter = page.getByRole('button', { name: 'Filter', exact: true });

    await action.fill('skip');
    await filter.click();
    await page.waitForURL((u) => u.searchParams.get('action') === 'skip');
    // The same filter again: nothing new to go Back to.
    await filter.click();
    await outcome.selectOption('denied');
    await filter.click();
    await page.waitForURL((u) => u.searchParams.get('outcome') === 'denied');

    await page.goBack();
    await page.waitForURL((u) => u.pathname === '/audit' && u.searchParams.get('outcome') === null);
    assert.equal(param(page, 'action'), 'skip');
    await until(() => outcome.inputValue(), '', 'Back: the outcome box follows the URL', page);
    assert.equal(await action.inputValue(), 'skip');

    await page.goBack();
    await page.waitForURL((u) => u.pathname === '/audit' && u.search === '');
    await until(() => action.inputValue(), '', 'Back: the action box follows the URL', page);

    await page.goBack();
    await page.waitForURL((u) => u.pathname === '/');
    await page.close();
  });
});

describe('flow and audit: id filters are exact, spaces and all, as on the Endpoint page', () => {
  /** The "Event / target" cell of each row the Audit log lists, as text (a leading space kept). */
  const audited = (page: Page) =>
    page.evaluate<string[]>("[...document.querySelectorAll('[data-testid=audit-table] tbody tr[data-audit-id] td:nth-child(6)')].map((td) => td.textContent).sort()");

  test('Audit: an event id of spaces alone is not applied (the box says why, the URL and the log stay); " X" is another event than "X"', async () => {
    // The URL state trimmed the event id: spaces alone listed every entry while the box still showed them, and
    // " X" listed X's entries where the Endpoint page looks for " X".
    const page = await browser.newPage();
    try {
      await gotoHydrated(page, `${consoleApp.url}/audit?eventId=${AUDITED}`);
      await until(() => audited(page), [AUDITED], 'the entries of the one event', page);
      // Every read of the log from now on; none may leave the event id out.
      const reads: string[] = [];
      page.on('request', (r) => {
        if (new URL(r.url()).pathname === '/api/audit') reads.push(r.url());
      });
      const box = page.getByRole('textbox', { name: 'Event id', exact: true });
      await assertIdRefused(page, box, 'Filter', '   ', 'an event id of spaces alone is not a filter; leave it empty for every event');

      // An id with a leading space is applied as it is (a positive signal: any read the refused Filter started came
      // before this one's).
      await box.fill(` ${AUDITED}`);
      await page.getByRole('button', { name: 'Filter', exact: true }).click();
      await page.waitForURL((u) => u.searchParams.get('eventId') === ` ${AUDITED}`);
      await until(() => audited(page), [` ${AUDITED}`], 'the entries of the event with the space', page);
      assert.equal(await box.getAttribute('aria-invalid'), null, 'the error is gone');
      assert.equal(await box.getAttribute('maxlength'), '128', 'an id longer than the route takes cannot be typed');
      assert.equal(await page.getByRole('textbox', { name: 'Endpoint', exact: true }).getAttribute('maxlength'), '50');
      // The text boxes take what the route and the URL state take (server/audit/auditTextFilters.ts).
      for (const [name, max] of [['User', '256'], ['Action contains', '64'], ['Action does not contain', '200']] as const)
        assert.equal(await page.getByRole('textbox', { name, exact: true }).getAttribute('maxlength'), max, name);
      assert.deepEqual(
        reads.filter((r) => ![AUDITED, ` ${AUDITED}`].includes(new URL(r).searchParams.get('eventId') ?? '')),
        [],
        'no read of the log without the id the box showed',
      );
    } finally {
      await page.close();
    }

    // Such an id in the address bar: the log is unfiltered by it, and so the box is empty, not showing it.
    const linked = await browser.newPage();
    try {
      await gotoHydrated(linked, `${consoleApp.url}/audit?eventId=%20%20%20`);
      await until(async () => (await audited(linked)).includes(AUDITED), true, 'the log unfiltered by the id', linked);
      assert.equal(await linked.getByRole('textbox', { name: 'Event id', exact: true }).inputValue(), '', 'the box shows what is applied');
    } finally {
      await linked.close();
    }
    // An action longer than the route takes (65 characters; the URL state took 100): the log unfiltered by it, as
    // any value the URL state cannot read, not the route's 400 in the error box.
    const long = await browser.newPage();
    try {
      await gotoHydrated(long, `${consoleApp.url}/audit?action=${'a'.repeat(65)}`);
      await until(async () => (await audited(long)).includes(AUDITED), true, 'the log unfiltered by the action', long);
      assert.equal(await long.getByRole('textbox', { name: 'Action contains', exact: true }).inputValue(), '', 'the box shows what is applied');
    } finally {
      await long.close();
    }
  });

  test('Flow: " OrderPlaced" in the URL is no type of the catalog, and the box shows it rather than OrderPlaced', async () => {
    const page = await browser.newPage();
    try {
      await gotoHydrated(page, `${consoleApp.url}/flow?eventTypeId=%20OrderPlaced`);
      await until(() => page.getByLabel('Event type').inputValue(), ' OrderPlaced', 'the box shows the applied type', page);
      await until(() => page.getByText('The catalog has no event type').count(), 1, 'the page says the catalog has no such type', page);
      assert.equal(await page.locator('[data-testid=flow] > div').count(), 0, 'no event type listed');
    } finally {
      await page.close();
    }
  });
});

describe('alerts: rule and history filters and sort in the URL', () => {
  const rules = (page: Page) => page.evaluate<string[]>("[...document.querySelectorAll('[data-testid=alert-rules] tr[data-rule]')].map((tr) => tr.getAttribute('data-rule'))");
  const history = (page: Page) =>
    page.evaluate<string[]>("[...document.querySelectorAll('[data-testid=alert-history] tr[data-alert]')].map((tr) => tr.getAttribute('data-alert'))");

  test('Admin · Alerts: sort, kind and filter survive a reload; Back undoes the last choice', async () => {
    const page = await browser.newPage();
    await gotoHydrated(page, consoleApp.url + '/admin/alerts');
    await until(() => rules(page), ['alpha failures', 'beta backlog', 'gamma handoffs'], 'rules by name', page);

    await page.getByRole('button', { name: /^Name/ }).click();
    await page.waitForURL(/[?&]dir=desc/);
    await until(() => rules(page), ['gamma handoffs', 'beta backlog', 'alpha failures'], 'rules by name, Z→A', page);
    assert.equal(await page.locator('th[aria-sort="descending"]').count(), 1);

    await page.getByLabel('Kind').selectOption('deadLetterBacklog');
    await page.waitForURL(/[?&]type=deadLetterBacklog/);
    await until(() => rules(page), ['beta backlog'], 'one kind', page);

    await reloadHydrated(page);
    await until(() => rules(page), ['beta backlog'], 'one kind after a reload', page);
    assert.equal(await page.getByLabel('Kind').inputValue(), 'deadLetterBacklog');

    await page.goBack();
    await until(() => rules(page), ['gamma handoffs', 'beta backlog', 'alpha failures'], 'Back: every kind, still Z→A', page);
    assert.equal(await page.getByLabel('Kind').inputValue(), '');

    await page.getByLabel('Filter rules').fill('alp');
    await page.waitForURL(/[?&]q=alp/);
    await until(() => rules(page), ['alpha failures'], 'filtered', page);
    await reloadHydrated(page);
    assert.equal(await page.getByLabel('Filter rules').inputValue(), 'alp');
    await until(() => rules(page), ['alpha failures'], 'filtered after a reload', page);
    await page.close();
  });

  test('Alerts: state filter, sort and "Show more" position survive a reload; Back undoes the last choice', async () => {
    const page = await browser.newPage();
    await gotoHydrated(page, consoleApp.url + '/alerts');
    await until(() => history(page), ['urlstate-alert-1', 'urlstate-alert-2', 'urlstate-alert-3'], 'newest first', page);

    await page.getByRole('button', { name: /^Rule/ }).click();
    await page.waitForURL(/[?&]sort=rule/);
    await until(() => history(page), ['urlstate-alert-2', 'urlstate-alert-1', 'urlstate-alert-3'], 'by rule name', page);

    await page.getByLabel('State').selectOption('recovered');
    await page.waitForURL(/[?&]state=recovered/);
    await until(() => history(page), ['urlstate-alert-2', 'urlstate-alert-3'], 'recovered only, by rule', page);

    await reloadHydrated(page);
    await until(() => history(page), ['urlstate-alert-2', 'urlstate-alert-3'], 'after a reload', page);
    assert.equal(await page.getByLabel('State').inputValue(), 'recovered');
    assert.equal(await page.locator('th[aria-sort="ascending"]').count(), 1);

    await page.goBack();
    await until(() => history(page), ['urlstate-alert-2', 'urlstate-alert-1', 'urlstate-alert-3'], 'Back: every state, by rule', page);
    await page.goBack();
    await until(() => history(page), ['urlstate-alert-1', 'urlstate-alert-2', 'urlstate-alert-3'], 'Back: newest first', page);
    assert.equal(new URL(page.url()).search, '');

    // The loaded length is in the URL too: a link asking for more loads more (and fewer than asked: no button).
    await page.goto(consoleApp.url + '/alerts?limit=300&state=firing');
    await until(() => history(page), ['urlstate-alert-1'], 'a shared link', page);
    assert.equal(await page.getByRole('button', { name: 'Show more' }).count(), 0);
    await page.close();
  });
});

describe('prefetched pages hydrate', () => {
  test('dead letters, alerts and audit render on the server and hydrate without errors', async () => {
    const errors = await errorsLoading(browser, consoleApp.url, ['/topology/subscriptions/Resolver/Resolver?reason=' + REASON_B, '/admin/alerts?sort=state', '/alerts?state=recovered', '/audit']);
    assert.deepEqual(errors, []);
  });
});
