// The Audit page's "Hide agent API calls" box shows the filter the log is under. It is applied at once, and the
// apply can be refused in the page (an id box holding spaces alone; "Action does not contain" too long with
// `agent.` added): before, the box stayed ticked while the URL and the log were not filtered - or, on the too-long
// refusal, the URL dropped the operator's whole "does not contain" filter. The built console against the embedded
// Cosmos server, with Debian's Chromium, as e2e/console-urlstate.test.ts; the entries written with writeAudit.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { BrowserContext, Page } from 'playwright-core';
import type { RunningConsole } from '../server/console.ts';
import { writeAudit } from '../server/audit/auditLog.ts';
import { gotoHydrated, until } from '../server/testing/pageWait.ts';
import { startSeededConsole, type SeededConsole } from '../server/testing/seededConsole.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let ui: SeededConsole | undefined;
let consoleApp: RunningConsole;
let browser: BrowserContext;

before(async () => {
  ui = await startSeededConsole({
    demoData: false,
    prepare: async ({ stack }) => {
      // One operator action and one Agent API call: the box hides the second.
      for (const action of ['resubmit', 'agent.receive'])
        await writeAudit(stack.store.database, {
          actorKind: 'user', actorId: 'oid-agent-box', actorName: 'agent-box@test', roles: 'Owner', action,
          endpointId: 'billingendpoint', eventId: `agent-box-${action}`, target: null, outcome: 'succeeded', status: 200, reason: null, details: null,
        });
    },
  });
  ({ app: consoleApp, browser } = ui);
});

after(() => ui?.close());

/** The actions the log lists, sorted. */
const actions = (page: Page) =>
  page.evaluate<string[]>("[...document.querySelectorAll('[data-testid=audit-table] tbody tr[data-audit-id] td:nth-child(4)')].map((td) => td.firstChild.textContent).sort()");
const notAction = (page: Page) => new URL(page.url()).searchParams.get('notAction');

test('a refused apply leaves the box unticked and says why; an accepted one ticks it and hides the agent', async () => {
  const page = await browser.newPage();
  try {
    await gotoHydrated(page, `${consoleApp.url}/audit`);
    await until(() => actions(page), ['agent.receive', 'resubmit'], 'both entries listed', page);
    const box = page.getByRole('checkbox', { name: 'Hide agent API calls' });
    const endpoint = page.getByRole('textbox', { name: 'Endpoint', exact: true });
    const excluded = page.getByRole('textbox', { name: 'Action does not contain', exact: true });

    // An endpoint id of spaces alone: the apply is refused beside that box, so the agent box is not ticked.
    await endpoint.fill('   ');
    await box.click();
    await until(() => endpoint.getAttribute('aria-invalid'), 'true', 'the endpoint box refused', page);
    assert.equal(await box.isChecked(), false, 'the box shows no filter: none was applied');
    assert.equal(await excluded.inputValue(), '', '"Action does not contain" is as it was');
    assert.equal(notAction(page), null, 'the URL is as it was');
    await endpoint.fill('');

    // "Action does not contain" with `agent.` added would be longer than the route takes (200): refused with the
    // reason beside the box, the operator's filter kept (before, the URL dropped it and the box stayed ticked).
    const long = `x${'y'.repeat(195)}`;
    await excluded.fill(long);
    await page.getByRole('button', { name: 'Filter', exact: true }).click();
    await page.waitForURL((u) => u.searchParams.get('notAction') === long);
    await box.click();
    const alert = page.getByRole('alert').filter({ hasText: 'Hide agent API calls' });
    await until(() => alert.count(), 1, 'the refusal said beside the box', page);
    assert.equal(await box.isChecked(), false, 'the box shows no filter: none was applied');
    assert.equal(notAction(page), long, 'the applied filter is kept');
    assert.equal(await excluded.inputValue(), long);

    // A short one: applied, the box ticked, the agent's entry gone and the refusal with it.
    await excluded.fill('zzz');
    await page.getByRole('button', { name: 'Filter', exact: true }).click();
    await page.waitForURL((u) => u.searchParams.get('notAction') === 'zzz');
    await box.click();
    await page.waitForURL((u) => u.searchParams.get('notAction') === 'zzz, agent.');
    await until(() => actions(page), ['resubmit'], 'the agent entry hidden', page);
    assert.equal(await box.isChecked(), true);
    assert.equal(await alert.count(), 0, 'the refusal is gone');
  } finally {
    await page.close();
  }
});
