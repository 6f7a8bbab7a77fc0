// A terminal write over a status row that no longer parses, and the failure-group aggregates (docs/store.md, "A
// terminal write over an unreadable row"): the old version's group is unknown, so the store rebuilds the endpoint's
// groups from its rows after the write, as `rebuildFailureGroups` (npm run recount) would. Before, the old row's group
// kept counting it until an operator's recount. On the embedded Cosmos server through the real @azure/cosmos client,
// behind the fault proxy where a test needs a fault at the wire; the row is broken past the store, as damage would be.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T } from '@nimbus/sdk/contract';
import { CONTAINERS } from './index.ts';
import { StoreTransientError } from './errors.ts';
import { readFailureGroupDocs, rebuildFailureGroups, type FailureGroupDoc } from './failureGroupAggregates.ts';
import { statusRowId } from './ids.ts';
import type { MessageStore } from './store.ts';
import type { ProxiedRequest } from './testing/faultProxy.ts';
import { msg, startProxiedStoreFixture, uniq, type ProxiedStoreFixture } from './testing/fixtures.ts';

let wire: ProxiedStoreFixture;
before(async () => {
  // `wire.store` talks to the server directly; stores opened through the proxy meet its faults.
  wire = await startProxiedStoreFixture({ storeVia: 'server' });
});
after(() => wire.close());

/** Gives the stored row an unknown status, past the store (which never writes one). */
async function breakRow(endpointId: string, eventId: string): Promise<void> {
  const item = wire.raw.database(wire.database).container(CONTAINERS.events).item(statusRowId(eventId, 's-1'), [endpointId, eventId]);
  const { resource } = await item.read<Record<string, unknown>>();
  assert.ok(resource, 'the row exists');
  await item.replace({ ...resource, status: 'Exploded' });
}

/** An endpoint's group documents as the read uses them: counts, types and hours (zeros dropped), by group. */
async function groupsOf(endpointId: string) {
  const nz = (m: Record<string, number>) => Object.fromEntries(Object.entries(m).filter(([, n]) => n !== 0).sort());
  const docs: FailureGroupDoc[] = await readFailureGroupDocs(wire.store.database, endpointId);
  return docs
    .map((d) => ({
      groupId: d.groupId,
      counts: d.counts,
      types: Object.fromEntries(Object.entries(d.types).map(([s, m]) => [s, nz(m)])),
      hours: Object.fromEntries(Object.entries(d.hours).map(([s, m]) => [s, nz(m)])),
    }))
    .filter((d) => Object.values(d.counts).some((n) => n !== 0))
    .sort((a, b) => a.groupId.localeCompare(b.groupId));
}

/** The aggregates as stored now, then what a rebuild from the rows makes of them (the rebuild rewrites them). */
async function storedAndRebuilt(endpointId: string) {
  const stored = await groupsOf(endpointId);
  await rebuildFailureGroups(wire.store.database, endpointId);
  return { stored, rebuilt: await groupsOf(endpointId) };
}

const failedIn = (groups: Awaited<ReturnType<typeof groupsOf>>) => groups.reduce((n, g) => n + g.counts.Failed, 0);

/** Writes a request and then an error response for each id: Failed rows, all in one group (same error). */
async function failedRows(store: MessageStore, endpointId: string, ids: string[]): Promise<Map<string, string>> {
  const requests = new Map<string, string>();
  for (const eventId of ids) {
    const request = msg(T.EventRequest, { endpointId, eventId });
    await store.writeStatus(request);
    requests.set(eventId, request.messageId);
  }
  for (const eventId of ids)
    await store.writeStatus(error(endpointId, eventId, requests.get(eventId)!));
  return requests;
}

const error = (endpointId: string, eventId: string, parentMessageId: string) =>
  msg(T.ErrorResponse, { endpointId, eventId, parentMessageId, errorType: 'CrmError', errorText: 'crm offline: SECRET-PAYLOAD 4111' });
const completed = (endpointId: string, eventId: string, parentMessageId: string) => msg(T.ResolutionResponse, { endpointId, eventId, parentMessageId });

// A Completed response leaves every group; a new failure enters another group, whose move lands before the rebuild
// (else the rebuild counts the row and the move adds it again).
for (const by of ['a Completed response', 'an error response with another cause'] as const) {
  test(`${by} over an unreadable Failed row: its old group no longer counts it, equal to a rebuild`, async () => {
    const ep = uniq('unreadable-group');
    const requests = await failedRows(wire.store, ep, ['a', 'b']);
    assert.equal(failedIn(await groupsOf(ep)), 2, 'both rows in the group');
    await breakRow(ep, 'a');

    const parent = requests.get('a')!;
    const next =
      by === 'a Completed response'
        ? completed(ep, 'a', parent)
        : msg(T.ErrorResponse, { endpointId: ep, eventId: 'a', parentMessageId: parent, errorType: 'TimeoutError', errorText: 'crm timed out' });
    const r = await wire.store.writeStatus(next);
    assert.equal(r.outcome === 'written' && r.row.status, by === 'a Completed response' ? 'Completed' : 'Failed');
    // Before: stored Failed 2 in the old group (the old version's membership never taken off) against a rebuild's 1.
    const { stored, rebuilt } = await storedAndRebuilt(ep);
    assert.deepEqual(stored, rebuilt);
    assert.deepEqual(
      rebuilt.map((g) => g.counts.Failed),
      by === 'a Completed response' ? [1] : [1, 1],
    );
  });
}

test('a rebuild that fails does not fail the write: one warning naming the endpoint, no payload, left to npm run recount', async () => {
  const ep = uniq('unreadable-group-fails');
  const lines: string[] = [];
  const s = await wire.openThroughProxy({ settleIntervalMs: 0, warn: (line) => lines.push(line) });
  try {
    const requests = await failedRows(s, ep, ['a', 'b']);
    await breakRow(ep, 'a');
    // Every request on the group documents refused while armed: the write's own move (Completed leaves no group) sends
    // none, so only the rebuild meets it.
    wire.proxy.inject({ status: 400, match: (q: ProxiedRequest) => q.path.includes('/colls/failureGroups/') });
    let r;
    try {
      r = await s.writeStatus(completed(ep, 'a', requests.get('a')!));
    } finally {
      wire.proxy.clear();
    }
    assert.equal(r.outcome === 'written' && r.counters, 'recounted', 'the write and its counters are done regardless');
    assert.equal(lines.length, 1, lines.join('\n'));
    assert.match(lines[0]!, new RegExp(`failure groups of endpoint ${ep} not rebuilt .*status 400.*npm run recount -- ${ep}`));
    assert.doesNotMatch(lines[0]!, /SECRET|4111|crm offline/);
    assert.equal(failedIn(await groupsOf(ep)), 2, 'left as it was');
  } finally {
    await s.close();
  }
});

test("a write of the store's own in doubt on the endpoint is settled before the rebuild: its move is not counted twice", async () => {
  const ep = uniq('unreadable-group-doubt');
  const s = await wire.openThroughProxy({ settleIntervalMs: 0 });
  try {
    const requests = await failedRows(s, ep, ['a', 'b']);
    const c = msg(T.EventRequest, { endpointId: ep, eventId: 'c' });
    await s.writeStatus(c);
    // c's error response lands, its reply is lost: in doubt, its move into the group not applied yet.
    const isRowReplace = (q: ProxiedRequest) => q.method === 'PUT' && q.path.includes('/colls/events/docs/');
    wire.proxy.inject({ status: 503, afterForward: true, times: 1, match: isRowReplace });
    try {
      await assert.rejects(s.writeStatus(error(ep, 'c', c.messageId)), StoreTransientError);
    } finally {
      wire.proxy.clear();
    }
    assert.equal(s.writesInDoubt, 1);
    await breakRow(ep, 'a');

    await s.writeStatus(completed(ep, 'a', requests.get('a')!));
    await s.flushCounters(); // settles whatever is still in doubt
    assert.equal(s.writesInDoubt, 0);
    // A rebuild before c was settled counted c's row, and the settle then added its move again: Failed 3 against 2.
    const { stored, rebuilt } = await storedAndRebuilt(ep);
    assert.deepEqual(stored, rebuilt);
    assert.equal(failedIn(rebuilt), 2, 'b and c');
  } finally {
    await s.close();
  }
});
