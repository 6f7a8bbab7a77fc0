// The Manager decides a fresh claim only on an event's whole set of rows (real stack: embedded broker and Cosmos).
// The rows query leaves out rows that no longer parse and stops at EVENT_ROWS_LIMIT; an abandoned claim of the same
// command hidden that way (corrupt, or older than 100 newer rows of the event) must not let the Manager claim
// another session's Failed row and send a second command: it answers 409 and claims nothing. A bulk operation's lot
// (executeMany, which point-reads the session the operation selected) gives that event the same refusal, and
// still sends the lot's other events.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType } from '@nimbus/sdk/contract';
import { msg, uniq } from '../../lib/store/testing/fixtures.ts';
import { statusRowId } from '../../lib/store/ids.ts';
import { CONTAINERS, EVENT_ROWS_LIMIT } from '../../lib/store/store.ts';
import type { Settled, StatusRow } from '../../lib/store/index.ts';
import { HttpError } from '../http.ts';
import { startConsoleTestStack, type ConsoleTestStack } from '../testing/stack.ts';
import { claimExpectation, claimWrite, Manager, type CommandResult } from './manager.ts';

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
  const w = await stack.store.writeStatus(claimWrite({ kind: 'skip' }, row, row.lastMessageId, row.eventTypeId, undefined), claimExpectation(row));
  assert.ok(w.outcome === 'written');
}

/**
 * The skip is refused 409 with `detail`, and `untouched` is still the Failed row it was (nothing claimed or sent).
 * `lot`: asked as one event of a bulk operation's lot selected by `untouched`'s session, beside a healthy event
 * that must still be sent.
 */
async function refusedAndUntouched(eventId: string, detail: RegExp, untouched: StatusRow, how: 'one' | 'lot' = 'one'): Promise<void> {
  const is409 = (e: unknown) => {
    assert.ok(e instanceof HttpError, String(e));
    assert.equal(e.status, 409, e.detail);
    assert.match(e.detail, detail);
    return true;
  };
  if (how === 'one') await assert.rejects(manager.execute(EP, eventId, { kind: 'skip' }, 'tester'), is409);
  else {
    const healthy = await failedRow(uniq('healthy'), 'S-H');
    const [refused, sent] = await manager.executeMany(
      [
        { endpointId: EP, eventId, sessionId: untouched.sessionId },
        { endpointId: EP, eventId: healthy.eventId, sessionId: healthy.sessionId },
      ],
      { kind: 'skip' },
      'tester',
      { operationId: uniq('op') },
    );
    assert.equal(sent?.ok && sent.value.outcome, 'sent', `the lot's other event: ${answerOf(sent)}`);
    assert.ok(refused && !refused.ok, `refused, not ${answerOf(refused)}`);
    is409(refused.error);
  }
  const after = await stack.store.getStatusRow(EP, eventId, untouched.sessionId);
  assert.equal(after?.status, 'Failed');
  assert.equal(after?.lastMessageId, untouched.lastMessageId, 'not claimed');
}

function answerOf(s: Settled<CommandResult> | undefined): string {
  if (!s) return 'no answer';
  return s.ok ? s.value.outcome : s.error instanceof HttpError ? `${s.error.status} ${s.error.detail}` : String(s.error);
}

/** An event whose abandoned skip claim (session S-A) no longer parses, beside a Failed row in S-B (returned). */
async function eventWithDamagedClaim(): Promise<StatusRow> {
  const eventId = uniq('corrupt');
  await abandonedSkipClaim(await failedRow(eventId, 'S-A'));
  const other = await failedRow(eventId, 'S-B');
  const item = stack.store.database.container(CONTAINERS.events).item(statusRowId(eventId, 'S-A'), [EP, eventId]);
  const { resource } = await item.read<Record<string, unknown>>();
  await item.replace({ ...resource!, status: 'NotAStatus' });
  return other;
}

/** An event whose abandoned skip claim (S-0) is older than EVENT_ROWS_LIMIT newer Failed rows; the newest returned. */
async function eventWithClaimPastTheLimit(): Promise<StatusRow> {
  const eventId = uniq('many');
  await abandonedSkipClaim(await failedRow(eventId, 'S-0'));
  const newer = await stack.store.writeStatuses(
    Array.from({ length: EVENT_ROWS_LIMIT }, (_, i) => ({ input: msg(MessageType.ErrorResponse, { endpointId: EP, eventId, sessionId: `S-${i + 1}`, errorText: 'boom' }) })),
  );
  assert.ok(newer.every((w) => w.ok && w.value.outcome === 'written'));
  return (await stack.store.listEventRows(EP, eventId))[0]!;
}

const damaged = (row: StatusRow) => new RegExp(`no longer parse: ${statusRowId(row.eventId, 'S-A')}`);

for (const how of ['one', 'lot'] as const) {
  const path = how === 'one' ? 'execute' : "executeMany's lot";
  describe(`Manager (${path}): a fresh claim only on the whole set of rows`, () => {
    test('a claim row that no longer parses: 409 naming it, no claim of the other session', async () => {
      const other = await eventWithDamagedClaim();
      await refusedAndUntouched(other.eventId, damaged(other), other, how);
    });

    test(`an abandoned claim older than ${EVENT_ROWS_LIMIT} newer rows: 409 too many rows, no claim of a newer one`, async () => {
      const newest = await eventWithClaimPastTheLimit();
      await refusedAndUntouched(newest.eventId, /too many rows/, newest, how);
    });
  });
}
