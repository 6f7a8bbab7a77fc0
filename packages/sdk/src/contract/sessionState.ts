// Per-session state of an endpoint's main subscription, stored as JSON in the Service Bus session state.
//
// Forward compatible: every object here is a loose object, so keys this version does not know (written by a newer
// SDK during a rolling deploy) are kept on read and written back unchanged. A strict or stripping schema would make an
// older instance drop a newer one's fields on its next write (ReleasedBy and ReparkedUntil were such fields once), and
// the newer instance would then act as if its fix had never been recorded for that session.
import { z } from 'zod';
import { describeIssues } from './envelope.ts';

const count = z.number().int().nonnegative();

/** What a release answered the Resolver: enough to send the same answer again (see ReleasedBy). */
export const releaseAnswerSchema = z.looseObject({
  MessageType: z.enum(['ResolutionResponse', 'SkipResponse']),
  /** A discarded retry's SkipResponse text and type (bounded: session state has a size limit). */
  ErrorText: z.string().optional(),
  ErrorType: z.string().optional(),
});
export type ReleaseAnswer = z.infer<typeof releaseAnswerSchema>;

/** One delivery of one event: an entry of ReleasedBlocks or PendingHandoffs. */
const deliverySchema = z.looseObject({ EventId: z.string(), MessageId: z.string() });
type Delivery = z.infer<typeof deliverySchema>;

/**
 * The entries of a list of deliveries this version can read; the others are dropped. One entry failing the whole
 * state would make every delivery of the session fail to read its state; a dropped entry only costs what the list
 * adds (ReleasedBlocks: a settlement is matched by EventId alone, as before; PendingHandoffs: that handoff's
 * settlement is refused, as before the list existed).
 */
function readableDeliveries(entries: unknown[]): Delivery[] {
  return entries.flatMap((entry) => {
    const parsed = deliverySchema.safeParse(entry);
    return parsed.success ? [parsed.data] : [];
  });
}

/** A list of deliveries as read: readable entries kept, anything else (not a list, absent) read as []. */
const deliveryList = () => z.array(z.unknown()).transform(readableDeliveries).catch([]).default([]);

export const sessionStateSchema = z.looseObject({
  /** EventId of the event whose failure (or handoff park) blocks the session; null when not blocked. */
  BlockedByEventId: z.string().nullable().default(null),
  /**
   * MessageId of the delivery that blocked the session; a successful resubmission records it in the inbox, and a
   * handoff command naming another delivery of the event (HandedOffByMessageId) is refused as a settlement of an
   * earlier handoff. Absent in state written before it existed: the EventId alone decides then.
   */
  BlockedByMessageId: z.string().nullable().default(null),
  /** Legacy: broker-deferred sequence numbers. Read for compatibility, never written by us. */
  DeferredSequenceNumbers: z.array(z.number().int()).default([]),
  /** Messages ever parked on the Deferred subscription for this session (never decremented). */
  DeferredCount: count.default(0),
  /** The DeferralSequence the next parked message gets (FIFO ordinal). */
  NextDeferralSequence: count.default(0),
  /**
   * DESIGN.md §5, ordering during replay: every parked sequence below this one has come back as a replayed copy
   * and been handled (or re-parked). While the session is unblocked and NextReplaySequence < NextDeferralSequence,
   * the session is draining: a new message must park behind the ones still waiting instead of overtaking them.
   */
  NextReplaySequence: count.default(0),
  /**
   * One past the highest DeferralSequence given to a replayed copy parked again (it met a block). That copy keeps
   * its place ahead of the messages first parked while its pass ran, although their sequences are lower: a replayed
   * copy parked only once (not SdkProp.Reparked) below this bound is parked again behind it instead of running.
   */
  ReparkedUntil: count.default(0),
  /**
   * The delivery that last released the session (a successful or discarded retry, a skip, a resubmission, a completed
   * handoff). Its settlement writes this state first, then asks for the replay and answers the Resolver; when a later
   * step fails, the redelivery of that same message finds the session no longer blocked by its event and would take
   * it for a late command. This marks it as the release's own redelivery, which finishes the missing steps (a
   * resubmission's redelivery is the exception: it runs its handler again and answers under a fresh MessageId).
   * Absent in state written before it existed: reads as null. The next state write made by any other delivery
   * clears it (a session's messages are settled in order, so the releasing message was settled by then): a later
   * copy with the same MessageId is then a late command again.
   */
  ReleasedBy: z
    .looseObject({
      EventId: z.string(),
      MessageId: z.string(),
      /**
       * The answer the release sent, recorded so a redelivered releasing retry re-sends it identically instead of
       * running its handler again (a second run could fail, or mark a handoff, over a row the Resolver has already
       * closed). Absent when written before it existed: such a redelivery only finishes the replay request.
       */
      Answer: releaseAnswerSchema.optional(),
    })
    .nullable()
    .default(null),
  /**
   * The deliveries whose block on this session is over, most recent last, at most MAX_RELEASED_BLOCKS: released
   * (a completed handoff, a skip, a successful retry or resubmission) or replaced by a later block of the same event
   * (a resubmission handed off again). A handoff command naming one of them (HandedOffByMessageId) settles a handoff
   * that is no longer pending: job 1's late failure after job 2 completed the event would otherwise be answered and
   * record Failed over Completed. Bounded, as session state has a size limit: a settlement older than the last few
   * blocks of the session is matched by EventId alone, as before. Absent in state written before it existed: [].
   */
  ReleasedBlocks: deliveryList(),
  /**
   * Handoffs pending while another event blocks the session, oldest first, one per event, at most
   * MAX_PENDING_HANDOFFS: an operator resubmitted an event that does not block the session (dead-lettered earlier,
   * say) and its handler handed off, while another event's failure blocks it. That block stays, so BlockedBy* cannot
   * record this handoff; without this list its completion was refused for ever (the session was not blocked by the
   * event) while the Manager, seeing a Pending (Handoff) row, kept accepting it. A completion naming an entry is
   * answered without touching the block and consumes the entry (remembered in ReleasedBlocks), as do a later
   * successful or discarded resubmission and a skip of the event; a new handoff of the event replaces it, a block of
   * the event supersedes it. A failure is answered and leaves it, as a failed blocking handoff leaves its block, until
   * the operator resubmits or skips the event. Absent in state written before it existed: [].
   */
  PendingHandoffs: deliveryList(),
  /**
   * Handoffs whose failure was answered (HandoffFailedRequest) while still recorded - the block's delivery or a
   * PendingHandoffs entry, which a failure leaves in place. The row is Failed then, so a delivery of that very
   * resubmission (a console dead-letter replay keeps its MessageId) is an operator's new attempt and runs the handler,
   * where a copy of a handoff still pending is completed without running it. Entries that no longer name a recorded
   * handoff are dropped at the next failure; a new handoff by the same delivery removes its entry. Absent in state
   * written before it existed: [] (such a replay is completed as a copy, as before).
   */
  FailedHandoffs: deliveryList(),
  /**
   * The delivery that last parked a message on this session: its MessageId, the broker's SequenceNumber of that
   * delivery (a redelivery keeps it; a re-publish with the same MessageId gets a new one) and the DeferralSequence it
   * was parked with. A park writes this state after the parked copy went out, then completes the delivery; when the
   * completion fails (refused, the lock lost), the redelivery comes first in the session and finds itself here, so it
   * is completed without parking again. Before, it was parked a second time under the next sequence, and the replay
   * ran the event twice. Absent in state written before it existed, or unreadable: null (the redelivery parks again,
   * as before).
   */
  ParkedBy: z
    .looseObject({ MessageId: z.string(), SequenceNumber: z.string().optional(), DeferralSequence: count })
    .nullable()
    .catch(null)
    .default(null),
});
export type SessionState = z.infer<typeof sessionStateSchema>;

export function emptySessionState(): SessionState {
  return {
    BlockedByEventId: null,
    BlockedByMessageId: null,
    DeferredSequenceNumbers: [],
    DeferredCount: 0,
    NextDeferralSequence: 0,
    NextReplaySequence: 0,
    ReparkedUntil: 0,
    ReleasedBy: null,
    ReleasedBlocks: [],
    PendingHandoffs: [],
    FailedHandoffs: [],
    ParkedBy: null,
  };
}

/** How many released blocks the session state remembers (each is two ids: about 200 bytes at most). */
export const MAX_RELEASED_BLOCKS = 16;

/** The state with the current block's delivery remembered as released (no change when nothing blocks it). */
export function rememberReleasedBlock(state: SessionState): SessionState {
  return rememberReleased(state, state.BlockedByEventId, state.BlockedByMessageId);
}

/** The state with the delivery `messageId` of event `eventId` remembered as no longer pending. */
function rememberReleased(
  state: SessionState,
  EventId: string | null | undefined,
  MessageId: string | null | undefined,
): SessionState {
  if (EventId == null || EventId === '' || MessageId == null || MessageId === '') return state;
  const others = state.ReleasedBlocks.filter((b) => b.EventId !== EventId || b.MessageId !== MessageId);
  return { ...state, ReleasedBlocks: [...others, { EventId, MessageId }].slice(-MAX_RELEASED_BLOCKS) };
}

/**
 * How many handoffs pending outside the block the session state records. Each is two ids (about 200 bytes at most).
 * Reaching it takes that many events of one session resubmitted and handed off while the session stays blocked; one
 * more is not recorded (pendingHandoffsFull) and the subscriber dead-letters its resubmission with a reason the
 * operator sees. Forgetting the oldest instead, as once, lost that handoff silently: its row stayed Pending (Handoff)
 * and its completion was refused.
 */
export const MAX_PENDING_HANDOFFS = 64;

/**
 * Whether a handoff of event `eventId` cannot be recorded beside the block: the list is at its bound and holds no
 * entry of the event to replace.
 */
export function pendingHandoffsFull(state: SessionState, eventId: string): boolean {
  return state.PendingHandoffs.length >= MAX_PENDING_HANDOFFS && pendingHandoffOf(state, eventId) === undefined;
}

/** The handoff of event `eventId` pending outside the block, if any. */
export function pendingHandoffOf(state: SessionState, eventId: string): Delivery | undefined {
  return state.PendingHandoffs.find((h) => h.EventId === eventId);
}

/**
 * The state with the delivery `messageId` of event `eventId` recorded as its handoff pending outside the block. An
 * earlier handoff of the event pending there is replaced, and remembered as over (ReleasedBlocks), as a block
 * replaced by a later handoff of its event is. Nothing is dropped to make room: the caller checks
 * pendingHandoffsFull first.
 */
export function addPendingHandoff(state: SessionState, eventId: string, messageId: string): SessionState {
  const earlier = pendingHandoffOf(state, eventId);
  const base =
    earlier && earlier.MessageId !== messageId ? rememberReleased(state, eventId, earlier.MessageId) : state;
  const others = base.PendingHandoffs.filter((h) => h.EventId !== eventId);
  return { ...base, PendingHandoffs: [...others, { EventId: eventId, MessageId: messageId }] };
}

/**
 * The state with the handoff of event `eventId` pending outside the block settled: removed and remembered as over
 * (ReleasedBlocks). The same object when the event has none.
 */
export function settlePendingHandoff(state: SessionState, eventId: string): SessionState {
  const pending = pendingHandoffOf(state, eventId);
  if (!pending) return state;
  const released = rememberReleased(state, eventId, pending.MessageId);
  return { ...released, PendingHandoffs: state.PendingHandoffs.filter((h) => h !== pending) };
}

/** Whether the handoff made by delivery `messageId` of event `eventId` is the block's or pending beside it. */
function isRecordedHandoff(state: SessionState, eventId: string, messageId: string): boolean {
  if (state.BlockedByEventId === eventId && state.BlockedByMessageId === messageId) return true;
  return pendingHandoffOf(state, eventId)?.MessageId === messageId;
}

/**
 * The state with the recorded handoff of delivery `messageId` of event `eventId` marked failed (FailedHandoffs).
 * Entries that no longer name a recorded handoff are dropped, which bounds the list by the handoffs recorded. The
 * same object when nothing changes.
 */
export function markHandoffFailed(state: SessionState, eventId: string, messageId: string): SessionState {
  const kept = state.FailedHandoffs.filter(
    (f) => isRecordedHandoff(state, f.EventId, f.MessageId) && (f.EventId !== eventId || f.MessageId !== messageId),
  );
  const next = isRecordedHandoff(state, eventId, messageId) ? [...kept, { EventId: eventId, MessageId: messageId }] : kept;
  const same =
    next.length === state.FailedHandoffs.length &&
    next.every((f, i) => f.EventId === state.FailedHandoffs[i]?.EventId && f.MessageId === state.FailedHandoffs[i]?.MessageId);
  return same ? state : { ...state, FailedHandoffs: next };
}

/** Whether the failure of the handoff made by delivery `messageId` of event `eventId` was answered (FailedHandoffs). */
export function isFailedHandoff(state: SessionState, eventId: string, messageId: string): boolean {
  return state.FailedHandoffs.some((f) => f.EventId === eventId && f.MessageId === messageId);
}

/** The state without a failure mark of delivery `messageId` of event `eventId`: it handed off again. */
export function clearHandoffFailed(state: SessionState, eventId: string, messageId: string): SessionState {
  if (!isFailedHandoff(state, eventId, messageId)) return state;
  const FailedHandoffs = state.FailedHandoffs.filter((f) => f.EventId !== eventId || f.MessageId !== messageId);
  return { ...state, FailedHandoffs };
}

/** Whether the delivery `messageId` of event `eventId` blocked this session once and no longer does. */
export function isReleasedBlock(state: SessionState, eventId: string, messageId: string): boolean {
  return state.ReleasedBlocks.some((b) => b.EventId === eventId && b.MessageId === messageId);
}

export function isBlocked(state: SessionState): boolean {
  return state.BlockedByEventId != null && state.BlockedByEventId !== '';
}

/** Unblocked, but parked messages have not all been replayed yet: new messages must park behind them. */
export function isDraining(state: SessionState): boolean {
  return !isBlocked(state) && state.NextReplaySequence < state.NextDeferralSequence;
}

/** The keys this version knows; anything else in a state object came from another (newer) version. */
const KNOWN_KEYS: ReadonlySet<string> = new Set(Object.keys(sessionStateSchema.shape));

/** Keys a newer SDK wrote that this version does not know: kept, never interpreted. */
function unknownSessionStateKeys(state: SessionState): string[] {
  return Object.keys(state).filter((k) => !KNOWN_KEYS.has(k));
}

/**
 * Nothing to remember: written as a zero-length payload, as an absent state reads back as all defaults. A state
 * holding keys of a newer version is never empty: writing zero bytes would erase them.
 */
export function isEmptySessionState(state: SessionState): boolean {
  return (
    unknownSessionStateKeys(state).length === 0 &&
    !isBlocked(state) &&
    (state.BlockedByMessageId == null || state.BlockedByMessageId === '') &&
    state.DeferredSequenceNumbers.length === 0 &&
    state.DeferredCount === 0 &&
    state.NextDeferralSequence === 0 &&
    state.NextReplaySequence === 0 &&
    state.ReparkedUntil === 0 &&
    state.ReleasedBy == null &&
    state.ReleasedBlocks.length === 0 &&
    state.PendingHandoffs.length === 0 &&
    state.FailedHandoffs.length === 0 &&
    state.ParkedBy == null
  );
}

export function encodeSessionState(state: SessionState): Uint8Array {
  if (isEmptySessionState(state)) return new Uint8Array(0);
  return new TextEncoder().encode(JSON.stringify(sessionStateSchema.parse(state)));
}

export class InvalidSessionStateError extends Error {
  override readonly name = 'InvalidSessionStateError';
}

/**
 * Reads session state as returned by the Service Bus client (a Buffer, a string, an already-parsed object, or
 * nothing). Absent or zero-length → defaults. Anything unreadable throws InvalidSessionStateError naming the
 * problem: guessing "not blocked" would release a blocked session.
 */
export function decodeSessionState(raw: unknown): SessionState {
  if (raw == null) return emptySessionState();
  let value: unknown = raw;
  if (raw instanceof Uint8Array) {
    if (raw.byteLength === 0) return emptySessionState();
    value = new TextDecoder().decode(raw);
  }
  if (typeof value === 'string') {
    if (value.trim() === '') return emptySessionState();
    try {
      value = JSON.parse(value);
    } catch {
      throw new InvalidSessionStateError('session state is not valid JSON');
    }
  }
  const parsed = sessionStateSchema.safeParse(value);
  if (!parsed.success)
    throw new InvalidSessionStateError(`session state is invalid: ${describeIssues(parsed.error)}`);
  return parsed.data;
}
