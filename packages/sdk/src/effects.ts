// What the decision procedure asks the host to do, in order. The host executes the list as given; the order is the
// specification's settlement order (e.g. the dead-letter notification before the dead-letter itself).
import type { SessionState } from './contract/index.ts';
import type { OutgoingMessage } from './outbound.ts';

export type Effect =
  /** Send to the endpoint's own topic. A best-effort send (the dead-letter notification) never stops the rest. */
  | { kind: 'send'; message: OutgoingMessage; bestEffort?: boolean }
  /** Schedule on the endpoint's own topic (the RetryRequest). */
  | { kind: 'schedule'; message: OutgoingMessage; delayMs: number }
  | { kind: 'setState'; state: SessionState }
  | { kind: 'complete' }
  | { kind: 'deadLetter'; reason: string; description: string };

/**
 * How the delivery ended, for the lifecycle observers and the pipeline:
 *  - completed: returned normally (success, unsupported, discard, skip, settlement, heartbeat) -> OnMessageCompleted
 *  - deferred: parked behind a blocked/draining session -> nothing after OnMessageReceived
 *  - handlerFailed: Retry-disposition failure, settled (ErrorResponse, block) -> nothing after OnMessageReceived
 *  - deadLettered: dead-lettered with a notification -> OnMessageFailed, then OnMessageDeadLettered
 *  - transient: left unsettled for redelivery -> OnMessageFailed
 *  - cancelled: the processor is stopping and the handler honoured it -> nothing
 */
export type Signal = 'completed' | 'deferred' | 'handlerFailed' | 'deadLettered' | 'transient' | 'cancelled';

export interface Settlement {
  effects: Effect[];
  signal: Signal;
  /** Set for deadLettered/transient/handlerFailed: the error to report to observers. */
  error?: unknown;
  /** A short description for logs (no payloads). */
  note: string;
  /** Logged as a warning (an operator should know: a skipped replay gap), not at debug level. */
  warn?: boolean;
}
