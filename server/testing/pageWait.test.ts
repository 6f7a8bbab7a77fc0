// The browser tests' reload helper, in Debian's Chromium against a loopback server: a reload whose document
// request Chromium aborts (as one did in CI) is made again; any other failure still fails the test.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { launchTestChromium, type TestBrowser } from './chromium.ts';
import { reloadPage } from './pageWait.ts';

let server: Server;
let url: string;
let browser: TestBrowser;
let served = 0;

before(async () => {
  server = createServer((_req, res) => {
    served += 1;
    res.setHeader('content-type', 'text/html');
    res.end(`<html><body><p id="n">${served}</p></body></html>`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/page`;
  browser = await launchTestChromium();
});

after(async () => {
  await browser?.close();
  await new Promise((resolve) => server?.close(resolve));
});

/** Aborts the next `count` document requests for the page the way Chromium does (net::ERR_ABORTED). */
async function abortNext(page: Page, count: number): Promise<void> {
  let left = count;
  await page.route(url, async (route) => {
    if (left > 0) {
      left -= 1;
      await route.abort('aborted');
    } else await route.continue();
  });
}

test('a reload Chromium aborts once is made again and shows the new document', async () => {
  const page = await browser.context.newPage();
  await page.goto(url);
  const first = Number(await page.locator('#n').textContent());
  await abortNext(page, 1);
  await reloadPage(page);
  assert.ok(Number(await page.locator('#n').textContent()) > first, 'the page shows a newly served document');
  await page.close();
});

test('a plain page.reload fails on the same abort (what the helper is for), and two aborts in a row still fail', async () => {
  const page = await browser.context.newPage();
  await page.goto(url);
  await abortNext(page, 1);
  await assert.rejects(page.reload(), /net::ERR_ABORTED/);
  await page.unroute(url);
  await abortNext(page, 2);
  await assert.rejects(reloadPage(page), /net::ERR_ABORTED/);
  await page.close();
});
