// The event page's `r` / `s` shortcuts press the Resubmit / Skip buttons, which are shown only to a caller allowed
// to use them (useCan, from GET /api/me). A key pressed right after hydration must not be lost while the
// permissions are still on their way: the page's server component puts them in the first HTML (prefetch), so the
// buttons are there from the first render. To make "still on their way" certain rather than a race, the browser's
// own GET /api/me is held until the key has been pressed.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startSeededConsole, type SeededConsole } from '../server/testing/seededConsole.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let ui: SeededConsole | undefined;

before(async () => {
  ui = await startSeededConsole({ artifacts: 'console-shortcuts-early' });
});

after(() => ui?.close());

test('the event page\'s first HTML has the Resubmit and Skip buttons (permissions prefetched)', async () => {
  const html = await (await fetch(`${ui!.url}/endpoints/billingendpoint/events/evt-dead-1`)).text();
  assert.match(html, />Resubmit</);
  assert.match(html, />Skip</);
});

test('r pressed at once after hydration opens the Resubmit confirmation, even before /api/me answers', async () => {
  const page = await ui!.browser.newPage();
  let release!: () => void;
  const pressed = new Promise<void>((resolve) => (release = resolve));
  await page.route('**/api/me', async (route) => {
    await pressed;
    await route.continue();
  });
  try {
    await page.goto(`${ui!.url}/endpoints/billingendpoint/events/evt-dead-1`);
    await page.locator('html[data-hydrated]').waitFor({ state: 'attached' });
    await page.keyboard.press('r');
    release();
    // The permissions have arrived (prefetched, or the held request answered): the buttons are shown either way.
    await page.getByRole('button', { name: 'Skip', exact: true }).waitFor();
    await page.getByRole('dialog').getByRole('heading', { name: 'Resubmit this event?' }).waitFor({ timeout: 10_000 });
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    assert.equal(await page.getByRole('status').filter({ hasText: /sent/ }).count(), 0, 'nothing was sent');
  } finally {
    release();
    await page.close();
  }
});
