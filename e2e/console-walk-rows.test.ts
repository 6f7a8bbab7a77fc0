// Four findings of an operator's walk through the console (issue 20), in Chromium against the built console on the
// embedded Service Bus emulator and Cosmos server (server/testing/seededConsole.ts, real clients):
// - a failed row on the Endpoint page says how many events its session holds back (parked behind it); its event id
//   and event type filters are taken exactly, spaces and all;
// - after a resubmit, the event page's parked panel says how many parked events were released, not only "Nothing
//   parked"; with more parked than its list holds (one page, 100), the panel and the dialogs say "100+";
// - the Resubmit / Skip / Complete handoff dialogs also say what becomes of the session's events parked behind other
//   events, which the release does not replay (the SDK replays from the session's replay cursor: those behind this
//   event); that more may be parked when the 200 rows they read are all this event's; Fail handoff says what stays
//   parked; a session id with spaces is read exactly; when the session's parked events wait on another event still
//   unsettled, that the session stays blocked, and when they name one settled long ago (leftovers of its replay),
//   that it is released, beside rows naming this event or not;
// - a parked event, seeded as production parks it (its blocker named only in its park reason), links to its blocker;
// - the Failures page's spark has a scale: the busiest bucket, the total and the window, read out as the chart's name;
// - a dead letter that a receiver settled on its first delivery, as the SDK does (receiver.deadLetterMessage in
//   packages/sdk/src/sessionPort.ts), reads "delivered 1×", not "delivered 0×".
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { eventBody, MessageType, Prop } from '@nimbus/sdk/contract';
import type { Page } from 'playwright-core';
import type { MessageStore } from '../lib/store/index.ts';
import { parkedBehind, seedEvent } from '../server/testing/seed.ts';
import { until, untilDataDrawn, WAIT_MS } from '../server/testing/pageWait.ts';
import { assertIdRefused } from '../server/testing/idRefusal.ts';
import { startSeededConsole, type SeededConsole } from '../server/testing/seededConsole.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const EP = 'billingendpoint';
const ORDER = { endpointId: EP, eventTypeId: 'OrderPlaced', payload: { orderId: 'ORD-W' } };
/** Every failed event here has the same cause: one failure group. */
const CAUSE = 'walk rows: card declined';

let ui: SeededConsole | undefined;

/** The event pages the Endpoint page's list links to, sorted: the rows it shows. */
const listed = (page: Page) =>
  page.evaluate<string[]>("[...document.querySelectorAll('[data-testid=events-table] tbody a[href*=\"/events/\"]')].map((a) => a.getAttribute('href')).sort()");

/** A failed event in `sessionId` with `parked` later events of its session parked behind it. */
async function failedWithParked(store: MessageStore, base: number, sessionId: string, failed: string, parked: number): Promise<void> {
  await seedEvent(store, base, { ...ORDER, sessionId, eventId: failed }, MessageType.ErrorResponse, { errorText: CAUSE });
  for (let n = 0; n < parked; n++) {
    await seedEvent(store, base, { ...ORDER, sessionId, eventId: `${failed}-parked-${n}` }, MessageType.DeferralResponse, parkedBehind(sessionId, failed));
  }
}

/** `parked` events of `sessionId` parked behind `blocker`, an event of that session not seeded itself. */
async function parkedBehindAnother(store: MessageStore, base: number, sessionId: string, blocker: string, parked: number): Promise<void> {
  for (let n = 0; n < parked; n++) {
    await seedEvent(store, base, { ...ORDER, sessionId, eventId: `${blocker}-parked-${n}` }, MessageType.DeferralResponse, parkedBehind(sessionId, blocker));
  }
}

/**
 * The list route's reads of the parked rows of `sessionId` (or any session id it begins) that `page` makes from now
 * on; not the reads of one named event (`eventId=`), which the dialogs make of the events those rows name.
 */
function sessionReadsOf(page: Page, sessionId: string): string[] {
  const urls: string[] = [];
  page.on('request', (r) => {
    const url = r.url();
    if (url.includes(`/api/endpoints/${EP}/events?`) && url.includes(`sessionId=${sessionId}`) && !new URL(url).searchParams.has('eventId')) urls.push(url);
  });
  return urls;
}

/** The list route's reads of one named event (`eventId=`) that `page` makes from now on: the dialogs' blocker reads. */
function namedEventReadsOf(page: Page): string[] {
  const urls: string[] = [];
  page.on('request', (r) => {
    if (r.url().includes(`/api/endpoints/${EP}/events?`) && new URL(r.url()).searchParams.has('eventId')) urls.push(r.url());
  });
  return urls;
}

/**
 * A leftover of a replay, as production leaves one: `settled` of `sessionId` skipped, and `lost` parked behind it,
 * whose parked copy was lost, so the replay skipped it (a ReplayGap notice) and its row stays Deferred naming `settled`.
 */
async function settledWithLeftover(store: MessageStore, base: number, sessionId: string, settled: string, lost: string): Promise<void> {
  await seedEvent(store, base, { ...ORDER, sessionId, eventId: settled }, MessageType.SkipResponse);
  await seedEvent(store, base, { ...ORDER, sessionId, eventId: lost }, MessageType.DeferralResponse, parkedBehind(sessionId, settled));
}

/** The dialogs' line on one row parked in the session naming `settled`, an event already settled. */
const leftoverLine = (settled: string) =>
  `1 more parked in this session names event ${settled}, already settled: left over from its replay, where a parked copy lost on the way was skipped (a ReplayGap notice), or, if that replay is still under way, being replayed (a copy that meets a blocked session parks behind its blocker and follows it); a leftover stays Deferred and is not replayed.`;

/**
 * Opens `command`'s dialog on the event page `page`, waits until its words on the session are final (its reads are
 * in: data-session-parked="read"), and returns its first paragraph and its line on the session's other parked
 * events, then cancels it.
 */
async function sessionWords(page: Page, command: string): Promise<{ lead: string; others: string[] }> {
  await page.getByRole('button', { name: command, exact: true }).click();
  const dialog = page.getByRole('dialog');
  await dialog.waitFor();
  await dialog.locator('[data-session-parked="read"]').waitFor({ state: 'attached' });
  const words = { lead: (await dialog.locator('p').first().textContent()) ?? '', others: await dialog.getByTestId('session-parked-others').allTextContents() };
  await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
  await dialog.waitFor({ state: 'detached' });
  return words;
}

before(async () => {
  ui = await startSeededConsole({
    demoData: false,
    artifacts: 'walk-rows',
    prepare: async ({ stack, base }) => {
      await failedWithParked(stack.store, base, 'WR-HELD', 'wr-held', 3);
      await failedWithParked(stack.store, base, 'WR-ALONE', 'wr-alone', 0);
    },
  });
});

after(() => ui?.close());

describe('the Endpoint page', () => {
  test('a failed row says how many events its session holds back; one with nothing parked says nothing', async () => {
    const page = await ui!.open(`/endpoints/${EP}?status=Failed`);
    try {
      const row = (eventId: string) => page.getByTestId('events-table').locator('tbody tr', { has: page.getByRole('link', { name: eventId, exact: true }) });
      await row('wr-held').waitFor();
      assert.equal((await row('wr-held').getByTestId('holds-back').textContent())?.trim(), 'holds back 3');
      assert.equal(await row('wr-alone').getByTestId('holds-back').count(), 0, 'nothing parked behind it: no "holds back 0"');
    } finally {
      await page.close();
    }
  });

  test('the event id box and the event type filter are taken exactly: "wr-exact " lists that event, not "wr-exact"', async () => {
    // Event ids are whatever publishers set and type ids are matched the same way; the page's URL state trimmed both,
    // so the filter typed or linked as "wr-exact " listed "wr-exact". Completed events: no failure group changes.
    const store = ui!.stack.store;
    const base = Date.now();
    await seedEvent(store, base, { ...ORDER, sessionId: 'WR-EXACT', eventId: 'wr-exact', eventTypeId: 'WalkRows.Exact' }, MessageType.ResolutionResponse);
    await seedEvent(store, base, { ...ORDER, sessionId: 'WR-EXACT', eventId: 'wr-exact ', eventTypeId: 'WalkRows.Exact ' }, MessageType.ResolutionResponse);
    const plain = `/endpoints/${EP}/events/wr-exact`;
    const spaced = `/endpoints/${EP}/events/wr-exact%20`;

    const page = await ui!.open(`/endpoints/${EP}?eventId=wr-exact`);
    try {
      await until(() => listed(page), [plain], 'the plain id listed', page);
      const box = page.getByRole('textbox', { name: 'Event id', exact: true });
      await box.fill('wr-exact ');
      await page.getByRole('button', { name: 'Apply', exact: true }).click();
      await page.waitForURL((u) => u.searchParams.get('eventId') === 'wr-exact ');
      await until(() => listed(page), [spaced], 'the id with its space listed, not the plain one', page);
      assert.equal(await box.inputValue(), 'wr-exact ', 'the box keeps the id as typed');
    } finally {
      await page.close();
    }

    const typed = await ui!.open(`/endpoints/${EP}?${new URLSearchParams({ eventTypeId: 'WalkRows.Exact ' })}`);
    try {
      await until(() => listed(typed), [spaced], 'the type with its space listed, not the plain one', typed);
      assert.equal(await typed.getByLabel('Event type').inputValue(), 'WalkRows.Exact ', 'the box shows the applied type, not "any"');
    } finally {
      await typed.close();
    }
  });

  test('an id the list does not take as a filter (spaces alone) is not applied: the box says why, the URL and the list stay as they were', async () => {
    // The URL state reads such an id as no filter, so applying it listed the whole endpoint while the box still
    // showed the id (and "Select all matching" would have acted on every event of the endpoint).
    const page = await ui!.open(`/endpoints/${EP}?eventId=wr-held`);
    try {
      const one = [`/endpoints/${EP}/events/wr-held`];
      await until(() => listed(page), one, 'the filtered list', page);
      // Every list read from now on; none may leave the event id out.
      const reads: string[] = [];
      page.on('request', (r) => {
        if (r.url().includes(`/api/endpoints/${EP}/events?`) || r.url().endsWith(`/api/endpoints/${EP}/events`)) reads.push(r.url());
      });
      const box = page.getByRole('textbox', { name: 'Event id', exact: true });
      await assertIdRefused(page, box, 'Apply', '   ', 'an event id of spaces alone is not a filter; leave it empty for every event');

      // A good id then applies (a positive signal: any read the refused Apply started came before this one's).
      await box.fill('wr-alone');
      await page.getByRole('button', { name: 'Apply', exact: true }).click();
      await page.waitForURL((u) => u.searchParams.get('eventId') === 'wr-alone');
      await until(() => listed(page), [`/endpoints/${EP}/events/wr-alone`], 'the good id applied', page);
      assert.equal(await box.getAttribute('aria-invalid'), null, 'the error is gone');
      assert.equal(await box.getAttribute('maxlength'), '128', 'an id longer than the list takes cannot be typed');
      assert.deepEqual(
        // (The list's own 10 s refresh of the still-applied wr-held is a right read; only one without an id is wrong.)
        reads.filter((r) => (new URL(r).searchParams.get('eventId') ?? '').trim() === ''),
        [],
        'no list read without the id the box showed',
      );
    } finally {
      await page.close();
    }

    // Such an id in the address bar: the list is the whole endpoint, and so the box is empty, not showing it.
    const linked = await ui!.open(`/endpoints/${EP}?eventId=%20%20%20&status=Failed`);
    try {
      await until(async () => (await listed(linked)).includes(`/endpoints/${EP}/events/wr-alone`), true, 'the list unfiltered by the id', linked);
      assert.equal(await linked.getByRole('textbox', { name: 'Event id', exact: true }).inputValue(), '', 'the box shows what is applied');
    } finally {
      await linked.close();
    }
  });
});

describe('the event page after a resubmit', () => {
  test('the parked panel says how many parked events the resubmit released', async () => {
    await failedWithParked(ui!.stack.store, Date.now(), 'WR-RELEASE', 'wr-release', 3);
    const page = await ui!.open(`/endpoints/${EP}/events/wr-release`);
    try {
      await page.getByTestId('parked-siblings').waitFor();
      assert.equal(await page.getByTestId('parked-siblings').locator('li').count(), 3);
      await page.getByRole('button', { name: 'Resubmit', exact: true }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Resubmit', exact: true }).click();
      await page.getByRole('dialog').waitFor({ state: 'detached' });
      // The command went to the broker (the page says so); the endpoint's answers are recorded as the Resolver
      // records them: the event completes, then the three parked behind it are replayed and complete.
      await page.getByRole('status').filter({ hasText: 'Resubmit sent' }).waitFor();
      const store = ui!.stack.store;
      // Answered now, after the resubmit was sent (the seed enqueues nothing after now).
      const answeredAt = Date.now();
      await seedEvent(store, answeredAt, { ...ORDER, sessionId: 'WR-RELEASE', eventId: 'wr-release' }, MessageType.ResolutionResponse);
      for (let n = 0; n < 3; n++) {
        await seedEvent(store, answeredAt, { ...ORDER, sessionId: 'WR-RELEASE', eventId: `wr-release-parked-${n}` }, MessageType.ResolutionResponse);
      }
      // The panel's lines: what was released, over "nothing parked" (which alone read as if nothing ever was).
      const panel = page.getByRole('heading', { name: /^Parked behind this event/ }).locator('xpath=..');
      await until(
        () => panel.locator('p').allTextContents(),
        ['3 parked events released after the resubmit.', 'Nothing parked behind this event now.'],
        'the parked panel after the release',
        page,
        WAIT_MS * 2,
      );
      await page.screenshot({ path: `${ui!.artifacts}/released.png` });
    } finally {
      await page.close();
    }
  });
});

describe('the event page with more parked than its list holds', () => {
  test('the parked panel and the Resubmit / Skip dialogs say "100+" for 205 parked, not the list\'s 100; the dialogs say more of the session may follow', async () => {
    // More than the dialogs' session read counts (200): the rows it counts are all parked behind this event, and the
    // 201st, seen, says more are parked - behind this event or another, the read cannot tell.
    await failedWithParked(ui!.stack.store, Date.now(), 'WR-CAPPED', 'wr-capped', 205);
    const page = await ui!.open(`/endpoints/${EP}/events/wr-capped`);
    const sessionReads = sessionReadsOf(page, 'WR-CAPPED');
    try {
      await page.getByTestId('parked-siblings').waitFor();
      assert.equal(await page.getByTestId('parked-siblings').locator('li').count(), 100, 'the list is one page');
      assert.equal(await page.getByRole('heading', { name: 'Parked behind this event (100+)', exact: true }).count(), 1, 'the panel title');
      for (const command of ['Resubmit', 'Skip']) {
        await page.getByRole('button', { name: command, exact: true }).click();
        const dialog = page.getByRole('dialog');
        await dialog.waitFor();
        assert.match((await dialog.locator('p').first().textContent()) ?? '', /session WR-CAPPED is released and its 100\+ parked events follow\.$/, `the ${command} dialog`);
        await dialog.locator('[data-session-parked="read"]').waitFor({ state: 'attached' });
        assert.deepEqual(
          await dialog.getByTestId('session-parked-others').allTextContents(),
          ['More events may be parked in this session than were read; those parked behind this event follow it, and so do any still being replayed.'],
          `the ${command} dialog`,
        );
        await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
        await dialog.waitFor({ state: 'detached' });
      }
      // Per opening, a full page, then the one row beyond it that its continuation promised.
      const pageSizes = sessionReads.map((u) => new URL(u).searchParams.get('pageSize'));
      assert.deepEqual(pageSizes, ['200', '1', '200', '1'], sessionReads.join(', '));
    } finally {
      await page.close();
    }
  });
});

describe('the Resubmit / Skip dialogs of a session that holds other parked events', () => {
  test('they say how many follow this event, and of the rows naming another event, not known, words true either way (not "will also be replayed"), from one read per opening', async () => {
    // Two parked behind wr-mixed, three parked behind another event of the same session, of which the session holds
    // no row (so whether it is settled is not known): the SDK's release replays from the session's replay cursor
    // (packages/sdk/src/decide.ts drain), which the three either wait behind (their blocker unsettled) or were left
    // behind by (their blocker's replay lost them), so they are not said to follow.
    const { store } = ui!.stack;
    const base = Date.now();
    await failedWithParked(store, base, 'WR-MIXED', 'wr-mixed', 2);
    await parkedBehindAnother(store, base, 'WR-MIXED', 'wr-mixed-other', 3);
    const page = await ui!.open(`/endpoints/${EP}/events/wr-mixed`);
    const sessionReads = sessionReadsOf(page, 'WR-MIXED');
    try {
      await page.getByTestId('parked-siblings').waitFor();
      assert.equal(await page.getByTestId('parked-siblings').locator('li').count(), 2, 'the panel lists what is parked behind this event');
      for (const command of ['Resubmit', 'Skip']) {
        await page.getByRole('button', { name: command, exact: true }).click();
        const dialog = page.getByRole('dialog');
        await dialog.waitFor();
        assert.match((await dialog.locator('p').first().textContent()) ?? '', /session WR-MIXED is released and its 2 parked events follow\.$/, `the ${command} dialog`);
        await dialog.locator('[data-session-parked="read"]').waitFor({ state: 'attached' });
        assert.deepEqual(
          await dialog.getByTestId('session-parked-others').allTextContents(),
          [
            '3 more parked in this session name event wr-mixed-other, not this one: they wait on wr-mixed-other if it is still unsettled, or, if it is settled, are left over from its replay (not replayed) or being replayed.',
          ],
          `the ${command} dialog`,
        );
        await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
        await dialog.waitFor({ state: 'detached' });
      }
      assert.equal(sessionReads.length, 2, `one read of the session's parked events per opening: ${sessionReads.join(', ')}`);
    } finally {
      await page.close();
    }
  });

  test('a session id with spaces ("WR-SPACE ") is read exactly: its own parked events are counted, not those of "WR-SPACE", and the Endpoint page filters on it', async () => {
    // A list route that trimmed its session filter answered for "WR-SPACE " with the rows of "WR-SPACE"; the dialogs
    // then refused to read such a session at all.
    const { store } = ui!.stack;
    const base = Date.now();
    await failedWithParked(store, base, 'WR-SPACE ', 'wr-space', 1);
    await parkedBehindAnother(store, base, 'WR-SPACE ', 'wr-space-other', 2);
    await parkedBehindAnother(store, base, 'WR-SPACE', 'wr-space-neighbour', 3);
    const page = await ui!.open(`/endpoints/${EP}/events/wr-space`);
    const sessionReads = sessionReadsOf(page, 'WR-SPACE');
    try {
      await page.getByTestId('parked-siblings').waitFor();
      await page.getByRole('button', { name: 'Resubmit', exact: true }).click();
      const dialog = page.getByRole('dialog');
      await dialog.waitFor();
      await dialog.locator('[data-session-parked="read"]').waitFor({ state: 'attached' });
      assert.match((await dialog.locator('p').first().textContent()) ?? '', /session WR-SPACE {2}is released and its 1 parked event follows\.$/);
      assert.deepEqual(await dialog.getByTestId('session-parked-others').allTextContents(), [
        '2 more parked in this session name event wr-space-other, not this one: they wait on wr-space-other if it is still unsettled, or, if it is settled, are left over from its replay (not replayed) or being replayed.',
      ]);
      await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
      await dialog.waitFor({ state: 'detached' });
      assert.deepEqual(sessionReads.map((u) => new URL(u).searchParams.get('sessionId')), ['WR-SPACE '], 'one read, of the session exactly');
    } finally {
      await page.close();
    }
    // The Endpoint page's filter, from its URL: the rows of "WR-SPACE " (the failed one and its three parked), and the
    // form shows the id as it is.
    const list = await ui!.open(`/endpoints/${EP}?${new URLSearchParams({ sessionId: 'WR-SPACE ' })}`);
    try {
      const rows = list.getByTestId('events-table').locator('tbody tr');
      await rows.filter({ hasText: 'wr-space-other-parked-1' }).waitFor();
      const ids = (await rows.locator('a[href*="/events/"]').allTextContents()).map((t) => t.trim()).sort();
      assert.deepEqual(ids, ['wr-space', 'wr-space-other-parked-0', 'wr-space-other-parked-1', 'wr-space-parked-0']);
      assert.equal(await list.getByRole('textbox', { name: 'Session id', exact: true }).inputValue(), 'WR-SPACE ');
    } finally {
      await list.close();
    }
  });

  test('when the session\'s parked events wait on another event, the dialogs say the session stays blocked and nothing is replayed', async () => {
    // wr-aside failed, but the session's three parked events name wr-aside-blocker, which has failed too and is not
    // settled: releasing wr-aside replays none.
    const { store } = ui!.stack;
    const base = Date.now();
    await failedWithParked(store, base, 'WR-ASIDE', 'wr-aside', 0);
    await seedEvent(store, base, { ...ORDER, sessionId: 'WR-ASIDE', eventId: 'wr-aside-blocker' }, MessageType.ErrorResponse, { errorText: CAUSE });
    await parkedBehindAnother(store, base, 'WR-ASIDE', 'wr-aside-blocker', 3);
    const page = await ui!.open(`/endpoints/${EP}/events/wr-aside`);
    try {
      await page.getByText('Nothing parked behind this event.').waitFor();
      for (const command of ['Resubmit', 'Skip']) {
        const words = await sessionWords(page, command);
        assert.match(
          words.lead,
          /session WR-ASIDE stays blocked: its 3 parked events wait on event wr-aside-blocker, not this one, so none is replayed\.$/,
          `the ${command} dialog`,
        );
        assert.deepEqual(words.others, [], `the ${command} dialog: no "will also be replayed"`);
      }
    } finally {
      await page.close();
    }
  });

  test('when the parked rows name an event settled long ago, they are leftovers: the dialogs say the session is released', async () => {
    // The review's case: wr-gone parked behind wr-settled, its parked copy was lost, wr-settled was skipped (the
    // replay skipped wr-gone with a ReplayGap notice and left its row Deferred naming wr-settled); later wr-late failed
    // and blocks the session. Its dialogs must not say the session waits on wr-settled.
    const { store } = ui!.stack;
    const base = Date.now();
    await settledWithLeftover(store, base, 'WR-SETTLED', 'wr-settled', 'wr-gone');
    await failedWithParked(store, base, 'WR-SETTLED', 'wr-late', 0);
    const page = await ui!.open(`/endpoints/${EP}/events/wr-late`);
    const blockerReads = namedEventReadsOf(page);
    try {
      await page.getByText('Nothing parked behind this event.').waitFor();
      for (const command of ['Resubmit', 'Skip']) {
        // Final once the session read and the read of the event its rows name are both in.
        const words = await sessionWords(page, command);
        assert.match(words.lead, /session WR-SETTLED is released and nothing is parked behind it\.$/, `the ${command} dialog`);
        assert.deepEqual(words.others, [leftoverLine('wr-settled')], `the ${command} dialog: the leftover said as such, not "will also be replayed"`);
      }
      // One small read of the named event per opening, by its exact id, in the session.
      assert.deepEqual(
        blockerReads.map((u) => [new URL(u).searchParams.get('eventId'), new URL(u).searchParams.get('sessionId')]),
        [
          ['wr-settled', 'WR-SETTLED'],
          ['wr-settled', 'WR-SETTLED'],
        ],
      );
    } finally {
      await page.close();
    }
  });

  test('rows naming this event and a row naming another event settled long ago: the release replays the first, the other is a leftover, not "will also be replayed"', async () => {
    // wr-past was skipped and its replay lost wr-past-lost's parked copy (skipped with a ReplayGap notice, its row
    // left Deferred naming wr-past); later wr-now failed and two events parked behind it. Releasing wr-now replays
    // from the session's replay cursor, past wr-past-lost's sequence: the two follow, wr-past-lost does not.
    const { store } = ui!.stack;
    const base = Date.now();
    await settledWithLeftover(store, base, 'WR-GAPPED', 'wr-past', 'wr-past-lost');
    await failedWithParked(store, base, 'WR-GAPPED', 'wr-now', 2);
    const page = await ui!.open(`/endpoints/${EP}/events/wr-now`);
    const blockerReads = namedEventReadsOf(page);
    try {
      await page.getByTestId('parked-siblings').waitFor();
      for (const command of ['Resubmit', 'Skip']) {
        const words = await sessionWords(page, command);
        assert.match(words.lead, /session WR-GAPPED is released and its 2 parked events follow\.$/, `the ${command} dialog`);
        assert.deepEqual(words.others, [leftoverLine('wr-past')], `the ${command} dialog: the row naming wr-past is not counted as replayed by this release`);
      }
      assert.deepEqual(
        blockerReads.map((u) => new URL(u).searchParams.get('eventId')),
        ['wr-past', 'wr-past'],
        'one read of the event the other row names per opening',
      );
    } finally {
      await page.close();
    }
  });

  test('a session whose parked events all wait on this event gets no such line', async () => {
    const page = await ui!.open(`/endpoints/${EP}/events/wr-held`);
    try {
      await page.getByTestId('parked-siblings').waitFor();
      await page.getByRole('button', { name: 'Resubmit', exact: true }).click();
      const dialog = page.getByRole('dialog');
      await dialog.waitFor();
      // The read's end is signalled by the dialog (data-session-parked="read"), not waited out.
      await dialog.locator('[data-session-parked="read"]').waitFor({ state: 'attached' });
      assert.equal(await dialog.getByTestId('session-parked-others').count(), 0);
      await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
    } finally {
      await page.close();
    }
  });
});

describe('the handoff dialogs', () => {
  test('Complete handoff says what follows, as Resubmit / Skip do; Fail handoff says what stays parked', async () => {
    // A Pending handoff with two events parked behind it and three behind another event of its session.
    const { store } = ui!.stack;
    const base = Date.now();
    await seedEvent(store, base, { ...ORDER, sessionId: 'WR-HANDOFF', eventId: 'wr-handoff' }, MessageType.PendingHandoffResponse, {
      handoffReason: 'Ledger import queued',
      externalJobId: 'JOB-WR',
      expectedBy: new Date(base + 3_600_000).toISOString(),
    });
    for (let n = 0; n < 2; n++) {
      await seedEvent(store, base, { ...ORDER, sessionId: 'WR-HANDOFF', eventId: `wr-handoff-parked-${n}` }, MessageType.DeferralResponse, parkedBehind('WR-HANDOFF', 'wr-handoff'));
    }
    await parkedBehindAnother(store, base, 'WR-HANDOFF', 'wr-handoff-other', 3);
    const page = await ui!.open(`/endpoints/${EP}/events/wr-handoff`);
    try {
      await page.getByTestId('parked-siblings').waitFor();
      const expected = {
        'Complete handoff': {
          lead: /^The external work is done: the event becomes Completed; session WR-HANDOFF is released and its 2 parked events follow\.$/,
          others:
            '3 more parked in this session name event wr-handoff-other, not this one: they wait on wr-handoff-other if it is still unsettled, or, if it is settled, are left over from its replay (not replayed) or being replayed.',
        },
        'Fail handoff': {
          lead: /^The event becomes Failed with this reason; session WR-HANDOFF stays blocked until a resubmit or skip and its 2 parked events stay parked\.$/,
          others: '3 more parked in this session (behind other events) stay parked too.',
        },
      };
      for (const [command, want] of Object.entries(expected)) {
        await page.getByRole('button', { name: command, exact: true }).click();
        const dialog = page.getByRole('dialog');
        await dialog.waitFor();
        await dialog.locator('[data-session-parked="read"]').waitFor({ state: 'attached' });
        assert.match(((await dialog.locator('p').first().textContent()) ?? '').replace(/\s+/g, ' ').trim(), want.lead, `the ${command} dialog`);
        assert.deepEqual(await dialog.getByTestId('session-parked-others').allTextContents(), [want.others], `the ${command} dialog`);
        await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
        await dialog.waitFor({ state: 'detached' });
      }
    } finally {
      await page.close();
    }
  });
});

describe('a parked event', () => {
  test('links to the event it is parked behind, named only in its park reason (no blockedBy, as the Resolver writes it)', async () => {
    const page = await ui!.open(`/endpoints/${EP}/events/wr-held-parked-0`);
    try {
      const link = page.getByTestId('blocked-by');
      await link.waitFor();
      assert.equal((await link.textContent())?.trim(), 'wr-held');
      assert.equal(await link.getAttribute('href'), `/endpoints/${EP}/events/wr-held`);
      assert.match((await link.locator('xpath=..').textContent()) ?? '', /^Parked behind wr-held, which blocks session WR-HELD\.$/);
    } finally {
      await page.close();
    }
  });
});

describe('the Failures page', () => {
  test("a group's spark states its scale: the busiest hour, the total and the window, also as the chart's name", async () => {
    const page = await ui!.open('/failures');
    try {
      const row = page.getByTestId('failure-groups').locator('tr', { hasText: CAUSE });
      const chart = row.locator('svg');
      await chart.waitFor();
      assert.ok(await untilDataDrawn(page), 'the groups are drawn');
      // Every event of the group failed in the last minutes: all of them are in the spark.
      const count = Number((await row.getByTestId('group-count').textContent())?.replace(/\D/g, ''));
      assert.ok(count >= 2, `the group's events: ${count}`);
      // The chart's name is the whole reading.
      const name = (await chart.getAttribute('aria-label')) ?? '';
      const read = /^Arrivals per hour over 24 h: (\d+) failed events in all, at most (\d+) in one hour\.$/.exec(name);
      assert.ok(read, `the chart's name: ${name}`);
      assert.equal(Number(read[1]), count, 'the total is the group\'s events');
      const max = Number(read[2]);
      assert.ok(max >= Math.ceil(count / 2) && max <= count, `the busiest hour (the events are at most two hours apart): ${max} of ${count}`);
      assert.equal(await chart.getAttribute('role'), 'img');
      // And on screen: the top tick's value and the total with its window.
      assert.equal((await row.getByTestId('spark-max').textContent())?.trim(), `${max}/h`);
      assert.equal((await row.getByTestId('spark-total').textContent())?.trim(), `${count} in 24 h`);
      await row.screenshot({ path: `${ui!.artifacts}/spark.png` });
    } finally {
      await page.close();
    }
  });
});

describe('the dead-letter list', () => {
  test('a dead letter settled by its receiver on the first delivery, as the SDK does, reads "delivered 1×"', async () => {
    const client = ui!.stack.serviceBus.client;
    const messageId = randomUUID();
    const sessionId = `wr-dl-${randomUUID().slice(0, 8)}`;
    const sender = client.createSender(EP);
    await sender.sendMessages({
      messageId,
      sessionId,
      body: Buffer.from(eventBody('OrderPlaced', { orderId: 'ORD-DL' })),
      applicationProperties: { [Prop.To]: EP, [Prop.MessageType]: MessageType.EventRequest, [Prop.EventId]: 'wr-dl', [Prop.EventTypeId]: 'OrderPlaced' },
    });
    await sender.close();
    // The SDK's settlement of a permanent failure (sessionPort.ts): deadLetterMessage on the delivery it failed on.
    const receiver = await client.acceptSession(EP, EP, sessionId);
    try {
      const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 30_000 });
      assert.equal(String(m?.messageId), messageId, 'the message, on its first delivery');
      await receiver.deadLetterMessage(m!, { deadLetterReason: 'Permanent failure: PermanentFailureError: card declined', deadLetterErrorDescription: 'card declined' });
    } finally {
      await receiver.close();
    }

    const page = await ui!.open(`/topology/subscriptions/${EP}/${EP}`);
    try {
      const entry = page.locator(`[data-dead-letter="${messageId}"]`);
      await entry.waitFor();
      const delivered = entry.getByText(/^delivered .*×$/);
      assert.equal((await delivered.textContent())?.trim(), 'delivered 1×');
      assert.match((await delivered.getAttribute('title')) ?? '', /^1 time received under a lock/);
      await entry.screenshot({ path: `${ui!.artifacts}/dead-letter.png` });
    } finally {
      await page.close();
    }
  });
});
