// Resolution statuses the Resolver records per event, and the one sub-status of Pending.
import { z } from 'zod';
import { MessageType } from './messageTypes.ts';
import { ALL_RESOLUTION_STATUSES, PendingSubStatus, ResolutionStatus } from './statusNames.ts';

export * from './statusNames.ts';

export const resolutionStatusSchema = z.enum(ALL_RESOLUTION_STATUSES as [ResolutionStatus, ...ResolutionStatus[]]);
export const pendingSubStatusSchema = z.enum([PendingSubStatus.Handoff]);

/**
 * The status a message type produces in the Resolver, before the dead-letter override (a message carrying a
 * non-empty DeadLetterErrorDescription is DeadLettered whatever its type; see resultingStatus).
 */
export const STATUS_BY_MESSAGE_TYPE: Readonly<Record<MessageType, ResolutionStatus>> = {
  EventRequest: ResolutionStatus.Pending,
  ResubmissionRequest: ResolutionStatus.Pending,
  RetryRequest: ResolutionStatus.Pending,
  SkipRequest: ResolutionStatus.Pending,
  ContinuationRequest: ResolutionStatus.Pending,
  ProcessDeferredRequest: ResolutionStatus.Pending,
  HandoffCompletedRequest: ResolutionStatus.Pending,
  HandoffFailedRequest: ResolutionStatus.Pending,
  PendingHandoffResponse: ResolutionStatus.Pending,
  ResolutionResponse: ResolutionStatus.Completed,
  ErrorResponse: ResolutionStatus.Failed,
  DeferralResponse: ResolutionStatus.Deferred,
  SkipResponse: ResolutionStatus.Skipped,
  UnsupportedResponse: ResolutionStatus.Unsupported,
};

/**
 * Status a message yields. An empty DeadLetterErrorDescription counts as absent (DESIGN.md §5), so only a
 * non-empty description turns the row DeadLettered.
 */
export function resultingStatus(
  messageType: MessageType,
  deadLetterErrorDescription?: string | null,
): { status: ResolutionStatus; subStatus?: PendingSubStatus } {
  if (deadLetterErrorDescription != null && deadLetterErrorDescription.trim() !== '') {
    return { status: ResolutionStatus.DeadLettered };
  }
  if (messageType === MessageType.PendingHandoffResponse) {
    return { status: ResolutionStatus.Pending, subStatus: PendingSubStatus.Handoff };
  }
  return { status: STATUS_BY_MESSAGE_TYPE[messageType] };
}
