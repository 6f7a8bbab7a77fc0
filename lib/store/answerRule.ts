// Reconcile's one rule for "this history entry answers the message it names" (isAnswer), read in two forms: as a
// function over an entry, and as the Cosmos SQL term the store's listHistoryAnswers queries with, so entries that
// are no answer (subscriber notices, the deferred processor's trigger, refused unauthorised commands, control
// requests that did not settle) never take an answer's place in the query's limit. Before, the query returned
// every entry naming the message and its 10 newest could all be such entries, hiding a real answer behind them on
// a history cut at Reconcile's cap (the row was then offered a restore over its answer). The term is held to the
// function on the embedded Cosmos server by answerRule.test.ts.
import type { SqlParameter } from '@azure/cosmos';
import {
  CONTROL_REQUEST_TYPES,
  isHistoryOnly,
  MANAGER_ONLY_TYPES,
  MessageType,
  resultingStatus,
  WireText,
  Address,
  type MessageType as MessageTypeT,
} from '@nimbus/sdk/contract';
import { TERMINAL_STATUSES } from './guard.ts';
import type { HistoryEntry } from './schemas.ts';

type Judged = Pick<HistoryEntry, 'messageType' | 'deadLetterReason' | 'deadLetterErrorDescription' | 'from'>;

/**
 * Whether an entry's outcome is one a row can show. Not control requests, not replay triggers, and not the
 * subscriber's notices (a refused command, a replay gap): those are dead-letter notifications about another
 * message and never the event's state (the Resolver keeps them in history only).
 */
export function isStateBearing(h: Pick<HistoryEntry, 'messageType' | 'deadLetterReason' | 'from'>): boolean {
  return !CONTROL_REQUEST_TYPES.has(h.messageType as MessageTypeT) && !isHistoryOnly({ ...h, messageType: h.messageType as MessageTypeT });
}

/**
 * A terminal outcome of the event itself. Never a history-only entry (isHistoryOnly: a subscriber's notice, the
 * deferred processor's trigger, a refused unauthorised command): the Resolver never wrote the row from one, so a
 * dead-letter description on it settles nothing (with "the newest outcome wins" it would otherwise override a real,
 * older answer).
 */
export function isSettling(h: Judged): boolean {
  return !isHistoryOnly({ ...h, messageType: h.messageType as MessageTypeT }) && TERMINAL_STATUSES.has(resultingStatus(h.messageType as MessageTypeT, h.deadLetterErrorDescription).status);
}

/**
 * An entry that is a response to a message when it names it (ParentMessageId): Reconcile's one rule for "answered",
 * the stale check's (what a row can be re-applied to) and the stuck check's (a row so answered is never restored
 * under it). Its settling outcome or any outcome the row can show. Never a history-only entry (a subscriber's notice,
 * the deferred processor's trigger, a refused unauthorised command): it never wrote the row and answers nothing,
 * although it may name the message (before, the stuck check counted any entry but a notice, so a row whose command
 * got only such an entry was "answered" and listed nowhere); nor a control request that did not settle (a retry).
 */
export function isAnswer(h: Judged): boolean {
  return isSettling(h) || isStateBearing(h);
}

/**
 * isAnswer as a WHERE term over the alias `c`; it binds @historyOnlyTypes, @notices, @managerOnly, @manager and
 * @control. Spelled out, isAnswer is: not history-only (not a ProcessDeferredRequest, not a notice by its
 * DeadLetterReason, not a Manager-only command whose From is not "Manager" in any case) and either not a control
 * request or one a non-blank DeadLetterErrorDescription made DeadLettered. The term leaves out a document only when
 * its stored fields prove one of those exclusions, each guarded so it is true or false and never undefined (Cosmos
 * SQL drops a document whose WHERE is undefined): a document too damaged to parse, which may have been an answer,
 * is still returned, for the caller to report as unreadable.
 *
 * It is wider than isAnswer in one place, on purpose: a control request's description counts as non-blank when it
 * is any non-empty string (Cosmos's TRIM is not relied on to trim what JavaScript's does), so a control request
 * whose description is only whitespace matches the term and is no answer. The caller filters with isAnswer on what
 * the query returns (listHistoryAnswers pages on past such entries). (`from` is a keyword of the SQL grammar, so the property is read as c["from"].) The From test is exact: JavaScript lower-cases
 * no character but the ASCII letters to the letters of "manager", and Cosmos's LOWER lower-cases those too.
 */
export function answerSql(): { condition: string; parameters: SqlParameter[] } {
  return {
    condition:
      'NOT (' +
      '(IS_STRING(c.messageType) AND ARRAY_CONTAINS(@historyOnlyTypes, c.messageType))' +
      ' OR (IS_STRING(c.deadLetterReason) AND ARRAY_CONTAINS(@notices, c.deadLetterReason))' +
      ' OR (IS_STRING(c.messageType) AND ARRAY_CONTAINS(@managerOnly, c.messageType) AND NOT (IS_STRING(c["from"]) AND LOWER(c["from"]) = @manager))' +
      ' OR (IS_STRING(c.messageType) AND ARRAY_CONTAINS(@control, c.messageType) AND NOT (IS_STRING(c.deadLetterErrorDescription) AND LENGTH(c.deadLetterErrorDescription) > 0))' +
      ')',
    parameters: [
      { name: '@historyOnlyTypes', value: [MessageType.ProcessDeferredRequest] },
      { name: '@notices', value: [WireText.CommandRefused, WireText.ReplayGap] },
      { name: '@managerOnly', value: [...MANAGER_ONLY_TYPES] },
      { name: '@manager', value: Address.Manager.toLowerCase() },
      { name: '@control', value: [...CONTROL_REQUEST_TYPES] },
    ],
  };
}
