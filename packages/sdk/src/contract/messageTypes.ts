// The NimBus message types, written on the wire as the exact name in the `MessageType` application property.
// A heartbeat has no type of its own: it is an EventRequest whose EventTypeId is the reserved heartbeat id
// (see heartbeat.ts), answered with a ResolutionResponse.
import { z } from 'zod';

export const MessageType = {
  EventRequest: 'EventRequest',
  ResolutionResponse: 'ResolutionResponse',
  ErrorResponse: 'ErrorResponse',
  DeferralResponse: 'DeferralResponse',
  SkipResponse: 'SkipResponse',
  UnsupportedResponse: 'UnsupportedResponse',
  PendingHandoffResponse: 'PendingHandoffResponse',
  ResubmissionRequest: 'ResubmissionRequest',
  SkipRequest: 'SkipRequest',
  RetryRequest: 'RetryRequest',
  ContinuationRequest: 'ContinuationRequest',
  ProcessDeferredRequest: 'ProcessDeferredRequest',
  HandoffCompletedRequest: 'HandoffCompletedRequest',
  HandoffFailedRequest: 'HandoffFailedRequest',
} as const;
export type MessageType = (typeof MessageType)[keyof typeof MessageType];

export const ALL_MESSAGE_TYPES = Object.values(MessageType) as readonly MessageType[];

export const messageTypeSchema = z.enum(ALL_MESSAGE_TYPES as [MessageType, ...MessageType[]]);

/** Responses travel to the Resolver (To = 'Resolver'); they record an outcome. */
export const RESPONSE_TYPES: ReadonlySet<MessageType> = new Set([
  MessageType.ResolutionResponse,
  MessageType.ErrorResponse,
  MessageType.DeferralResponse,
  MessageType.SkipResponse,
  MessageType.UnsupportedResponse,
  MessageType.PendingHandoffResponse,
]);

/**
 * Operator or manager intent. The Resolver lets these reopen a settled row (the stale-write guard), and the
 * subscriber accepts the Manager-only ones solely with From = 'Manager'.
 */
export const CONTROL_REQUEST_TYPES: ReadonlySet<MessageType> = new Set([
  MessageType.ResubmissionRequest,
  MessageType.SkipRequest,
  MessageType.RetryRequest,
  MessageType.ContinuationRequest,
  MessageType.HandoffCompletedRequest,
  MessageType.HandoffFailedRequest,
]);

/** Commands a subscriber honours only when the broker stamped From = 'Manager'. */
export const MANAGER_ONLY_TYPES: ReadonlySet<MessageType> = new Set([
  MessageType.ResubmissionRequest,
  MessageType.SkipRequest,
  MessageType.HandoffCompletedRequest,
  MessageType.HandoffFailedRequest,
]);

/** Parses a wire value; undefined for anything that is not exactly one of the known names. */
export function parseMessageType(value: unknown): MessageType | undefined {
  const result = messageTypeSchema.safeParse(value);
  return result.success ? result.data : undefined;
}
