// What a fresh renderer must do before the Endpoints page's first paint (issue 20, "navigation → counts painted" in a
// new tab; docs/console.md, Performance): the theme's inline script reads no storage (the first local-storage or
// cookie access of a new tab's renderer is a synchronous call to the browser process), and the page's text uses
// few font families, sizes and weights (each distinct one is a synchronous font lookup in a new renderer). The built
// console against the embedded Service Bus emulator and Cosmos server, with Debian's Chromium, as e2e/console.test.ts.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { BrowserContext, Page } from 'playwright-core';
import type { RunningConsole } from '../server/console.ts';
import { startSeededConsole, type SeededConsole } from '../server/testing/seededConsole.ts';
import { hydrated, reloadPage, untilInPage } from '../server/testing/pageWait.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let ui: SeededConsole | undefined;
let consoleApp: RunningConsole;
let browser: BrowserContext;

before(async () => {
  ui = await startSeededConsole();
  ({ app: consoleApp, browser } = ui);
});

after(() => ui?.close());

/** Counts, in the page, every local-storage read and cookie read made while the document is still being parsed. */
const COUNT_EARLY_READS = `(() => {
  window.__earlyReads = { storage: 0, cookie: 0 };
  const early = () => document.readyState === 'loading';
  const getItem = Storage.prototype.getItem;
  Storage.prototype.getItem = function (key) { if (early()) window.__earlyReads.storage++; return getItem.call(this, key); };
  const cookie = Object.getOwnPropertyDescriptor(Document.prototype, 'cookie');
  Object.defineProperty(Document.prototype, 'cookie', {
    configurable: true,
    get() { if (early()) window.__earlyReads.cookie++; return cookie.get.call(this); },
    set(v) { cookie.set.call(this, v); },
  });
})()`;

const isDark = (page: Page) => page.evaluate<boolean>("document.documentElement.classList.contains('dark')");

describe('before the first paint', () => {
  test('the theme comes from the cookie in the first HTML: the inline script reads no storage and no cookie', async () => {
    await browser.addCookies([{ name: 'nimbus.theme', value: 'dark', url: consoleApp.url }]);
    const page = await browser.newPage();
    try {
      await page.emulateMedia({ colorScheme: 'light' });
      await page.addInitScript(COUNT_EARLY_READS);
      // Only the page's inline scripts run: the app's own are blocked, so whatever happens came from the HTML.
      await page.route('**/_next/static/**/*.js', (route) => route.abort());
      await page.goto(consoleApp.url + '/', { waitUntil: 'domcontentloaded' });
      assert.equal(await isDark(page), true, 'the dark choice applies before any app script');
      assert.deepEqual(await page.evaluate('window.__earlyReads'), { storage: 0, cookie: 0 });
      // "System" (no cookie) follows the system's preference, still without reading storage.
      await browser.clearCookies({ name: 'nimbus.theme' });
      await page.emulateMedia({ colorScheme: 'dark' });
      await reloadPage(page);
      assert.equal(await isDark(page), true, '"System" on a dark system');
      assert.equal(await page.evaluate("document.documentElement.getAttribute('data-theme')"), 'system');
      assert.deepEqual(await page.evaluate('window.__earlyReads'), { storage: 0, cookie: 0 });
    } finally {
      await browser.clearCookies({ name: 'nimbus.theme' });
      await page.close();
    }
  });

  test('a choice kept in local storage by an earlier console becomes the cookie once the page has hydrated', async () => {
    const page = await browser.newPage();
    try {
      await page.emulateMedia({ colorScheme: 'light' });
      await page.goto(consoleApp.url + '/');
      await page.evaluate("localStorage.setItem('nimbus.theme', 'dark')");
      await reloadPage(page);
      await hydrated(page);
      assert.equal(await untilInPage(page, "document.cookie.split('; ').includes('nimbus.theme=dark')", 10_000), true, 'the cookie is written');
      assert.equal(await untilInPage(page, "document.documentElement.classList.contains('dark')", 10_000), true, 'and applied');
      // Back to "System" through the switch: cookie and storage both forget the choice.
      await page.getByLabel('Theme').selectOption('system');
      assert.equal((await browser.cookies(consoleApp.url)).some((c) => c.name === 'nimbus.theme'), false);
      assert.equal(await page.evaluate("localStorage.getItem('nimbus.theme')"), null);
    } finally {
      await browser.clearCookies({ name: 'nimbus.theme' });
      await page.close();
    }
  });

  test('the Endpoints page draws its text in few font sizes and weights; table headers are semibold', async () => {
    const page = await browser.newPage();
    try {
      await page.goto(consoleApp.url + '/');
      await page.locator('tr[data-endpoint="billingendpoint"]').waitFor();
      // Every element with text of its own that is laid out: its computed family, size, weight and style.
      const fonts = await page.evaluate<string[]>(`(() => {
        const seen = new Set();
        for (const el of document.querySelectorAll('body *')) {
          const ownText = [...el.childNodes].some((n) => n.nodeType === Node.TEXT_NODE && n.textContent.trim() !== '');
          if (!ownText || el.getClientRects().length === 0) continue;
          const s = getComputedStyle(el);
          seen.add(s.fontFamily + ' ' + s.fontSize + ' ' + s.fontWeight + ' ' + s.fontStyle);
        }
        return [...seen].sort();
      })()`);
      // Body, small and extra-small text in regular and semibold, and the page heading: 7 (13 before).
      assert.ok(fonts.length <= 7, `${fonts.length} font combinations:\n${fonts.join('\n')}`);
      const weights = await page.evaluate<string[]>(
        `[...document.querySelectorAll('[data-testid="endpoints-table"] th')].map((th) => getComputedStyle(th).fontWeight)`,
      );
      assert.ok(weights.length > 0);
      assert.deepEqual(new Set(weights), new Set(['600']), 'every header cell takes the <thead> weight');
    } finally {
      await page.close();
    }
  });
});
