// The status rows the Resolver would record, projected in memory from the messages that reach the Resolver topic.
// It uses the contract's own rules (attribution, resultingStatus, the stale-write guard with the applied message ids
// its already-applied rule reads), the same ones the Resolver applies before it writes to Cosmos, so an outcome here
// is the row an operator would see in the console.
import type { ServiceBusReceivedMessage } from '@azure/service-bus';
import { nextAppliedMessageIds } from '../contract/appliedMessageIds.ts';
import { endpointOf, isHistoryOnly } from '../contract/attribution.ts';
import { decodeBody } from '../contract/envelope.ts';
import { MessageType, parseMessageType } from '../contract/messageTypes.ts';
import { Prop } from '../contract/properties.ts';
import { asksHistoryForCopy, asksHistoryForRetry, decideStaleWrite, type IgnoreReason } from '../contract/staleWriteGuard.ts';
import { resultingStatus, ResolutionStatus, type PendingSubStatus } from '../contract/statuses.ts';

/** One message about an event, as the event's history shows it. */
export interface OutcomeEntry {
  messageId: string;
  messageType: MessageType;
  /** The status this message would write; absent for history-only messages. */
  status?: ResolutionStatus;
  /** Whether it changed the row; when not, why (the guard's reason, or `history-only`). */
  applied: boolean;
  ignored?: IgnoreReason | 'history-only';
  from?: string;
  to?: string;
  enqueuedAt: string;
  retryCount?: number;
  errorText?: string;
  errorType?: string;
  deadLetterReason?: string;
  deadLetterErrorDescription?: string;
}

/** An event's status row: what the console would show for it. */
export interface EventOutcome {
  endpointId: string;
  eventId: string;
  sessionId: string;
  eventTypeId?: string;
  /** The message id of the event's first request copy (for a published event: the publish's message id). */
  originalMessageId: string;
  status: ResolutionStatus;
  subStatus?: PendingSubStatus;
  /** The type of the message that last wrote the row. */
  messageType: MessageType;
  /** The message id that last wrote the row: the one to settle a pending handoff with. */
  messageId: string;
  retryCount?: number;
  errorText?: string;
  errorType?: string;
  deadLetterReason?: string;
  /**
   * A pending handoff: its reason, job and deadline, and the delivery that handed the event off (the
   * PendingHandoffResponse's parent), which a settlement names as the Manager does (HandedOffByMessageId).
   */
  handoff?: { reason?: string; externalJobId?: string; expectedBy?: string; handedOffByMessageId?: string };
  /** Every message about the event, in the order the Resolver received them. */
  history: OutcomeEntry[];
}

interface ReadMessage {
  messageId: string;
  sessionId: string;
  messageType: MessageType;
  eventId: string;
  eventTypeId?: string;
  from?: string;
  to?: string;
  parentMessageId?: string;
  retryCount?: number;
  deadLetterReason?: string;
  deadLetterErrorDescription?: string;
  handoffReason?: string;
  externalJobId?: string;
  expectedBy?: string;
  errorText?: string;
  errorType?: string;
  enqueuedAt: string;
}

function text(v: unknown): string | undefined {
  if (typeof v === 'string') return v === '' ? undefined : v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (v instanceof Date) return v.toISOString();
  return undefined;
}

function count(v: unknown): number | undefined {
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\d+$/.test(v.trim()) ? Number(v) : Number.NaN;
  return Number.isInteger(n) && n >= 0 ? n : undefined;
}

/** Reads what the projection needs from a Resolver-topic message; undefined for what the Resolver would refuse. */
export function readOutcomeMessage(m: ServiceBusReceivedMessage): ReadMessage | undefined {
  const p = (m.applicationProperties ?? {}) as Record<string, unknown>;
  const messageType = parseMessageType(text(p[Prop.MessageType]));
  const eventId = text(p[Prop.EventId]);
  if (!messageType || !eventId) return undefined;
  const content = decodeBody(m.body).content;
  const out: ReadMessage = {
    messageId: text(m.messageId) ?? '',
    sessionId: m.sessionId ?? '',
    messageType,
    eventId,
    enqueuedAt: (m.enqueuedTimeUtc instanceof Date ? m.enqueuedTimeUtc : new Date()).toISOString(),
  };
  const set = <K extends keyof ReadMessage>(k: K, v: ReadMessage[K] | undefined | null) => {
    if (v !== undefined && v !== null) out[k] = v;
  };
  set('eventTypeId', text(p[Prop.EventTypeId]) ?? content.EventContent?.EventTypeId ?? undefined);
  set('from', text(p[Prop.From]));
  set('to', text(p[Prop.To]));
  set('parentMessageId', text(p[Prop.ParentMessageId]));
  set('retryCount', count(p[Prop.RetryCount]));
  set('deadLetterReason', text(p[Prop.DeadLetterReason]));
  set('deadLetterErrorDescription', text(p[Prop.DeadLetterErrorDescription]));
  set('handoffReason', text(p[Prop.HandoffReason]));
  set('externalJobId', text(p[Prop.ExternalJobId]));
  set('expectedBy', text(p[Prop.ExpectedBy]));
  set('errorText', content.ErrorContent?.ErrorText ?? undefined);
  set('errorType', content.ErrorContent?.ErrorType ?? undefined);
  return out;
}

/**
 * A row as the book keeps it: what the guard reads beside the public view. `appliedMessageIds` as the store keeps
 * them (contract/appliedMessageIds.ts), so a terminal copy that comes back after a later message is refused
 * (already-applied) here as the Resolver refuses it, instead of setting the row back. `namedAsParent`: the
 * ParentMessageIds of the row's messages that are not history-only, the history's answer the Resolver queries for a
 * copy past the applied ids (asksHistoryForCopy), so the book refuses those copies too. `retriedParents`: the
 * ParentMessageIds of the row's RetryRequests (the failed deliveries the retry policy answered), each with the latest
 * enqueue time of a retry naming it, the history's answer for a failure its own retry superseded
 * (asksHistoryForRetry): only a retry enqueued no earlier than the failure counts, as in the store's query (an older
 * SDK's retry ids repeat from one series to the next, so an earlier series' retry can name a later final failure's
 * delivery).
 */
type BookRow = EventOutcome & { parentMessageId: string | null; appliedMessageIds: string[]; namedAsParent: Set<string>; retriedParents: Map<string, string> };

/** Status rows by endpoint and event, folded from Resolver messages in arrival order. */
export class OutcomeBook {
  private readonly rows = new Map<string, BookRow>();
  private readonly listeners = new Set<() => void>();

  /** Applies one Resolver-topic message as the Resolver would. Returns the row it touched, if any. */
  record(message: ServiceBusReceivedMessage): EventOutcome | undefined {
    const m = readOutcomeMessage(message);
    if (!m) return undefined;
    const endpointId = endpointOf(m);
    if (!endpointId) return undefined;
    const key = `${endpointId}\u0000${m.eventId}`;
    let row = this.rows.get(key);
    const entry: OutcomeEntry = { messageId: m.messageId, messageType: m.messageType, applied: false, enqueuedAt: m.enqueuedAt };
    for (const k of ['from', 'to', 'retryCount', 'errorText', 'errorType', 'deadLetterReason', 'deadLetterErrorDescription'] as const) {
      if (m[k] !== undefined) (entry as unknown as Record<string, unknown>)[k] = m[k];
    }
    if (isHistoryOnly(m)) {
      entry.ignored = 'history-only';
      if (row) row.history.push(entry);
      this.notify();
      return row;
    }
    const { status, subStatus } = resultingStatus(m.messageType, m.deadLetterErrorDescription);
    entry.status = status;
    const view = row
      ? {
          status: row.status,
          messageType: row.messageType,
          parentMessageId: row.parentMessageId,
          lastMessageId: row.messageId,
          appliedMessageIds: row.appliedMessageIds,
        }
      : null;
    const incoming = { status, messageType: m.messageType, messageId: m.messageId };
    const answered = asksHistoryForCopy(incoming, view) ? { ...incoming, supersededInHistory: row!.namedAsParent.has(m.messageId) } : incoming;
    const retriedAt = m.parentMessageId !== undefined ? row?.retriedParents.get(m.parentMessageId) : undefined;
    const retried = asksHistoryForRetry(answered, view) && m.parentMessageId !== undefined ? { ...answered, retriedInHistory: retriedAt !== undefined && retriedAt >= m.enqueuedAt } : answered;
    const decision = decideStaleWrite(retried, view);
    const retryOf = m.messageType === MessageType.RetryRequest ? m.parentMessageId : undefined;
    if (row && m.parentMessageId !== undefined) row.namedAsParent.add(m.parentMessageId);
    if (row && retryOf !== undefined) noteRetry(row.retriedParents, retryOf, m.enqueuedAt);
    if (!decision.apply) {
      entry.ignored = decision.reason;
      row?.history.push(entry);
      this.notify();
      return row;
    }
    entry.applied = true;
    const next: BookRow = {
      endpointId,
      eventId: m.eventId,
      sessionId: m.sessionId,
      originalMessageId: row?.originalMessageId ?? m.messageId,
      status,
      messageType: m.messageType,
      messageId: m.messageId,
      parentMessageId: m.parentMessageId ?? null,
      appliedMessageIds: nextAppliedMessageIds(row ? { lastMessageId: row.messageId, appliedMessageIds: row.appliedMessageIds } : null, m.messageId),
      namedAsParent: row?.namedAsParent ?? new Set(m.parentMessageId !== undefined ? [m.parentMessageId] : []),
      retriedParents: row?.retriedParents ?? new Map(retryOf !== undefined ? [[retryOf, m.enqueuedAt]] : []),
      history: row?.history ?? [],
    };
    const eventTypeId = m.eventTypeId ?? row?.eventTypeId;
    if (eventTypeId !== undefined) next.eventTypeId = eventTypeId;
    if (subStatus !== undefined) next.subStatus = subStatus;
    if (m.retryCount !== undefined) next.retryCount = m.retryCount;
    if (m.errorText !== undefined) next.errorText = m.errorText;
    if (m.errorType !== undefined) next.errorType = m.errorType;
    if (m.deadLetterReason !== undefined) next.deadLetterReason = m.deadLetterReason;
    const handedOffBy = m.messageType === MessageType.PendingHandoffResponse ? m.parentMessageId : undefined;
    if (status === ResolutionStatus.Pending && (m.handoffReason || m.externalJobId || m.expectedBy || handedOffBy)) {
      next.handoff = {};
      if (handedOffBy !== undefined) next.handoff.handedOffByMessageId = handedOffBy;
      if (m.handoffReason !== undefined) next.handoff.reason = m.handoffReason;
      if (m.externalJobId !== undefined) next.handoff.externalJobId = m.externalJobId;
      if (m.expectedBy !== undefined) next.handoff.expectedBy = m.expectedBy;
    }
    next.history.push(entry);
    this.rows.set(key, next);
    row = next;
    this.notify();
    return row;
  }

  /**
   * The rows matching `ref`: an event id, or the message id of the publish (every consumer's copy of a published
   * event keeps it), optionally on one endpoint.
   */
  find(ref: string, endpointId?: string): EventOutcome[] {
    const out: EventOutcome[] = [];
    for (const row of this.rows.values()) {
      if (endpointId !== undefined && row.endpointId !== endpointId) continue;
      if (row.eventId === ref || row.originalMessageId === ref) out.push(publicView(row));
    }
    return out;
  }

  /** Every row, for assertions over a whole run. */
  all(): EventOutcome[] {
    return [...this.rows.values()].map(publicView);
  }

  /** Calls `listener` after every recorded message until the returned function is called. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private notify(): void {
    for (const l of this.listeners) l();
  }
}

/** Keeps the latest enqueue time of the retries naming `parent` (ISO strings of one format: ordered as strings). */
function noteRetry(retriedParents: Map<string, string>, parent: string, enqueuedAt: string): void {
  const known = retriedParents.get(parent);
  if (known === undefined || enqueuedAt > known) retriedParents.set(parent, enqueuedAt);
}

function publicView(row: BookRow): EventOutcome {
  const { parentMessageId: _parent, appliedMessageIds: _applied, namedAsParent: _named, retriedParents: _retried, ...rest } = row;
  return { ...rest, history: [...rest.history] };
}
