// Crafted continuation tokens through the paged routes (embedded stack, real Cosmos client). A token's fingerprint
// is an unkeyed hash of its query (lib/store/paging.ts), so a caller can wrap any inner Cosmos continuation around
// the right one: `{"x":1}` made Cosmos fail with an error the store did not type, answered 500 with an error-level
// log; `garbage` restarted the query and answered the first page again. Both must be the 400 a foreign token gets.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { useConsoleStack } from './testing/consoleStack.ts';
import { auditEntry } from './testing/auditEntry.ts';
import { writeAudit } from './audit/auditLog.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

useConsoleStack({
  database: 'continuationtokens',
  seed: true,
  prepare: async ({ store }) => {
    // Two audit entries, so that a page of one has a real continuation to tamper with.
    for (const action of ['skip', 'resubmit'])
      await writeAudit(store.database, auditEntry({ actorId: 'oid-op', actorName: 'op@test', action }));
  },
});

const get = (path: string) => new Request(`http://127.0.0.1:3000${path}`, { headers: { host: '127.0.0.1:3000' } });
const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64url');

/** The token with its fingerprint kept and its inner Cosmos continuation replaced: what anyone can build. */
function withInner(token: string, inner: string): string {
  const wrapped = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as { f: string; c: string };
  return b64(JSON.stringify({ f: wrapped.f, c: inner }));
}

/** Inner continuations of the right type (a string) that Cosmos never issued. */
const FORGED_INNER = ['{"x":1}', 'garbage', '[]', 'null', '{"token":"abc","range":{"min":"","max":"FF"}}'];

type Paged = { items: unknown[]; continuation: string | null };

async function expectForeign(answer: Promise<Response>, what: string): Promise<void> {
  const r = await answer;
  assert.equal(r.status, 400, `${what}: ${r.status} ${await r.clone().text()}`);
  assert.match(((await r.json()) as { detail: string }).detail, /continuation token is not one this store issued/, what);
}

describe('crafted continuation tokens', () => {
  test('GET /api/audit: a token whose inner continuation Cosmos never issued is a 400, and the real one still pages', async () => {
    const audit = await import('../app/api/audit/route.ts');
    const first = (await (await audit.GET(get('/api/audit?pageSize=1'))).json()) as Paged;
    assert.equal(first.items.length, 1);
    assert.ok(first.continuation, 'a second page exists');
    for (const inner of FORGED_INNER)
      await expectForeign(audit.GET(get(`/api/audit?pageSize=1&continuation=${withInner(first.continuation, inner)}`)), `inner ${inner}`);
    // Tokens that are no wrapper at all keep their 400 (`null` was a TypeError: a 500).
    for (const outer of ['null', '5', '{"f":1}'])
      await expectForeign(audit.GET(get(`/api/audit?pageSize=1&continuation=${b64(outer)}`)), `token ${outer}`);
    const second = await audit.GET(get(`/api/audit?pageSize=1&continuation=${first.continuation}`));
    assert.equal(second.status, 200);
    assert.equal(((await second.json()) as Paged).items.length, 1, 'the issued token reads the second page');
  });

  test("GET /api/endpoints/{id}/events: the same for an endpoint's event list (a single-partition query)", async () => {
    const events = await import('../app/api/endpoints/[endpointId]/events/route.ts');
    const params = { params: Promise.resolve({ endpointId: 'billingendpoint' }) };
    const call = (query: string) => events.GET(get(`/api/endpoints/billingendpoint/events?${query}`), params);
    const first = (await (await call('pageSize=1')).json()) as Paged;
    assert.ok(first.continuation, 'billingendpoint has more than one event');
    for (const inner of FORGED_INNER) await expectForeign(call(`pageSize=1&continuation=${withInner(first.continuation, inner)}`), `inner ${inner}`);
    assert.equal((await call(`pageSize=1&continuation=${first.continuation}`)).status, 200);
  });
});
