// Accessibility, themes, narrow screens and keyboard shortcuts of the console, in Chromium against the built app
// with the seeded demo rows (the setup of e2e/console.test.ts). axe-core runs in every page in the light theme and
// in the dark one (the system's preference, emulated), and must find no serious or critical violation; at 390 px no
// page may scroll sideways. With NIMBUS_UPDATE_SCREENSHOTS=1 the run also refreshes the screenshots that
// docs/console.md shows (docs/screenshots/).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { CONSOLE_DIR, type RunningConsole } from '../server/console.ts';
import { MessageType } from '@nimbus/sdk/contract';
import { hydrated, reloadPage, untilDataDrawn, untilInPage } from '../server/testing/pageWait.ts';
import { startSeededConsole, type SeededConsole } from '../server/testing/seededConsole.ts';
import { parkedBehind, seedEvent } from '../server/testing/seed.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const ARTIFACTS = join(CONSOLE_DIR, 'test-artifacts', 'console-a11y');
const DOCS_SHOTS = join(CONSOLE_DIR, 'docs', 'screenshots');
const AXE = join(CONSOLE_DIR, 'node_modules', 'axe-core', 'axe.min.js');
// NIMBUS_CONSOLE_DIR may name another built copy of the console (default: this repository, built on demand).
const DIR = process.env.NIMBUS_CONSOLE_DIR ?? CONSOLE_DIR;

/** Every page of the console, the dynamic ones on seeded rows. */
const PAGES = [
  '/',
  '/endpoints/billingendpoint',
  '/endpoints/billingendpoint/events/evt-failed-1',
  '/failures',
  '/monitor',
  '/flow',
  '/topology',
  '/topology/subscriptions',
  '/topology/subscriptions/billingendpoint/billingendpoint',
  '/operations',
  '/operations/reconcile',
  '/alerts',
  '/admin',
  '/admin/health',
  '/admin/alerts',
  '/admin/access',
  '/audit',
  '/search?q=evt',
];

/**
 * A failed event with a parked sibling, both with ids as long as real ones (UUIDs; the demo rows' are short), on
 * an endpoint the docs' screenshots do not show: at 390 px the event page must still fit.
 */
const LONG_IDS = { endpointId: 'shippingendpoint', sessionId: 'CUST-2026', failed: '1fcb04de-52ba-42a1-841e-ddad91a96928', parked: 'f5a8c139-e6cf-4e45-912e-5ad75d0b4c11' };
const LONG_ID_EVENT = `/endpoints/${LONG_IDS.endpointId}/events/${LONG_IDS.failed}`;

/** The pages docs/console.md shows, by file name. */
const DOC_SHOTS: Record<string, string> = {
  '/': 'endpoints',
  '/endpoints/billingendpoint': 'endpoint-events',
  '/endpoints/billingendpoint/events/evt-failed-1': 'event',
  '/monitor': 'monitor',
};

let ui: SeededConsole | undefined;
let consoleApp: RunningConsole;
let browser: BrowserContext;

before(async () => {
  ui = await startSeededConsole({
    dir: DIR,
    artifacts: 'console-a11y',
    prepare: async ({ stack, base }) => {
      const { endpointId, sessionId, failed, parked } = LONG_IDS;
      await seedEvent(stack.store, base, { endpointId, eventId: failed, sessionId, eventTypeId: 'OrderPlaced', payload: { orderId: 'ORD-10170' } }, MessageType.ErrorResponse, {
        errorText: 'Order ORD-10170: address rejected by the carrier',
        errorType: 'AddressRejectedError',
      });
      await seedEvent(stack.store, base, { endpointId, eventId: parked, sessionId, eventTypeId: 'OrderPlaced', payload: { orderId: 'ORD-10171' } }, MessageType.DeferralResponse, parkedBehind(sessionId, failed));
    },
  });
  ({ app: consoleApp, browser } = ui);
});

after(() => ui?.close());

/**
 * Opens a page and waits until it is hydrated and its data is drawn: no query in flight (untilDataDrawn) and no
 * "Loading…" left in the main content. A page that never stops fetching or saying loading is still checked, as it
 * is.
 */
async function visit(page: Page, path: string): Promise<void> {
  await page.goto(consoleApp.url + path);
  await hydrated(page);
  await untilDataDrawn(page);
  await untilInPage(page, "!/\\bloading\\b/i.test(document.querySelector('main')?.textContent ?? '')");
}

/**
 * A screenshot for the docs, small enough to keep in the repository: WebP at quality 80, drawn at 3/4 scale (960 ×
 * 600), through the DevTools protocol (Playwright writes only PNG and JPEG). Measured on these pages: a quarter
 * to a third of the PNG's bytes; JPEG at quality 80 saved only a few per cent on flat UI with text.
 */
async function docScreenshot(page: Page, path: string): Promise<void> {
  const cdp = await page.context().newCDPSession(page);
  try {
    const viewport = page.viewportSize() ?? { width: 1280, height: 800 };
    const shot = await cdp.send('Page.captureScreenshot', { format: 'webp', quality: 80, clip: { x: 0, y: 0, ...viewport, scale: 0.75 } });
    writeFileSync(path, Buffer.from(shot.data, 'base64'));
  } finally {
    await cdp.detach();
  }
}

interface AxeFinding {
  id: string;
  impact: string;
  nodes: string[];
}

async function seriousViolations(page: Page): Promise<AxeFinding[]> {
  await page.addScriptTag({ path: AXE });
  // A string: this program is compiled without DOM types.
  return page.evaluate<AxeFinding[]>(`(async () => {
    const result = await window.axe.run(document, { resultTypes: ['violations'] });
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 5).map((n) => n.target.join(' ') + ': ' + (n.failureSummary || '').split('\\n').slice(1, 2).join('')) }));
  })()`);
}

describe('console accessibility, themes and keyboard (Chromium)', () => {
  test('axe finds no serious or critical violation on any page, in the light and the dark theme', async () => {
    const problems: string[] = [];
    for (const scheme of ['light', 'dark'] as const) {
      const page = await browser.newPage();
      // The theme follows the system by default: the dark run is the system preferring dark.
      await page.emulateMedia({ colorScheme: scheme });
      await page.setViewportSize({ width: 1280, height: 800 });
      for (const path of PAGES) {
        await visit(page, path);
        const dark = await page.evaluate<boolean>("document.documentElement.classList.contains('dark')");
        assert.equal(dark, scheme === 'dark', `${path}: the theme follows the system (${scheme})`);
        for (const v of await seriousViolations(page)) problems.push(`${scheme} ${path}: ${v.impact} ${v.id}\n    ${v.nodes.join('\n    ')}`);
        const name = DOC_SHOTS[path];
        if (name !== undefined) {
          await page.screenshot({ path: join(ARTIFACTS, `${name}-${scheme}.png`) });
          if (process.env.NIMBUS_UPDATE_SCREENSHOTS === '1') {
            mkdirSync(DOCS_SHOTS, { recursive: true });
            await docScreenshot(page, join(DOCS_SHOTS, `${name}-${scheme}.webp`));
          }
        }
      }
      await page.close();
    }
    assert.deepEqual(problems, [], problems.join('\n'));
  });

  test('at 390 px no page scrolls sideways and the navigation is a menu', async () => {
    const page = await browser.newPage();
    await page.setViewportSize({ width: 390, height: 844 });
    const wide: string[] = [];
    for (const path of [...PAGES, LONG_ID_EVENT]) {
      await visit(page, path);
      const [scrollWidth, clientWidth] = await page.evaluate<[number, number]>(
        '[document.documentElement.scrollWidth, document.documentElement.clientWidth]',
      );
      if (scrollWidth > clientWidth) wide.push(`${path}: ${scrollWidth} > ${clientWidth}`);
    }
    assert.deepEqual(wide, []);
    // The long-id event's parked sibling is listed (what made the page wider than the screen), cut short if need be.
    await visit(page, LONG_ID_EVENT);
    await page.getByTestId('parked-siblings').getByText(LONG_IDS.parked).waitFor();

    await visit(page, '/');
    await page.screenshot({ path: join(ARTIFACTS, 'narrow-endpoints.png') });
    const nav = page.getByRole('navigation', { name: 'Main' });
    const menu = nav.getByRole('button', { name: 'Menu' });
    // By CSS, not by role: a folded link is hidden, and getByRole leaves hidden elements out.
    const monitorLink = nav.locator('a[href="/monitor"]');
    assert.equal(await monitorLink.isVisible(), false, 'the links are folded away');
    assert.equal(await menu.getAttribute('aria-expanded'), 'false');
    await menu.click();
    assert.equal(await menu.getAttribute('aria-expanded'), 'true');
    await page.screenshot({ path: join(ARTIFACTS, 'narrow-menu.png') });
    await page.keyboard.press('Escape');
    assert.equal(await monitorLink.isVisible(), false, 'Escape closes the menu');
    await menu.click();
    await monitorLink.click();
    await page.waitForURL(/\/monitor$/);
    assert.equal(await monitorLink.getAttribute('aria-current'), 'page');
    assert.equal(await monitorLink.isVisible(), false, 'choosing a page closes the menu');

    // From 768 px the links are in the header row and there is no menu button.
    await page.setViewportSize({ width: 800, height: 800 });
    assert.equal(await monitorLink.isVisible(), true);
    assert.equal(await menu.isVisible(), false);
    await page.close();
  });

  test('the skip link and the keyboard shortcuts, with the ? overlay', async () => {
    const page = await browser.newPage();
    await visit(page, '/');
    await page.locator('tr[data-endpoint="billingendpoint"]').waitFor();
    const focusedText = () => page.evaluate<string>("document.activeElement?.textContent?.trim() ?? ''");
    const focusedTag = () => page.evaluate<string>("document.activeElement?.tagName ?? ''");

    // The first Tab reaches the skip link, which moves focus to the main content.
    await page.keyboard.press('Tab');
    assert.equal(await focusedText(), 'Skip to content');
    await page.keyboard.press('Enter');
    assert.equal(await page.evaluate<string>("document.activeElement?.id ?? ''"), 'main');

    // The jobs drawer opens with focus inside it and gives it back on Escape.
    await page.getByTestId('jobs-button').focus();
    await page.keyboard.press('Enter');
    await page.getByTestId('jobs-drawer').waitFor();
    assert.equal(await focusedText(), 'Close');
    await page.keyboard.press('Escape');
    await page.getByTestId('jobs-drawer').waitFor({ state: 'detached' });
    assert.match(await focusedText(), /^Jobs/);

    await page.keyboard.press('?');
    const help = page.getByRole('dialog', { name: 'Keyboard shortcuts' });
    await help.waitFor();
    assert.match((await help.textContent()) ?? '', /Go to Monitor/);
    await page.keyboard.press('Escape');
    await help.waitFor({ state: 'detached' });

    // j / k move through the list's rows (focus on the row's first link, so Enter opens it).
    await page.keyboard.press('j');
    const first = await focusedText();
    await page.keyboard.press('j');
    const second = await focusedText();
    assert.notEqual(first, second);
    assert.equal(await page.locator('tr[data-kbd-current]').count(), 1);
    await page.keyboard.press('k');
    assert.equal(await focusedText(), first);

    // `/` focuses the search without typing itself; keys typed there are text, not shortcuts.
    await page.keyboard.press('/');
    const search = page.getByLabel('Search by event id or session id');
    assert.equal(await focusedTag(), 'INPUT');
    await page.keyboard.type('gm');
    assert.equal(await search.inputValue(), 'gm');
    assert.equal(new URL(page.url()).pathname, '/');
    await search.fill('');
    await page.locator('main').click({ position: { x: 5, y: 5 } });

    await page.keyboard.press('g');
    await page.keyboard.press('m');
    await page.waitForURL(/\/monitor$/);
    await page.keyboard.press('g');
    await page.keyboard.press('e');
    await page.waitForURL((u) => u.pathname === '/');

    // On an event: r and s open the confirmation of Resubmit and Skip; nothing is sent without confirming.
    await visit(page, '/endpoints/billingendpoint/events/evt-dead-1');
    await page.getByRole('button', { name: 'Skip', exact: true }).waitFor();
    await page.keyboard.press('r');
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('heading', { name: 'Resubmit this event?' }).waitFor();
    // A shortcut key inside the dialog is not a shortcut (the modal has the keyboard).
    await page.keyboard.press('s');
    assert.equal(await page.getByRole('dialog').count(), 1);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    await page.keyboard.press('s');
    await page.getByRole('dialog').getByRole('heading', { name: 'Skip this event?' }).waitFor();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    assert.equal(await page.getByRole('status').filter({ hasText: /sent/ }).count(), 0, 'nothing was sent');
    await page.close();
  });

  test('the typed confirmation is a modal dialog: Tab never reaches the page behind, Escape closes it, focus returns; a failed action shows its error inside it', async () => {
    const page = await browser.newPage();
    await visit(page, '/topology/subscriptions');
    const row = page.locator('tr[data-subscription="billingendpoint/billingendpoint"]');
    const pause = row.getByRole('button', { name: 'Pause', exact: true });
    await pause.waitFor();
    // Where focus is: in the dialog, nowhere in the page (past its last control a native modal dialog lets Tab reach
    // the browser's own UI, as every modal <dialog> does), or on the page behind, which must never happen.
    const focusPlace = () =>
      page.evaluate<string>(
        "(() => { const e = document.activeElement; if (!e || e === document.body) return 'outside the page'; return e.closest('dialog, [role=dialog]') ? 'dialog' : 'page behind'; })()",
      );
    const focusedLabel = () =>
      page.evaluate<string>(
        "(() => { const e = document.activeElement; if (!e || e === document.body) return 'the page body'; return (e.getAttribute('aria-label') ?? e.textContent?.trim() ?? '').slice(0, 60); })()",
      );

    await pause.focus();
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Pause subscription: billingendpoint/billingendpoint' });
    await dialog.waitFor();
    assert.equal(await focusedLabel(), 'Type the name to confirm', 'focus starts in the name field');
    // Round and round: Tab and Shift+Tab never reach the page behind the dialog (the confirm button is disabled until
    // the name is typed, so the dialog has two controls).
    const places = new Set<string>();
    for (const [i, key] of ['Tab', 'Tab', 'Tab', 'Tab', 'Tab', 'Shift+Tab', 'Shift+Tab', 'Shift+Tab', 'Shift+Tab'].entries()) {
      await page.keyboard.press(key);
      const place = await focusPlace();
      places.add(place);
      assert.notEqual(place, 'page behind', `key ${i + 1}, ${key}, moved focus to the page behind the dialog (on ${await focusedLabel()})`);
    }
    assert.ok(places.has('dialog'), 'Tab came back into the dialog');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    assert.equal(await page.evaluate<boolean>(`document.activeElement?.closest('tr')?.getAttribute('data-subscription') === 'billingendpoint/billingendpoint'`), true, 'focus is back in the row');
    assert.equal(await focusedLabel(), 'Pause', 'on the button that opened the dialog');

    // The action fails (the request never reaches the console): the error is in the dialog, which stays open.
    const actions = '**/api/topology/subscriptions/*/*/actions';
    await page.route(actions, (route) => route.abort('connectionreset'));
    try {
      await pause.click();
      await dialog.waitFor();
      await dialog.getByLabel('Type the name to confirm').fill('billingendpoint');
      await dialog.getByRole('button', { name: 'Pause', exact: true }).click();
      await dialog.getByRole('alert').waitFor();
      assert.equal(await page.locator('main [role=alert]').count(), 1, 'the error is shown once, in the dialog');
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await dialog.waitFor({ state: 'detached' });
      assert.equal(await page.locator('main [role=alert]').count(), 0, 'closing the dialog closes its error');
    } finally {
      await page.unroute(actions);
    }
    assert.equal((await row.locator('td').nth(1).textContent())?.trim(), 'Active', 'nothing was paused');
    await page.close();
  });

  test('the theme switch applies at once, follows the system on "System" and survives a reload before any script of the app runs', async () => {
    const page = await browser.newPage();
    await page.emulateMedia({ colorScheme: 'light' });
    await visit(page, '/');
    const isDark = () => page.evaluate<boolean>("document.documentElement.classList.contains('dark')");
    const background = () => page.evaluate<string>('getComputedStyle(document.body).backgroundColor');
    const switcher = page.getByLabel('Theme');
    assert.equal(await switcher.inputValue(), 'system');
    assert.equal(await isDark(), false);
    const lightBackground = await background();

    await switcher.selectOption('dark');
    assert.equal(await isDark(), true);
    assert.notEqual(await background(), lightBackground, 'the page turned dark');
    await page.screenshot({ path: join(ARTIFACTS, 'theme-dark.png') });

    // Reload with every script of the app blocked: only the inline script in <head> can have set the class, so
    // the first paint is already dark.
    await page.route('**/_next/static/**/*.js', (route) => route.abort());
    await reloadPage(page);
    assert.equal(await isDark(), true, 'dark before hydration');
    await page.unroute('**/_next/static/**/*.js');
    await visit(page, '/');
    assert.equal(await page.getByLabel('Theme').inputValue(), 'dark');

    await page.getByLabel('Theme').selectOption('light');
    await page.emulateMedia({ colorScheme: 'dark' });
    assert.equal(await isDark(), false, 'an explicit choice ignores the system');
    await page.getByLabel('Theme').selectOption('system');
    assert.equal(await isDark(), true, '"System" follows the system');
    await page.emulateMedia({ colorScheme: 'light' });
    assert.equal(await untilInPage(page, "!document.documentElement.classList.contains('dark')", 5000), true, 'and follows its change');
    await page.close();
  });
});
