// The Resolver's side of the stored time series (issue 16): which bucket count a message's outcome adds to, and
// the handling latency it measures. Each message is counted once, by one of two rules (countedByHistory says which):
// - most outcomes when their status write is applied (afterStatus in resolve.ts calls `applied`): a redelivered or
//   stale copy the guard ignores never gets there, and one it applies again is known by the row's applied message
//   ids and not counted twice;
// - a failure (an ErrorResponse writing Failed) and a console command by the call that creates their history entry
//   (`historyCreated`, from the store's onHistory), whether their row write then applies, is refused or fails. Those
//   are the outcomes whose first record the guard may refuse although they happened (rule 8: a failure its own retry
//   superseded, whose row write never landed; rule 2: a command whose answer landed over the claim first) or whose
//   row write may fail after the history landed and whose replacement the applied rule cannot tell from a copy. The
//   history is idempotent by MessageId, so only one call per message creates the entry: a copy, a replacement or a
//   redelivery finds it there.
// Only adds to the in-memory buffer of lib/store/timeSeries.ts: the writes are batched off the hot path.
import {
  MANAGER_ONLY_TYPES,
  MessageType,
  ResolutionStatus,
  resultingStatus,
  type MessageType as MessageTypeT,
  type ResolutionStatus as ResolutionStatusT,
} from '@nimbus/sdk/contract';
import type { OutcomeCount, StatusRow, TimeSeriesStore } from '../lib/store/index.ts';

export interface OutcomeRecorder {
  /** A status write the guard applied (the outcomes countedByHistory leaves out). */
  applied(m: OutcomeMessage, endpointId: string, written: AppliedWrite): void;
  /**
   * The message's history entry was created by this call (recordOutcome(s)' onHistory with `recorded: true`),
   * whatever its status write then does: the outcomes countedByHistory names are counted here.
   */
  historyCreated(m: OutcomeMessage & { deadLetterErrorDescription?: string | undefined }, endpointId: string): void;
}

/**
 * Whether an outcome is counted by the call that creates its history entry rather than by its applied row write:
 * a failure (an ErrorResponse writing Failed) and a console command (a Manager-only type).
 */
export function countedByHistory(messageType: MessageTypeT, status: ResolutionStatusT): boolean {
  return MANAGER_ONLY_TYPES.has(messageType) || (messageType === MessageType.ErrorResponse && status === ResolutionStatus.Failed);
}

/** What the recorder reads of an applied write: the status write's result. */
export interface AppliedWrite {
  row: Pick<StatusRow, 'status' | 'eventTypeId'>;
  /** The ids of the messages applied to the version this write replaced (a message among them is a copy). */
  previousMessageIds: readonly string[];
}

/** What the recorder reads of the message (a subset of ResolverMessage). */
export interface OutcomeMessage {
  messageId: string;
  messageType: MessageTypeT;
  eventTypeId: string | undefined;
  /** Broker enqueue time of this message (ISO-8601). */
  enqueuedAt: string;
  queueTimeMs: number | undefined;
  processingTimeMs: number | undefined;
}

/** The count a written row adds to, or undefined (a request copy, a deferral, a handoff: no outcome yet). */
export function outcomeCountOf(messageType: MessageTypeT, status: string): OutcomeCount | undefined {
  if (messageType === MessageType.ResubmissionRequest) return 'resubmitted';
  switch (status) {
    case ResolutionStatus.Completed:
      return 'handled';
    case ResolutionStatus.Failed:
      return 'failed';
    case ResolutionStatus.DeadLettered:
      return 'deadLettered';
    case ResolutionStatus.Unsupported:
      return 'unsupported';
    case ResolutionStatus.Skipped:
      return 'skipped';
    default:
      return undefined;
  }
}

/**
 * Request enqueued → response recorded. A response carries the subscriber's QueueTimeMs (request enqueued →
 * handler start) and ProcessingTimeMs (handler start → response built); the response's own enqueue time is when
 * it left, so the request was enqueued at responseEnqueued − processing − queue. Undefined when the response does
 * not say (an older SDK, a hand-made message): no guess enters the histogram.
 */
export function handlingLatencyMs(m: OutcomeMessage, recordedAt: Date): number | undefined {
  if (m.queueTimeMs === undefined || m.processingTimeMs === undefined) return undefined;
  const sent = Date.parse(m.enqueuedAt);
  if (Number.isNaN(sent)) return undefined;
  return Math.max(0, recordedAt.getTime() - sent + m.processingTimeMs + m.queueTimeMs);
}

export function createOutcomeRecorder(series: Pick<TimeSeriesStore, 'add'>, now: () => Date): OutcomeRecorder {
  const add = (m: OutcomeMessage, endpointId: string, eventTypeId: string | undefined, count: OutcomeCount) => {
    const at = now();
    const latencyMs = count === 'resubmitted' ? undefined : handlingLatencyMs(m, at);
    series.add({ endpointId, eventTypeId: eventTypeId ?? m.eventTypeId ?? '', at, count, ...(latencyMs !== undefined ? { latencyMs } : {}) });
  };
  return {
    applied(m, endpointId, { row, previousMessageIds }) {
      // Counted when its history entry was created (historyCreated): a failure, a console command. Before, a command
      // was counted here (over its claim, or when this write created its entry) and a failure too: an attempt whose
      // history landed and whose row write failed counted nothing, and its replacement was not counted either when
      // the guard refused it (rule 8 for a failure its retry superseded, rule 2 for a command whose answer landed
      // first) or, for a command, when it landed over another message's version.
      if (countedByHistory(m.messageType, row.status)) return;
      // A copy written again: over its own version (a no-op the guard lets through), or over a later message's (a
      // response and the message after it both redelivered, the copy of the first applied over the second: the guard
      // refuses that now, already-applied, except over a row written before the applied ids were kept). Its outcome
      // was counted when it was first applied; the row's last message id alone would miss the second.
      if (previousMessageIds.includes(m.messageId)) return;
      const count = outcomeCountOf(m.messageType, row.status);
      if (count !== undefined) add(m, endpointId, row.eventTypeId ?? undefined, count);
    },
    historyCreated(m, endpointId) {
      const { status } = resultingStatus(m.messageType, m.deadLetterErrorDescription);
      if (!countedByHistory(m.messageType, status)) return;
      const count = outcomeCountOf(m.messageType, status);
      if (count !== undefined) add(m, endpointId, m.eventTypeId, count);
    },
  };
}
