// Seeds status rows and history the way the Resolver records them (request, then its response), so console
// tests start from realistic states: completed, failed with a parked sibling, dead-lettered, pending handoff.
// Realistic means as production writes them: every message has its own MessageId (a fresh GUID, as the publisher
// and the subscriber give theirs; the history is keyed by it), nothing is enqueued after now, and a parked row names
// its blocker only in its park reason (the Resolver records no blocker field; see parkedBehind below).
import { randomUUID } from 'node:crypto';
import { blockedByReason, MessageType, SELF } from '@nimbus/sdk/contract';
import type { MessageType as MessageTypeT } from '@nimbus/sdk/contract';
import type { MessageStore } from '../../lib/store/index.ts';

/** A payload that would run script if it were ever rendered as HTML. */
export const XSS_TEXT = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>';

export interface SeededEvent {
  endpointId: string;
  eventId: string;
  sessionId: string;
  eventTypeId: string;
  payload: Record<string, unknown>;
  /** MessageId of the message that last wrote the row. */
  lastMessageId: string;
}

/** How long after its request a seeded answer is enqueued. */
const ANSWER_AFTER_MS = 1000;

/**
 * When a seeded event's request and answer were enqueued: the request at `base`, the answer a second later, the
 * pair moved back so the answer is not after now (a test passing `Date.now()` gets an answer enqueued now).
 */
function enqueuedTimes(base: number): { request: string; answer: string } {
  const answer = Math.min(base + ANSWER_AFTER_MS, Date.now());
  return { request: new Date(answer - ANSWER_AFTER_MS).toISOString(), answer: new Date(answer).toISOString() };
}

async function record(
  store: MessageStore,
  e: Omit<SeededEvent, 'lastMessageId'>,
  type: MessageTypeT,
  ids: { messageId: string; parentMessageId: string; originatingMessageId: string; correlationId: string },
  extra: Record<string, unknown>,
  when: string,
): Promise<void> {
  const common = {
    endpointId: e.endpointId,
    eventId: e.eventId,
    sessionId: e.sessionId,
    ...ids,
    messageType: type,
    eventTypeId: e.eventTypeId,
    from: type === MessageType.EventRequest ? 'storefrontendpoint' : e.endpointId,
    to: type === MessageType.EventRequest ? e.endpointId : 'Resolver',
    enqueuedAt: when,
    ...extra,
  };
  await store.recordOutcome({ history: { ...common }, status: { ...common } });
}

/** One event as the Resolver records it: its request, then `response` (none: left Pending) with `extra` on it. */
export async function seedEvent(
  store: MessageStore,
  base: number,
  e: Omit<SeededEvent, 'lastMessageId'>,
  response: MessageTypeT | null,
  extra: Record<string, unknown> = {},
): Promise<SeededEvent> {
  const times = enqueuedTimes(base);
  // As the publisher sends a request (Parent and Originating "self") and the subscriber answers it (both name the
  // request); the chain keeps one correlation id.
  const req = randomUUID();
  const correlationId = randomUUID();
  const requestIds = { messageId: req, parentMessageId: SELF, originatingMessageId: SELF, correlationId };
  await record(store, e, MessageType.EventRequest, requestIds, { payload: e.payload }, times.request);
  if (response === null) return { ...e, lastMessageId: req };
  const res = randomUUID();
  await record(store, e, response, { messageId: res, parentMessageId: req, originatingMessageId: req, correlationId }, extra, times.answer);
  return { ...e, lastMessageId: res };
}

/**
 * The DeferralResponse fields of an event parked behind `blockerEventId` in `sessionId`, as the subscriber answers
 * (packages/sdk/src/decide.ts): the blocker is named only in the park reason, which the Resolver stores as the row's
 * errorText.
 */
export function parkedBehind(sessionId: string, blockerEventId: string): Record<string, unknown> {
  return { errorText: blockedByReason(sessionId, blockerEventId), errorType: 'SessionBlockedException' };
}

/** `suffix` is appended to every event and session id, so a test can seed a second, independent set. */
export async function seedConsoleData(store: MessageStore, base = Date.now() - 60_000, suffix = '') {
  const event = (s: MessageStore, b: number, e: Omit<SeededEvent, 'lastMessageId'>, r: MessageTypeT | null, extra: Record<string, unknown> = {}) =>
    seedEvent(s, b, { ...e, eventId: e.eventId + suffix, sessionId: e.sessionId + suffix }, r, extra);
  const completed = await event(store, base, {
    endpointId: 'billingendpoint',
    eventId: 'evt-completed-1',
    sessionId: 'ORD-100',
    eventTypeId: 'OrderPlaced',
    payload: { orderId: 'ORD-100', total: 10 },
  }, MessageType.ResolutionResponse);
  const failed = await event(store, base, {
    endpointId: 'billingendpoint',
    eventId: 'evt-failed-1',
    sessionId: 'ORD-200',
    eventTypeId: 'OrderPlaced',
    payload: { orderId: 'ORD-200', total: 42.5, note: XSS_TEXT },
  }, MessageType.ErrorResponse, { errorText: 'Card declined by the payment provider', errorType: 'PaymentDeclinedException' });
  const parked = await event(store, base, {
    endpointId: 'billingendpoint',
    eventId: 'evt-parked-1',
    sessionId: 'ORD-200',
    eventTypeId: 'OrderCancelled',
    payload: { orderId: 'ORD-200' },
  }, MessageType.DeferralResponse, parkedBehind(`ORD-200${suffix}`, `evt-failed-1${suffix}`));
  const deadLettered = await event(store, base, {
    endpointId: 'billingendpoint',
    eventId: 'evt-dead-1',
    sessionId: 'ORD-300',
    eventTypeId: 'OrderPlaced',
    payload: { orderId: 'ORD-300' },
  }, MessageType.ErrorResponse, { deadLetterReason: 'PayloadDeserializationError', deadLetterErrorDescription: 'the event payload is not valid JSON', errorText: 'malformed payload' });
  const handoff = await event(store, base, {
    endpointId: 'erpendpoint',
    eventId: 'evt-handoff-1',
    sessionId: 'INV-1',
    eventTypeId: 'InvoiceIssued',
    payload: { invoiceId: 'INV-1', orderId: 'ORD-100' },
  }, MessageType.PendingHandoffResponse, { handoffReason: 'Ledger import queued', externalJobId: 'JOB-77', expectedBy: new Date(base + 3_600_000).toISOString() });
  const handoff2 = await event(store, base, {
    endpointId: 'erpendpoint',
    eventId: 'evt-handoff-2',
    sessionId: 'INV-2',
    eventTypeId: 'InvoiceIssued',
    payload: { invoiceId: 'INV-2', orderId: 'ORD-200' },
  }, MessageType.PendingHandoffResponse, { handoffReason: 'Ledger import queued', externalJobId: 'JOB-78', expectedBy: new Date(base - 60_000).toISOString() });
  return { completed, failed, parked, deadLettered, handoff, handoff2 };
}
