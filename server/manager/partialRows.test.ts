// The Manager decides a fresh claim only on an event's whole set of rows (real stack: embedded broker and Cosmos).
// The rows query leaves out rows that no longer parse and stops at EVENT_ROWS_LIMIT; an abandoned claim of the same
// command hidden that way (corrupt, or older than 100 newer rows of the event) must not let the Manager claim
// another session's Failed row and send a second command: it answers 409 and claims nothing.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType } from '@nimbus/sdk/contract';
import { msg, uniq } from '../../lib/store/testing/fixtures.ts';
import { statusRowId } from '../../lib/store/ids.ts';
import { CONTAINERS, EVENT_ROWS_LIMIT } from '../../lib/store/store.ts';
import type { StatusRow } from '../../lib/store/index.ts';
import { HttpError } from '../http.ts';
import { startConsoleTestStack, type ConsoleTestStack } from '../testing/stack.ts';
import { claimWrite, Manager } from './manager.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const EP = 'billingendpoint';
let stack: ConsoleTestStack;
let manager: Manager;

before(async () => {
  stack = await startConsoleTestStack('partialrows');
  manager = new Manager({ store: stack.store, client: stack.serviceBus.client });
});
after(async () => {
  await manager?.close();
  await stack?.close();
});

async function failedRow(eventId: string, sessionId: string): Promise<StatusRow> {
  const w = await stack.store.writeStatus(msg(MessageType.ErrorResponse, { endpointId: EP, eventId, sessionId, errorText: 'boom' }));
  assert.ok(w.outcome === 'written');
  return w.row;
}

/** A skip claim left by a console that died before sending it (the Manager's own claim write). */
async function abandonedSkipClaim(row: StatusRow): Promise<void> {
  const w = await stack.store.writeStatus(claimWrite({ kind: 'skip' }, row, row.lastMessageId, row.eventTypeId, undefined), { lastMessageId: row.lastMessageId, status: row.status });
  assert.ok(w.outcome === 'written');
}

/** The skip is refused 409 with `detail`, and `untouched` is still the Failed row it was (nothing claimed or sent). */
async function refusedAndUntouched(eventId: string, detail: RegExp, untouched: StatusRow): Promise<void> {
  await assert.rejects(manager.execute(EP, eventId, { kind: 'skip' }, 'tester'), (e: unknown) => {
    assert.ok(e instanceof HttpError, String(e));
    assert.equal(e.status, 409, e.detail);
    assert.match(e.detail, detail);
    return true;
  });
  const after = await stack.store.getStatusRow(EP, eventId, untouched.sessionId);
  assert.equal(after?.status, 'Failed');
  assert.equal(after?.lastMessageId, untouched.lastMessageId, 'not claimed');
}

describe('Manager: a fresh claim only on the whole set of rows', () => {
  test('a claim row that no longer parses: 409 naming it, no claim of the other session', async () => {
    const eventId = uniq('corrupt');
    await abandonedSkipClaim(await failedRow(eventId, 'S-A'));
    const other = await failedRow(eventId, 'S-B');
    const item = stack.store.database.container(CONTAINERS.events).item(statusRowId(eventId, 'S-A'), [EP, eventId]);
    const { resource } = await item.read<Record<string, unknown>>();
    await item.replace({ ...resource!, status: 'NotAStatus' });

    await refusedAndUntouched(eventId, new RegExp(`no longer parse: ${statusRowId(eventId, 'S-A')}`), other);
  });

  test(`an abandoned claim older than ${EVENT_ROWS_LIMIT} newer rows: 409 too many rows, no claim of a newer one`, async () => {
    const eventId = uniq('many');
    await abandonedSkipClaim(await failedRow(eventId, 'S-0'));
    const newer = await stack.store.writeStatuses(
      Array.from({ length: EVENT_ROWS_LIMIT }, (_, i) => ({ input: msg(MessageType.ErrorResponse, { endpointId: EP, eventId, sessionId: `S-${i + 1}`, errorText: 'boom' }) })),
    );
    assert.ok(newer.every((w) => w.ok && w.value.outcome === 'written'));
    const newest = (await stack.store.listEventRows(EP, eventId))[0]!;

    await refusedAndUntouched(eventId, /too many rows/, newest);
  });
});
