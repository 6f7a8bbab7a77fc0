// Resolution statuses the Resolver records per event, and the one sub-status of Pending.
import { z } from 'zod';
import { MessageType } from './messageTypes.ts';

export const ResolutionStatus = {
  Pending: 'Pending',
  Completed: 'Completed',
  Failed: 'Failed',
  Deferred: 'Deferred',
  Skipped: 'Skipped',
  Unsupported: 'Unsupported',
  DeadLettered: 'DeadLettered',
} as const;
export type ResolutionStatus = (typeof ResolutionStatus)[keyof typeof ResolutionStatus];

export const ALL_RESOLUTION_STATUSES = Object.values(ResolutionStatus) as readonly ResolutionStatus[];
export const resolutionStatusSchema = z.enum(ALL_RESOLUTION_STATUSES as [ResolutionStatus, ...ResolutionStatus[]]);

/** A Pending row parked on an external system (PendingHandoffResponse) carries this sub-status. */
export const PendingSubStatus = {
  Handoff: 'Handoff',
} as const;
export type PendingSubStatus = (typeof PendingSubStatus)[keyof typeof PendingSubStatus];
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
