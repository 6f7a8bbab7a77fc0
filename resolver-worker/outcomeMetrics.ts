// The Resolver's side of the stored time series (issue 16): which bucket count an applied status write adds to,
// and the handling latency it measures. Called from one place (afterStatus in resolve.ts) for every status write
// the guard applied; a redelivered or stale copy the guard ignores never gets here, and one it applies again (a
// terminal write always passes it, even over a later version) is known by the row's applied message ids and not
// counted twice - except a console command, which is known by the version its write replaced instead (see applied).
// Only adds to the in-memory buffer of lib/store/timeSeries.ts: the writes are batched off the hot path.
import { MANAGER_ONLY_TYPES, MessageType, ResolutionStatus, type MessageType as MessageTypeT } from '@nimbus/sdk/contract';
import type { OutcomeCount, StatusRow, TimeSeriesStore } from '../lib/store/index.ts';

export interface OutcomeRecorder {
  applied(m: OutcomeMessage, endpointId: string, written: AppliedWrite): void;
}

/** What the recorder reads of an applied write: the status write's result and its history entry's. */
export interface AppliedWrite {
  row: Pick<StatusRow, 'status' | 'eventTypeId'>;
  /** The message that wrote the version this write replaced (null: a create). */
  previousMessageId: string | null;
  /** Whether that version was written by a conditional write, a claim (undefined: an older writer's, or a create). */
  previousConditional: boolean | undefined;
  previousMessageIds: readonly string[];
  /** Whether this write created the message's history entry (false: a copy found it there). */
  historyRecorded: boolean;
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
  return {
    applied(m, endpointId, { row, previousMessageId, previousConditional, previousMessageIds, historyRecorded }) {
      if (MANAGER_ONLY_TYPES.has(m.messageType)) {
        // A console command (resubmit, skip; one reaching a status write came through the Manager topic): the Manager
        // claims the row under the command's own id before sending it, so the version the Resolver's write replaces
        // always holds that id and the check below would never count it. Counted when the write first records the
        // command: over a version under its own id, when that version is the claim (a conditional write) - a copy
        // coming back over the command's own record (unconditional) is not; over another message's version, when
        // this write created the command's history entry. A copy that arrives after later messages is refused over
        // a settled row (rule 7); over a Pending one (a batch redelivered after a lost lock, the retry's copy back over
        // the command) it replaces one of theirs: it found its history entry there and is not counted again. A command nothing claimed (an older Manager) is counted by its history entry too.
        // Not by the history entry alone: it is written before the status, so an attempt whose history landed and
        // whose status write then failed counted nothing, and its redelivery found the entry there and counted
        // nothing either. Over the claim, the status write is what a redelivery repeats until it lands. A version of
        // an older writer does not say how it was written: as before, the history entry decides.
        const first = previousMessageId === m.messageId ? (previousConditional ?? historyRecorded) : historyRecorded;
        if (!first) return;
      } else if (previousMessageIds.includes(m.messageId)) {
        // A copy written again: over its own version (a no-op the guard lets through), or over a later message's (an
        // ErrorResponse and the message after it both redelivered, the copy of the first applied over the second: the
        // guard refuses that now, already-applied, except over a row written before the applied ids were kept).
        // Its outcome was counted when it was first applied; the row's last message id alone would miss the second.
        return;
      }
      const count = outcomeCountOf(m.messageType, row.status);
      if (count === undefined) return;
      const at = now();
      const latencyMs = count === 'resubmitted' ? undefined : handlingLatencyMs(m, at);
      series.add({ endpointId, eventTypeId: row.eventTypeId ?? m.eventTypeId ?? '', at, count, ...(latencyMs !== undefined ? { latencyMs } : {}) });
    },
  };
}
