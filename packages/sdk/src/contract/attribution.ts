// Which endpoint's row a Resolver message belongs to, and which messages only add history. The Resolver and the
// SDK's test harness both attribute messages with these, so a harness outcome is the row the Resolver would write.
import { CONTROL_REQUEST_TYPES, MANAGER_ONLY_TYPES, MessageType, type MessageType as MessageTypeT } from './messageTypes.ts';
import { Address, isSubscriberNotice } from './properties.ts';

/** Requests are attributed to the endpoint they are addressed to (To); responses to the one that sent them (From). */
const REQUEST_TYPES: ReadonlySet<MessageTypeT> = new Set([
  MessageType.EventRequest,
  MessageType.ProcessDeferredRequest,
  ...CONTROL_REQUEST_TYPES,
]);

export function isRequestType(type: MessageTypeT): boolean {
  return REQUEST_TYPES.has(type);
}

/**
 * A Manager-only command that did not come through the Manager topic (From is not 'Manager'): the subscriber
 * refuses it, so it is not operator intent and must not reopen the row. Recorded in history only.
 */
export function isUnauthorisedCommand(m: { messageType: MessageTypeT; from?: string | null | undefined }): boolean {
  return MANAGER_ONLY_TYPES.has(m.messageType) && (m.from ?? '').toLowerCase() !== Address.Manager.toLowerCase();
}

/**
 * Messages recorded in history (and, for notices, an audit) that never write the status row: the deferred
 * processor's trigger, a command the subscriber refuses, and a subscriber notice (refused command, replay gap).
 */
export function isHistoryOnly(m: {
  messageType: MessageTypeT;
  from?: string | null | undefined;
  deadLetterReason?: string | null | undefined;
}): boolean {
  return m.messageType === MessageType.ProcessDeferredRequest || isUnauthorisedCommand(m) || isSubscriberNotice(m);
}

/** The endpoint whose row this message updates, or undefined when the message does not say. */
export function endpointOf(m: { messageType: MessageTypeT; to?: string | undefined; from?: string | undefined }): string | undefined {
  return isRequestType(m.messageType) ? m.to : m.from;
}
