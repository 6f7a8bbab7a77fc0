// Turns what the user handler did (returned, marked a handoff, threw) into a HandlerOutcome for the decision
// procedure. Pure apart from calling the classifier.
import type { HandlerOutcome, HandoffMark } from './decide.ts';
import type { FailureDispositionClassifier } from './dispositions.ts';
import { classifySafely } from './dispositions.ts';
import {
  EventHandlerNotFoundError,
  isCancellationOf,
  PermanentFailureError,
  TransientError,
} from './errors.ts';

export type HandlerResult = { ok: true; handoff?: HandoffMark } | { ok: false; error: unknown };

export function toOutcome(
  result: HandlerResult,
  options: {
    classifier: FailureDispositionClassifier;
    eventTypeId: string;
    endpointId: string;
    signal?: AbortSignal;
  },
): HandlerOutcome {
  // A handoff marked and then a throw: the failure path wins and the handoff metadata is dropped.
  if (result.ok) return result.handoff ? { kind: 'success', handoff: result.handoff } : { kind: 'success' };
  const error = result.error;
  // Only the processor's own cancellation leaves the message unsettled; any other abort is an ordinary failure.
  if (isCancellationOf(error, options.signal)) return { kind: 'cancelled' };
  if (error instanceof TransientError) return { kind: 'transient', error };
  if (error instanceof EventHandlerNotFoundError) return { kind: 'notFound' };
  if (error instanceof PermanentFailureError) return { kind: 'permanent', error };
  const disposition = classifySafely(options.classifier, error, options.eventTypeId, options.endpointId);
  return { kind: 'failed', error, disposition, classifierName: options.classifier.name };
}
