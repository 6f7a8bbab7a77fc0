// Error answers of the BUILT console (next build, started in this process on the embedded emulator and Cosmos):
// there Next.js bundles server/ into each route's chunk, so an error thrown by the shared Manager can come from
// another copy of http.ts than the route's. The in-process route tests share one module copy and cannot see that.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CONSOLE_DIR } from './console.ts';
import { startSeededConsole, type SeededConsole } from './testing/seededConsole.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const DIR = process.env.NIMBUS_CONSOLE_DIR ?? CONSOLE_DIR;
const EP = 'billingendpoint';

let ui: SeededConsole | undefined;

before(async () => {
  ui = await startSeededConsole({ database: 'builterrors', dir: DIR, browser: false });
});
after(() => ui?.close());

type BulkAnswer = { requested: number; failed: number; results: Array<{ eventId: string; outcome: string; status?: number; detail?: string }> };

async function post(path: string, body?: unknown): Promise<Response> {
  return fetch(ui!.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

describe('the built console maps refusals to their own status', () => {
  for (const kind of ['skip', 'resubmit'] as const) {
    test(`bulk ${kind}: each refused event reports the 409/404 its single-event route answers`, async () => {
      const completed = ui!.demo!.completed.eventId;
      // The single-event route's answer to the same unknown event: bulk must report the same status and reason.
      const single = await post(`/api/event/${kind}/${EP}/nonexist-${kind}`);
      assert.equal(single.status, 404);
      const singleDetail = ((await single.json()) as { detail: string }).detail;
      const bulk = await post(`/api/event/${kind}`, { endpointId: EP, eventIds: [completed, `nonexist-${kind}`] });
      assert.equal(bulk.status, 200);
      const r = (await bulk.json()) as BulkAnswer;
      const unknown = r.results.find((x) => x.eventId === `nonexist-${kind}`);
      assert.deepEqual([unknown?.outcome, unknown?.status], ['error', 404], JSON.stringify(r));
      assert.equal(unknown?.detail, singleDetail);
      // A Completed event can be neither skipped nor resubmitted: the Manager's 409 with its reason.
      const c = r.results.find((x) => x.eventId === completed);
      assert.deepEqual([c?.outcome, c?.status, c?.detail], ['error', 409, `${kind} is not possible for an event that is Completed`], JSON.stringify(r));
      assert.ok(!r.results.some((x) => x.status === 500), `no event answered 500: ${JSON.stringify(r)}`);
    });
  }
});
