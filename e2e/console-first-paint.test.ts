// What a fresh renderer must do before the Endpoints page's first paint (issue 20, "navigation → counts painted" in a
// new tab; docs/console.md, Performance): the page's text uses few font families, sizes and weights (each distinct
// one is a synchronous font lookup in a new renderer), and table headers have one weight. The built
// console against the embedded Service Bus emulator and Cosmos server, with Debian's Chromium, as e2e/console.test.ts.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { BrowserContext } from 'playwright-core';
import type { RunningConsole } from '../server/console.ts';
import { startSeededConsole, type SeededConsole } from '../server/testing/seededConsole.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let ui: SeededConsole | undefined;
let consoleApp: RunningConsole;
let browser: BrowserContext;

before(async () => {
  ui = await startSeededConsole();
  ({ app: consoleApp, browser } = ui);
});

after(() => ui?.close());

describe('before the first paint', () => {
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
