// The harness's projection (OutcomeBook) against the stale-write guard's already-applied rule (rule 7), pure: the
// Resolver refuses a terminal copy, or a console command's, that comes back after a later message of its row (the
// row's appliedMessageIds), so the harness must refuse it too, or it predicts a row the Resolver never records.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServiceBusReceivedMessage } from '@azure/service-bus';
import { Address, encodeBody, MessageType as T, Prop, ResolutionStatus as S } from '../contract/index.ts';
import { OutcomeBook } from './outcomes.ts';

/** A message as the harness's subscription on the Resolver topic receives it. */
const received = (messageId: string, messageType: string, props: Record<string, unknown>) =>
  ({
    body: Buffer.from(encodeBody({})),
    messageId,
    sessionId: 's-1',
    enqueuedTimeUtc: new Date('2026-12-02T10:00:00.000Z'),
    applicationProperties: { [Prop.MessageType]: messageType, [Prop.EventId]: 'e-1', ...props },
  }) as unknown as ServiceBusReceivedMessage;

const failed = (id: string) => received(id, T.ErrorResponse, { [Prop.From]: 'billing', [Prop.To]: Address.Manager });
const retry = (id: string) => received(id, T.RetryRequest, { [Prop.From]: Address.Manager, [Prop.To]: 'billing', [Prop.RetryCount]: 1 });

describe('the harness applies the already-applied rule as the Resolver does', () => {
  test('an ErrorResponse copy that comes back after the retry is refused: the row stays Pending', () => {
    const book = new OutcomeBook();
    book.record(failed('err-1'));
    assert.equal(book.record(retry('retry-1'))?.status, S.Pending);
    const row = book.record(failed('err-1'))!;
    assert.equal(row.status, S.Pending, 'the copy does not set the row back to Failed');
    assert.equal(row.messageId, 'retry-1');
    const last = row.history.at(-1)!;
    assert.equal(last.applied, false);
    assert.equal(last.ignored, 'already-applied');
  });

  test("a copy of the row's last message is not refused by it, and a new failure after the retry applies", () => {
    const book = new OutcomeBook();
    book.record(failed('err-1'));
    // A repeat of the current version's own message: left to the other rules (terminal: applied, nothing changes).
    assert.equal(book.record(failed('err-1'))?.history.at(-1)?.applied, true);
    book.record(retry('retry-1'));
    assert.equal(book.record(failed('err-2'))?.status, S.Failed);
  });

  test("a console command's copy that comes back after its answer and a later message is refused: the row stays Completed", () => {
    const book = new OutcomeBook();
    const resubmit = received('cmd-1', T.ResubmissionRequest, { [Prop.From]: Address.Manager, [Prop.To]: 'billing', [Prop.ParentMessageId]: 'err-1' });
    const completed = (id: string, parent: string) => received(id, T.ResolutionResponse, { [Prop.From]: 'billing', [Prop.To]: Address.Manager, [Prop.ParentMessageId]: parent });
    book.record(failed('err-1'));
    assert.equal(book.record(resubmit)?.status, S.Pending, 'recorded the first time, the command applies');
    book.record(completed('res-1', 'cmd-1'));
    book.record(completed('res-2', 'cmd-1~parked~replayed'));
    const row = book.record(resubmit)!;
    assert.equal(row.status, S.Completed, 'the copy does not set the row back to Pending');
    assert.equal(row.messageId, 'res-2');
    assert.equal(row.history.at(-1)?.ignored, 'already-applied');
  });

  test('a copy that comes back after more than 7 later messages is refused when a later message names it (a resubmission)', () => {
    const book = new OutcomeBook();
    book.record(failed('err-1'));
    // The operator resubmits the Failed row (the command names the failure), then the subscriber's retry series of
    // the resubmission (each retry and failure naming the delivery that failed) and a success: 10 later messages.
    const fromBilling = (id: string, type: string, parent: string) => received(id, type, { [Prop.From]: 'billing', [Prop.To]: Address.Manager, [Prop.ParentMessageId]: parent });
    const toBilling = (id: string, type: string, parent: string) => received(id, type, { [Prop.From]: Address.Manager, [Prop.To]: 'billing', [Prop.ParentMessageId]: parent });
    book.record(toBilling('resubmit-1', T.ResubmissionRequest, 'err-1'));
    let delivery = 'resubmit-1';
    for (let i = 1; i <= 4; i++) {
      book.record(fromBilling(`err-r${i}`, T.ErrorResponse, delivery));
      book.record(toBilling(`retry-r${i}`, T.RetryRequest, delivery));
      delivery = `retry-r${i}`;
    }
    assert.equal(book.record(fromBilling('ok', T.ResolutionResponse, delivery))?.status, S.Completed);
    const row = book.record(failed('err-1'))!;
    assert.equal(row.status, S.Completed, 'the copy does not set the row back to Failed');
    assert.equal(row.history.at(-1)?.ignored, 'already-applied');
    // A failure nothing names applies past the list as before (a new outcome, terminal: last writer wins).
    assert.equal(book.record(fromBilling('err-late', T.ErrorResponse, delivery))?.status, S.Failed);
  });

  test("a failure's copy after its own retry series and a success is refused (superseded-by-retry): the row stays Completed", () => {
    const book = new OutcomeBook();
    const fromBilling = (id: string, type: string, parent: string) => received(id, type, { [Prop.From]: 'billing', [Prop.To]: Address.Manager, [Prop.ParentMessageId]: parent });
    const toBilling = (id: string, type: string, parent: string) => received(id, type, { [Prop.From]: Address.Manager, [Prop.To]: 'billing', [Prop.ParentMessageId]: parent });
    book.record(received('req', T.EventRequest, { [Prop.From]: 'shop', [Prop.To]: 'billing' }));
    // As the SDK sends them: each failed delivery's ErrorResponse and RetryRequest both name that delivery, so
    // nothing names err-1; five failures and a success push it off the applied ids.
    let delivery = 'req';
    for (let i = 1; i <= 5; i++) {
      book.record(fromBilling(`err-${i}`, T.ErrorResponse, delivery));
      book.record(toBilling(`retry-${i}`, T.RetryRequest, delivery));
      delivery = `retry-${i}`;
    }
    assert.equal(book.record(fromBilling('ok', T.ResolutionResponse, delivery))?.status, S.Completed);
    const row = book.record(fromBilling('err-1', T.ErrorResponse, 'req'))!;
    assert.equal(row.status, S.Completed, 'the copy does not set the row back to Failed');
    assert.equal(row.history.at(-1)?.ignored, 'superseded-by-retry');
    // A final failure (no retry names its delivery) applies as before.
    assert.equal(book.record(fromBilling('err-final', T.ErrorResponse, 'ok'))?.status, S.Failed);
  });

  test("an older SDK's repeated retry ids: a later series' final failure is not refused by an earlier series' retry (enqueued before it)", () => {
    const book = new OutcomeBook();
    // Retry ids derived from the event and the count (SDKs before per-delivery ids) repeat in the second series.
    const atSecond = (s: number, m: ServiceBusReceivedMessage) => ({ ...m, enqueuedTimeUtc: new Date(Date.parse('2026-12-02T10:00:00.000Z') + s * 1000) }) as ServiceBusReceivedMessage;
    const fromBilling = (s: number, id: string, type: string, parent: string) => atSecond(s, received(id, type, { [Prop.From]: 'billing', [Prop.To]: Address.Manager, [Prop.ParentMessageId]: parent }));
    const toBilling = (s: number, id: string, type: string, parent: string) => atSecond(s, received(id, type, { [Prop.From]: Address.Manager, [Prop.To]: 'billing', [Prop.ParentMessageId]: parent }));
    book.record(atSecond(0, received('d1', T.EventRequest, { [Prop.From]: 'shop', [Prop.To]: 'billing' })));
    book.record(fromBilling(1, 'err-1', T.ErrorResponse, 'd1'));
    book.record(toBilling(2, 'retry-e-1', T.RetryRequest, 'd1'));
    book.record(fromBilling(3, 'err-2', T.ErrorResponse, 'retry-e-1'));
    book.record(toBilling(4, 'retry-e-2', T.RetryRequest, 'retry-e-1'));
    assert.equal(book.record(fromBilling(5, 'ok', T.ResolutionResponse, 'retry-e-2'))?.status, S.Completed);
    // Series 2: the event delivered again fails; its retry 1 (the same id) fails with an error not retried.
    book.record(atSecond(10, received('d2', T.EventRequest, { [Prop.From]: 'shop', [Prop.To]: 'billing' })));
    assert.equal(book.record(fromBilling(11, 'err-3', T.ErrorResponse, 'd2'))?.status, S.Failed);
    assert.equal(book.record(toBilling(12, 'retry-e-1', T.RetryRequest, 'd2'))?.status, S.Pending);
    const row = book.record(fromBilling(13, 'err-final', T.ErrorResponse, 'retry-e-1'))!;
    assert.equal(row.status, S.Failed, "series 1's retry 2 names the same delivery id but was enqueued before this failure");
    assert.equal(row.history.at(-1)?.applied, true);
  });
});
