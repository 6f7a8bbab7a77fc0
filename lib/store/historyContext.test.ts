// The history context's choice of which write is asked which history question (rules 7 past the list and 8), with
// a counting asker in place of the store's query: pure logic. The store's wire counts (supersededCopies.test.ts,
// "what the history query costs") hold the same rules against the embedded server.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T, ResolutionStatus as S, resultingStatus, type MessageType } from '@nimbus/sdk/contract';
import { HistoryContext, historyQuestions, type HistoryQuestions, type RecordedHistory } from './historyContext.ts';
import { statusWriteSchema, type HistoryEntry } from './schemas.ts';

const write = (messageType: MessageType, messageId: string, parentMessageId: string | null = 'd') =>
  statusWriteSchema.parse({ endpointId: 'ep', eventId: 'e', sessionId: 's', messageId, messageType, parentMessageId, enqueuedAt: '2026-12-06T10:00:00.000Z' });
const incoming = (w: ReturnType<typeof write>) => ({ status: resultingStatus(w.messageType).status, messageType: w.messageType, messageId: w.messageId });
// Completed after 8 later messages: a full list of applied ids without 'e' (rule 7 past the list, rule 8 asked).
const full = { status: S.Completed, messageType: T.ResolutionResponse, parentMessageId: 'y4', lastMessageId: 'ok', appliedMessageIds: ['ok', 'y4', 'e4', 'y3', 'e3', 'y2', 'e2', 'y1'] };
const recorded = (messageId: string, created: boolean): RecordedHistory => ({ recorded: created, entry: { messageId } as HistoryEntry });

function asker() {
  const asked: HistoryQuestions[] = [];
  return { asked, ask: async (_w: unknown, q: HistoryQuestions) => (asked.push(q), { supersededInHistory: q.copyOf !== undefined ? false : undefined, retriedInHistory: q.retryOf !== undefined ? true : undefined }) };
}

describe('history context', () => {
  test('a plain writeStatus (no history recorded) is asked rule 7 past the list, never rule 8', async () => {
    const { asked, ask } = asker();
    const ctx = new HistoryContext(ask);
    await ctx.waitForHistory();
    const e = write(T.ErrorResponse, 'e');
    const answered = await ctx.answer(incoming(e), full, e);
    assert.deepEqual(asked, [{ copyOf: 'e', retryOf: undefined }]);
    assert.equal(answered.supersededInHistory, false);
  });

  test("a message's record: its first arrival is not asked, a copy and a late message are asked both questions in one", async () => {
    const { asked, ask } = asker();
    const [first, copy, late] = [write(T.ErrorResponse, 'e-first'), write(T.ErrorResponse, 'e-copy'), write(T.ErrorResponse, 'e-late')];
    const ctx = new HistoryContext(ask, Promise.resolve([recorded('e-first', true), recorded('e-copy', false), recorded('e-late', true)]), ['e-late']);
    await ctx.waitForHistory();
    assert.deepEqual(await ctx.answer(incoming(first), full, first), incoming(first));
    const at = '2026-12-06T10:00:00.000Z';
    assert.equal((await ctx.answer(incoming(copy), full, copy)).retriedInHistory, true);
    assert.equal((await ctx.answer(incoming(late), full, late)).retriedInHistory, true);
    assert.deepEqual(asked, [
      { copyOf: 'e-copy', retryOf: { parent: 'd', at } },
      { copyOf: 'e-late', retryOf: { parent: 'd', at } },
    ]);
  });

  test('an answer is asked once per call: a later attempt reuses it', async () => {
    const { asked, ask } = asker();
    const ctx = new HistoryContext(ask, Promise.resolve(recorded('e', false)));
    const e = write(T.ErrorResponse, 'e');
    for (let attempt = 1; attempt <= 3; attempt++) {
      await ctx.waitForHistory();
      await ctx.answer(incoming(e), full, e);
    }
    assert.equal(asked.length, 1);
  });

  test('nothing is asked when rules 1-7 decide without it or no rule needs it', () => {
    const onList = write(T.ErrorResponse, 'e4');
    assert.equal(historyQuestions(incoming(onList), full, onList, true), undefined, 'a copy on the list: rule 7 refuses it');
    const success = write(T.ResolutionResponse, 'r', null);
    const notFull = { ...full, appliedMessageIds: full.appliedMessageIds.slice(0, 7) };
    assert.equal(historyQuestions(incoming(success), notFull, success, true), undefined, 'a success on a list not full');
    const orphan = write(T.ErrorResponse, 'e', null);
    assert.deepEqual(historyQuestions(incoming(orphan), full, orphan, true), { copyOf: 'e', retryOf: undefined }, 'a failure without a parent names no delivery');
    assert.equal(historyQuestions(incoming(orphan), notFull, orphan, true), undefined);
  });

  test("the call's history write failing fails the wait", async () => {
    const failed = Promise.reject(new Error('history create failed'));
    failed.catch(() => undefined);
    await assert.rejects(new HistoryContext(asker().ask, failed).waitForHistory(), /history create failed/);
  });
});
