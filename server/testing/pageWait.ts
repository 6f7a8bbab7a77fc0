// Waiting on the console's pages in the browser tests, the one copy: polling for a value (page.waitForFunction
// would evaluate a string with eval, which the console's CSP refuses; page.evaluate and locators go through the
// DevTools protocol) and opening a page only once React has hydrated it. Positive signals with generous deadlines,
// no sleeps standing in for them: the machines running these are loaded.
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';

/** How long a wait lasts before it fails, unless told otherwise. */
export const WAIT_MS = 30_000;

/**
 * Polls until `read` gives `want` (compared as JSON); fails naming `what`, the last value seen and, given `page`,
 * the page's URL. A read that throws (an element not there yet) counts as no value.
 */
export async function until<T>(read: () => Promise<T>, want: T, what: string, page?: Page, ms = WAIT_MS): Promise<void> {
  const end = Date.now() + ms;
  let last: T | undefined;
  for (;;) {
    last = await read().catch(() => undefined);
    if (JSON.stringify(last) === JSON.stringify(want)) return;
    if (Date.now() > end) assert.fail(`${what}: wanted ${JSON.stringify(want)}, last saw ${JSON.stringify(last)}${page ? ` at ${page.url()}` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Polls a JavaScript expression in the page until it is true: true, or false after `ms` (the caller decides). */
export async function untilInPage(page: Page, expression: string, ms = WAIT_MS): Promise<boolean> {
  const end = Date.now() + ms;
  for (;;) {
    if (await page.evaluate<boolean>(expression).catch(() => false)) return true;
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Resolves once React has hydrated the page (Providers marks <html data-hydrated>). The rows are in the first HTML,
 * before the page's scripts run: a click before this is lost, or lands before Next's router has taken over the
 * history entries that Back returns to.
 */
export const hydrated = (page: Page) => page.locator('html[data-hydrated]').waitFor({ state: 'attached' });

/**
 * Polls until the page is hydrated and none of its data is being fetched (Providers marks <html data-fetching>
 * while a query is in flight, cleared after React has drawn the answer): what the page shows is its data. True,
 * or false after `ms` (a page whose polling never pauses; the caller decides).
 */
export const untilDataDrawn = (page: Page, ms = WAIT_MS) =>
  untilInPage(page, "document.documentElement.matches('[data-hydrated]:not([data-fetching])')", ms);

export async function gotoHydrated(page: Page, url: string): Promise<void> {
  await page.goto(url);
  await hydrated(page);
}

/**
 * Reloads the page; once more if Chromium aborted the reload (`net::ERR_ABORTED`) and left the page where it was.
 * Seen once in CI (console-urlstate, after Back and a keystroke): the reload's document request was cancelled while
 * Next's router was still settling the history entries of the steps before, and the old page stayed. A user
 * presses F5 again; what the tests assert is what the reloaded page shows, which the second reload still checks.
 */
export async function reloadPage(page: Page): Promise<void> {
  const before = page.url();
  try {
    await page.reload();
  } catch (error) {
    if (!String(error).includes('net::ERR_ABORTED') || page.url() !== before) throw error;
    await page.reload();
  }
}

export async function reloadHydrated(page: Page): Promise<void> {
  await reloadPage(page);
  await hydrated(page);
}
