// The Manager: operator commands on one event (resubmit, skip, handoff settlement). Each command is
//   1. checked against the event's current row (404 unknown, 409 when its state does not allow the action),
//   2. claimed with a compare-and-swap write of the row (expect: the row version the operator acted on), so two
//      clicks, two tabs or two console replicas cannot both send it; the row shows Pending at once,
//   3. sent to the Manager topic (DESIGN.md §3) with a MessageId derived from the message it answers,
//   4. recorded in the event's audit trail under that same id - the audit is the "sent" receipt, found again by a
//      point read (never by scanning the event's newest audits, which other entries could push out of reach).
// A send that fails undoes the claim: the row is put back to the version it had (a compare-and-swap on the claim's
// version, so a row the Resolver has moved since is left alone) and the failure is audited (CommandNotSent); the
// operator sees 503 and the event as it was, and may try again. If even that undo cannot be written (the store is
// down too) or the process dies between claim and receipt, the claim stays without a receipt: Reconcile finds it
// after CLAIM_GRACE_MS and re-sends or restores it (server/reconcile/). A bulk job's claims whose send its runner
// withheld at the last moment (CommandOrigin.mayStillSend: its lease ended) are undone and audited the same way -
// nothing was sent, so the event is shown as it was and a repeat claims it afresh - but answered SendWithheld, not
// 503; only a claim that has waited past WITHHELD_UNDO_MS (the holder stalled that long) is left for Reconcile or a
// repeat, as another replica may have re-sent it by then.
// A repeat of a command whose receipt exists is answered 'duplicate' and sends nothing - when it asks for the same
// thing: a resubmit of the same failure with a different payload, or a handoff settlement with a different error
// text or note, is refused (409), whether or not the first one's receipt exists (server/manager/repeatConflict.ts).
// A repeat of a claim
// without a receipt whose command the Resolver has recorded (the event's history holds it) writes the missing
// receipt and is answered 'duplicate': the command is on the broker, and a second copy would run the handler twice
// where the endpoint keeps no inbox. A claim without a receipt and never recorded is sent again with the same
// MessageId, which the subscriber's inbox absorbs in the rare case the first send did reach the broker; but such a
// claim may also be a send still in progress in another replica, so it is re-sent only when this process saw its
// send fail, or when the claim is older than CLAIM_GRACE_MS; otherwise the repeat is refused (409, try again shortly).
import { ServiceBusError, type ServiceBusClient, type ServiceBusMessageBatch, type ServiceBusSender } from '@azure/service-bus';
import { isRequestType, MessageType, PendingSubStatus, ResolutionStatus, Topic } from '@nimbus/sdk/contract';
import type { MessageType as MessageTypeT, ResolutionStatus as ResolutionStatusT } from '@nimbus/sdk/contract';
import { isDeepStrictEqual } from 'node:util';
import { AuditType, auditEntrySchema, EVENT_ROWS_LIMIT, type AuditEntry, type AuditWrite, type EventRows, type EventSessions, type HistoryEntry, type MessageStore, type RowExpectation, type Settled, type StatusRow, type StatusWrite } from '../../lib/store/index.ts';
import { eventHistory } from '../reconcile/history.ts';
import { inHistoryOrder } from '../historyOrder.ts';
import { sendCertainlyRefused } from '../subscriptions/sendOutcome.ts';
import { conflict, HttpError, notFound } from '../http.ts';
import { BROKER_MESSAGE_BYTES, isSizeRefusal, requireSendableSize } from '../messageSize.ts';
import { log } from '../log.ts';
import { auditorFields, buildCommand, COMMAND_ID_PREFIX, commandMessageId, commandType, handedOffBy, isManagerClaim, originatingOf, type Auditor, type BuiltCommand, type CommandSpec } from './commands.ts';
import { withSendSpan } from '@nimbus/sdk';
import { boundedClose } from '@nimbus/sdk/servicebus';
import { limiter, type Limiter } from '../../lib/concurrency/limiter.ts';
import { sleep } from '../../lib/concurrency/sleep.ts';
import { claimWasEdited, commandRecorded, type Asker, handoffMismatch, recordedHandoff, resubmitMismatch, rowSaysEdited, storedBeforeClaim, type StoredRequest } from './repeatConflict.ts';

export interface CommandResult {
  endpointId: string;
  eventId: string;
  sessionId: string;
  /** sent = a command went out now; duplicate = the same command was already sent, nothing was sent again. */
  outcome: 'sent' | 'duplicate';
  messageId: string;
  messageType: string;
}

/** The bulk operation (server/operations/) a command is one step of. */
export interface CommandOrigin {
  operationId: string;
  /**
   * Asked after the claims are written and right before each broker send - every message batch of a lot, a re-send
   * of an abandoned claim too - and before a one-event command reads or claims anything: false means the caller may
   * no longer act - a bulk job's runner whose lease has ended or is about to, after a stall inside this call - and
   * nothing more is sent for those events; they settle with SendWithheld, their claims undone and audited as after a
   * failed send (see WITHHELD_UNDO_MS for one that has waited too long), an event not yet claimed left untouched.
   * Treated as sticky within a lot: once it says no, no later batch of the lot goes. It cannot recall a batch
   * already handed to the broker: that one still lands, however late its send returns (up to SEND_TIMEOUT_MS).
   */
  mayStillSend?: () => boolean;
}

/**
 * The answer for an event whose command was not sent because the caller's mayStillSend said no: not a refusal
 * and not a send failure (no 503: the caller stops rather than retry), though its claim is undone and audited
 * CommandNotSent as a failed send's is.
 */
export class SendWithheld extends Error {
  override readonly name = 'SendWithheld';
  constructor(eventId: string) {
    super(`the command for event ${eventId} was not sent: its caller may no longer send (a bulk job's lease ended)`);
  }
}

/** By name too: in the built console the runner and the Manager can hold different bundled copies of this class. */
export function isSendWithheld(err: unknown): boolean {
  return err instanceof SendWithheld || (err instanceof Error && err.name === 'SendWithheld');
}

/** Whether `origin`'s caller may still send (callers without a guard always may). */
const mayStillSend = (origin: CommandOrigin | undefined) => origin?.mayStillSend?.() ?? true;

/** What the caller of one command says of itself (Manager.execute). */
export interface ExecuteCaller {
  /** Whether the caller may read the event's audit trail (default yes): see repeatConflict.ts Asker. */
  mayReadAudits?: boolean;
  /**
   * Called with the row the command acts on - the one it is about to claim, or its own claim on a repeat - before
   * anything is claimed or sent (again on each attempt, should the claim lose a race); a throw refuses the command
   * with that error. The edited resubmit checks its payload against that row's event type here
   * (server/manager/editedResubmit.ts): before, the routes checked it against the event's newest row, which for an
   * event in two sessions may be another type than the row resubmitted (editedSchemaRow.test.ts).
   */
  checkRow?: (row: StatusRow) => void;
}

/** One event of a bulk step: the session of the row the operation selected, when it knows it. */
export interface CommandTarget {
  endpointId: string;
  eventId: string;
  sessionId?: string;
  /**
   * How many rows the event has, parsing or not, when the caller has just read it with the session (runBulk, from
   * store.listEventSessions): the lot then does not query the endpoint's partitions again to count them.
   */
  rows?: number;
}

/** The answer to a resubmit or skip whose seen version (CommandSpec.seenMessageId) is no longer the event's. */
export const CHANGED_SINCE_SEEN = 'the event has changed since you opened it (another command or outcome came in); nothing was sent - reload it and decide again';
/**
 * The JSON error's `code` of that answer: the event page tells it from the other 409s (a state that does not allow
 * the command, a claim under way) by this, not by the detail's wording, and then shows the event as it now is.
 */
export const CHANGED_SINCE_SEEN_CODE = 'changed';
/**
 * The JSON error's `code` of a handoff settlement refused because the handoff is settled already - the same one sent
 * before (settle.ts), one sent with another text (#repeat), or the event no longer a pending handoff at all. Only
 * this 409 tells an agent to drop its result: the others (rows that no longer parse, a claim under way, "kept
 * changing", another handoff pending) are not the handoff settled, and the SDK's serve keeps its result for them
 * (packages/sdk/src/agentClient.ts SETTLED_CODE; before, it took every 409 as settled and the work ran again).
 */
export const HANDOFF_SETTLED_CODE = 'settled';

/** The history property the Resolver records a request's unparsable EventJson under (resolver-worker/project.ts). */
const RESOLVER_PAYLOAD_PROBLEM = 'ResolverPayloadProblem';
/** The way out for a claim whose command is too large: re-sending it never goes, so it is undone, then sent smaller. */
const RESTORE_THEN_SMALLER = 'restore the event in Operations → Reconcile, then send a smaller one';

const SETTLEABLE: ReadonlySet<ResolutionStatusT> = new Set([
  ResolutionStatus.Failed,
  ResolutionStatus.DeadLettered,
  ResolutionStatus.Unsupported,
]);

/** How long a claim without a receipt is presumed to be a send in progress elsewhere. */
export const CLAIM_GRACE_MS = 30_000;

/** Longest a click waits for the broker: past it the send is abandoned (its outcome unknown) and answered 503. */
export const SEND_TIMEOUT_MS = 15_000;

/**
 * A withheld send undoes its claim only while the claim is younger than this. A failed send's undo comes at most
 * SEND_TIMEOUT_MS after its claim, well inside CLAIM_GRACE_MS, so no repeat can have re-sent the claim yet; a
 * caller stalled between its claim and the guard may wake after any time, and once the claim is CLAIM_GRACE_MS old
 * another replica may have re-sent it: putting the row back then would show Failed a command on its way, and
 * invite a second copy. The same margin as a failed send's is kept.
 */
export const WITHHELD_UNDO_MS = CLAIM_GRACE_MS - SEND_TIMEOUT_MS;

/**
 * The waits before the further attempts at a sent command's receipt when the store fails it: the command is on the
 * broker, so the answer is 'sent' whatever the store says, and the click waits only this long for its receipt.
 */
export const RECEIPT_RETRY_DELAYS_MS: readonly number[] = [200, 1_000];

/** How many sent commands whose receipt could not be written a process remembers (#unreceipted; oldest dropped). */
const UNRECEIPTED_MAX = 10_000;

const isHandoff = (row: StatusRow) =>
  row.status === ResolutionStatus.Pending && row.subStatus === PendingSubStatus.Handoff;

/** Why `spec` is not allowed on `row` (undefined when it is). */
export function refusal(spec: CommandSpec, row: StatusRow): string | undefined {
  const state = row.subStatus ? `${row.status} (${row.subStatus})` : row.status;
  switch (spec.kind) {
    case 'resubmit':
    case 'skip':
      if (SETTLEABLE.has(row.status) || isHandoff(row)) return undefined;
      return `${spec.kind} is not possible for an event that is ${state}`;
    case 'handoffComplete':
    case 'handoffFail':
      if (!isHandoff(row)) return `the event is ${state}, not a pending handoff`;
      if (spec.messageId !== row.lastMessageId && spec.messageId !== row.parentMessageId)
        return `message ${spec.messageId} is not the event's pending handoff (that is ${row.lastMessageId})`;
      return undefined;
  }
}

const AUDIT_TYPE: Record<CommandSpec['kind'], string> = {
  resubmit: AuditType.Resubmit,
  skip: AuditType.Skip,
  handoffComplete: AuditType.CompleteHandoff,
  handoffFail: AuditType.FailHandoff,
};

export class Manager {
  readonly #store: MessageStore;
  readonly #client: ServiceBusClient;
  #sender: ServiceBusSender | undefined;
  /** Commands in flight in this process, by event: a double click is serialized here before it reaches Cosmos. */
  readonly #inFlight = new Map<string, Promise<unknown>>();
  /** Command ids whose send failed in this process: their claim is known to be abandoned. */
  readonly #failedSends = new Set<string>();
  /**
   * Commands this process sent whose receipt it could not write (the store failed right after the send, every
   * attempt), by command id: the receipt, stamped with when the send was done. A repeat here, or Reconcile's re-send
   * from this process, finds the command sent by it - 'duplicate', never a second copy - and writes the receipt then
   * (#lostReceipt). Another replica, or this one after a restart, does not know it: docs/console.md, "No double send".
   */
  readonly #unreceipted = new Map<string, AuditWrite>();
  /** The clock a claim's age is read on (tests move it past WITHHELD_UNDO_MS). */
  readonly #now: () => number;
  /**
   * The broker's per-message size for a command to an endpoint as the console knows it now: the smaller of the
   * Manager topic's and the endpoint topic's (server/messageSize.ts CommandMessageSize).
   */
  readonly #brokerMessageBytes: (endpointId: string) => Promise<number>;
  /**
   * The same for a re-send of an abandoned claim (#repeat, resendClaim): undefined when no size is known, and the
   * command - accepted once - is sent for the broker to decide (CommandMessageSize.resendBytes). Default: as a fresh
   * command's.
   */
  readonly #resendMessageBytes: (endpointId: string) => Promise<number | undefined>;

  constructor(options: {
    store: MessageStore;
    client: ServiceBusClient;
    now?: () => number;
    brokerMessageBytes?: (endpointId: string) => Promise<number>;
    resendMessageBytes?: (endpointId: string) => Promise<number | undefined>;
  }) {
    this.#store = options.store;
    this.#client = options.client;
    this.#now = options.now ?? Date.now;
    this.#brokerMessageBytes = options.brokerMessageBytes ?? (() => Promise.resolve(BROKER_MESSAGE_BYTES));
    this.#resendMessageBytes = options.resendMessageBytes ?? this.#brokerMessageBytes;
  }

  /**
   * Closes the sender, waiting at most SEND_TIMEOUT_MS: a close the broker had not answered when the connection
   * dropped never ends by itself (boundedClose), and the console's shutdown (closeContext) waits for this one.
   */
  async close(): Promise<void> {
    const sender = this.#sender;
    this.#sender = undefined;
    if (sender) await boundedClose("closing the Manager's sender", () => sender.close(), { timeoutMs: SEND_TIMEOUT_MS, logger: log });
  }

  /**
   * Runs one command on one event; throws HttpError 404/409 (and 503 when the broker refuses the send). `origin`
   * names the bulk operation the command is a step of: its id goes into the event's audit entry. `caller`: whether
   * the caller may read the event's audit trail (default yes); a refusal names no other principal to one who may
   * not (an Agent-only caller: repeatConflict.ts Asker).
   */
  async execute(endpointId: string, eventId: string, spec: CommandSpec, auditor: Auditor, origin?: CommandOrigin, caller: ExecuteCaller = {}): Promise<CommandResult> {
    const key = `${endpointId}\u0000${eventId}`;
    const previous = this.#inFlight.get(key) ?? Promise.resolve();
    const run = previous.catch(() => undefined).then(() => this.#execute(endpointId, eventId, spec, auditor, origin, caller));
    this.#inFlight.set(key, run);
    try {
      return await run;
    } finally {
      if (this.#inFlight.get(key) === run) this.#inFlight.delete(key);
    }
  }

  async #execute(endpointId: string, eventId: string, spec: CommandSpec, auditor: Auditor, origin?: CommandOrigin, caller: ExecuteCaller = {}): Promise<CommandResult> {
    const mayReadAudits = caller.mayReadAudits ?? true;
    // A caller already fenced claims nothing: asked again after the claim (#sendAndAudit), for a stall while it is written.
    if (!mayStillSend(origin)) throw new SendWithheld(eventId);
    const type = commandType(spec);
    for (let attempt = 0; attempt < 3; attempt++) {
      // The event's rows on this endpoint, newest update first, by one query within one logical partition: the
      // events container's key is [endpointId, eventId] and the query names both, so its cost is the event's rows,
      // not the endpoint's. Every row, whether or not the history names its session (the history would have to be
      // read page by page for that, then each row point-read: measured in docs/console.md).
      const { rows, corrupt, truncated } = await this.#store.listEventRowsChecked(endpointId, eventId);
      if (rows.length === 0 && corrupt.length === 0 && !truncated) throw notFound(`event ${eventId} is not known on endpoint ${endpointId}`);
      // The version the operator acted on, when the caller says which (the event page does): see below.
      const seen = spec.kind === 'resubmit' || spec.kind === 'skip' ? spec.seenMessageId : undefined;
      // An event id can have a row per session it appeared in: act on the one the command fits. With a seen
      // version, only this command's claim answering that version is a repeat of it.
      const claimed = rows.find((r) => this.#isClaimBy(type, spec, r) && (seen === undefined || r.parentMessageId === seen));
      if (claimed) {
        caller.checkRow?.(claimed);
        return this.#repeat(spec, claimed, { auditor, mayReadAudits }, origin);
      }
      // A fresh claim needs every row: the claim of this command may be one that is not in the set (past the
      // query's limit, or no longer parsing), and claiming another session's row would send a second command.
      const incomplete = incompleteRows(eventId, corrupt, truncated);
      if (incomplete) throw conflict(incomplete);
      // A click made on a stale view acts on what the operator saw or not at all: before, it claimed whatever
      // settleable row was there now - another operator's resubmission having failed again under a new message, a
      // second resubmission went out (the handler ran twice) and a resubmit edited against the first failure's
      // payload replaced the other operator's edit (staleClick.test.ts).
      const shown = seen === undefined ? rows : rows.filter((r) => r.lastMessageId === seen);
      if (shown.length === 0) throw conflict(CHANGED_SINCE_SEEN, CHANGED_SINCE_SEEN_CODE);
      const row = shown.find((r) => refusal(spec, r) === undefined);
      if (!row) {
        // A settlement naming a handoff the event has moved on from while another one is pending (a dialog opened on
        // handoff H1, the event resubmitted and handed off again as H2 behind it): the caller's view is stale, as a
        // resubmit's or skip's with an old seen version - 'changed', so the event page shows what the event now is
        // and a second confirm acts on H2 (components/commandFailure.ts). Not 'settled': H1 was never settled here,
        // and an agent keeps its result (docs/agents.md).
        const pending = spec.kind === 'handoffComplete' || spec.kind === 'handoffFail' ? shown.find(isHandoff) : undefined;
        if (pending) throw conflict(refusal(spec, pending) ?? 'the event does not allow this action', CHANGED_SINCE_SEEN_CODE);
        const code = settledCode(spec, shown);
        // Not settled while another command's claim is unsent: its send may fail and its undo (or Reconcile) put
        // the handoff back, to be handed out and worked again - the agent must keep its result (no code).
        if (code !== undefined && (await this.#unsentClaim(rows)))
          throw conflict(`a command is being sent for event ${eventId}; nothing was sent - try again`);
        throw conflict(refusal(spec, shown[0]!) ?? 'the event does not allow this action', code);
      }

      caller.checkRow?.(row);
      const answered = row.lastMessageId;
      let eventTypeId = row.eventTypeId;
      let payload: unknown = undefined;
      if (spec.kind === 'resubmit') {
        eventTypeId = spec.edited?.eventTypeId ?? row.eventTypeId;
        payload = spec.edited ? spec.edited.payload : row.payload;
        if (payload === undefined || payload === null)
          throw conflict('the event has no stored payload to resubmit; resubmit it with an edited payload');
        if (!spec.edited) {
          const notEvent = await this.#storedPayloadNotEvent(row);
          if (notEvent !== undefined) throw conflict(notEvent);
        }
        if (!eventTypeId) throw conflict('the event has no event type; resubmit it with an edited payload and event type');
      }
      // Built before the claim: a command that cannot be built (a result JSON cannot encode) must not leave a claim
      // that nothing will send, answered 409 "being sent" until CLAIM_GRACE_MS or Reconcile.
      const built = buildCommand(spec, row, answered, eventTypeId, payload, auditor);
      // A command too large for the broker is refused before its claim (413, never retried): sent, the broker
      // refused it - a settlement was answered 503 and an agent retried it for ever, and an edited resubmit was
      // claimed (the event shown "being sent") before the refusal, each attempt a claim, an undo and a
      // CommandNotSent entry in the event's history (server/messageSize.ts; tooLarge.test.ts, resubmitTooLarge.test.ts).
      requireSendableSize(sizeWhat(spec), (built.message.body as Buffer).length, await this.#brokerMessageBytes(endpointId));
      const claimedAt = this.#now();
      const claim = await this.#store.writeStatus(claimWrite(spec, row, answered, eventTypeId, payload), claimExpectation(row));
      // Someone else changed the row between our read and our claim: decide again on the new version.
      if (claim.outcome === 'ignored') continue;
      return this.#sendAndAudit(spec, row, built, answered, eventTypeId, payload, auditor, { previous: row, at: claimedAt }, origin);
    }
    throw conflict(`event ${eventId} kept changing; reload it and try again`);
  }

  /**
   * A bulk operation's step: one command (resubmit or skip) for several events, each claimed, sent and receipted
   * as execute() does it, with every stage done for the lot at once - the rows read in one bulk request (by the
   * session the operation selected), the claims written in one (each still a compare-and-swap on the version
   * read), the commands sent in Service Bus message batches, the receipts written in one bulk request. A crash
   * between the stages leaves what one would leave for a single command: claims without receipts (a repeat answers
   * duplicate and writes the receipt if the Resolver recorded the command, else re-sends it with the same MessageId
   * after CLAIM_GRACE_MS), never a second command. An event the lot cannot settle alone - no
   * session known, no row, a row that is not the event's only one (the count a target carries, else the event's
   * rows counted in one query per endpoint, beside the point reads: another row may be this command's own claim, no
   * longer parsing or past the rows limit, where #execute answers 409 and sends nothing), already claimed, refused,
   * nothing to resubmit, a
   * claim that lost a race - goes through
   * the one-event path, so every answer (duplicate, 404, 409) is exactly the one execute() gives. Results are in
   * the order of `targets`; an error (the HttpError execute() would throw) settles only its own event.
   * Without `origin` (the synchronous bulk routes) the receipts are a click's: no operation named.
   * `oneEventConcurrency` bounds the events on the one-event path at a time (default: all at once).
   */
  async executeMany(
    targets: readonly CommandTarget[],
    spec: { kind: 'resubmit' } | { kind: 'skip' },
    auditor: Auditor,
    origin?: CommandOrigin,
    options: { oneEventConcurrency?: number } = {},
  ): Promise<Settled<CommandResult>[]> {
    const out: Settled<CommandResult>[] = new Array(targets.length);
    const keyOf = (t: CommandTarget) => `${t.endpointId}\u0000${t.eventId}`;
    const lot: number[] = [];
    const alone: number[] = [];
    const keys = new Set<string>();
    targets.forEach((t, k) => {
      const key = keyOf(t);
      if (t.sessionId === undefined || this.#inFlight.has(key) || keys.has(key)) alone.push(k);
      else {
        keys.add(key);
        lot.push(k);
      }
    });
    // The lot's events are in flight here as execute() marks them: a click on one of them waits for the lot.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    for (const k of lot) this.#inFlight.set(keyOf(targets[k]!), held);
    // Two bounds, not one: the events here may wait for the lot (a target named twice), and the lot's own
    // one-event path must never wait for a slot one of them holds.
    const n = options.oneEventConcurrency ?? Infinity;
    const lotDone = this.#executeLot(targets, lot, spec, auditor, origin, out, limiter(n)).finally(() => {
      release();
      for (const k of lot) if (this.#inFlight.get(keyOf(targets[k]!)) === held) this.#inFlight.delete(keyOf(targets[k]!));
    });
    const oneAtATime = limiter(n);
    await Promise.all([
      lotDone,
      ...alone.map((k) => settle(out, k, oneAtATime(() => this.execute(targets[k]!.endpointId, targets[k]!.eventId, spec, auditor, origin)))),
    ]);
    return out;
  }

  async #executeLot(
    targets: readonly CommandTarget[],
    lot: number[],
    spec: { kind: 'resubmit' } | { kind: 'skip' },
    auditor: Auditor,
    origin: CommandOrigin | undefined,
    out: Settled<CommandResult>[],
    oneAtATime: Limiter,
  ): Promise<void> {
    // Events for the one-event path (#execute: their in-flight mark is the lot's, held until the lot ends).
    const alone: number[] = [];
    const type = commandType(spec);
    const [rows, counts] = await Promise.all([
      this.#store.getStatusRows(lot.map((k) => ({ endpointId: targets[k]!.endpointId, eventId: targets[k]!.eventId, sessionId: targets[k]!.sessionId! }))).catch(() => lot.map(() => undefined)),
      this.#rowCounts(targets, lot),
    ]);
    const claims: Array<{ k: number; row: StatusRow; eventTypeId: string | null; payload: unknown; built: BuiltCommand }> = [];
    // Per endpoint: a lot may span endpoints, and each endpoint's topic may take less than the Manager topic.
    const endpointIds = [...new Set(lot.map((k) => targets[k]!.endpointId))];
    const sizes = await Promise.all(endpointIds.map((id) => this.#brokerMessageBytes(id)));
    const brokerBytes = new Map(endpointIds.map((id, i) => [id, sizes[i]!]));
    lot.forEach((k, i) => {
      const row = rows[i];
      // Only a fresh claim of the selected row, when it is the event's only row, is done here; anything else is
      // decided (and worded) by #execute on the event's whole set: a row beside it may be this command's own claim,
      // damaged or past the rows limit, which #execute refuses to act around (409) rather than send a second command.
      if (!row || counts[i] !== 1 || this.#isClaimBy(type, spec, row) || refusal(spec, row) !== undefined) return alone.push(k);
      const payload = spec.kind === 'resubmit' ? row.payload : undefined;
      // A string payload may be the raw text of one that did not parse, and a payload a command wrote may be a handoff
      // settlement's content or carried on from either: #execute asks the history (#storedPayloadNotEvent), and refuses it.
      if (spec.kind === 'resubmit' && (payload === undefined || payload === null || typeof payload === 'string' || writtenByCommand(row) || !row.eventTypeId)) return alone.push(k);
      // Built and size-checked before the claim (as in #execute): a command that cannot be built, or is too large for
      // the broker, fails alone and claims nothing.
      let built: BuiltCommand;
      try {
        built = buildCommand(spec, row, row.lastMessageId, row.eventTypeId, payload, auditor);
        requireSendableSize(sizeWhat(spec), (built.message.body as Buffer).length, brokerBytes.get(row.endpointId)!);
      } catch (error) {
        out[k] = { ok: false, error };
        return;
      }
      claims.push({ k, row, eventTypeId: row.eventTypeId, payload, built });
    });
    const claimedAt = this.#now();
    const written = await this.#store.writeStatuses(
      claims.map((c) => ({ input: claimWrite(spec, c.row, c.row.lastMessageId, c.eventTypeId, c.payload), expect: claimExpectation(c.row) })),
    );
    const claimed: Array<(typeof claims)[number]> = [];
    claims.forEach((c, i) => {
      const w = written[i]!;
      if (!w.ok) out[c.k] = w;
      else if (w.value.outcome === 'ignored') alone.push(c.k); // changed since the read: decide again
      else claimed.push(c);
    });
    // The claims' writes may have stalled (or the process paused) past the end of the caller's lease: asked now,
    // right before the send, a caller that may no longer act gets nothing sent; its claims are undone and audited,
    // and its events for the one-event path are answered without being read or claimed. #sendBatched asks again
    // before each further batch.
    const withheld = (claimed.length > 0 || alone.length > 0) && !mayStillSend(origin);
    const sending = withheld ? [] : claimed;
    const [sends] = await Promise.all([
      this.#sendBatched(sending.map((c) => c.built), origin),
      ...alone.map((k) => settle(out, k, withheld ? Promise.reject(new SendWithheld(targets[k]!.eventId)) : oneAtATime(() => this.#execute(targets[k]!.endpointId, targets[k]!.eventId, spec, auditor, origin)))),
    ]);
    const outcomes = withheld ? claimed.map(() => 'withheld' as const) : sends;
    const sent = sending.filter((_, i) => outcomes[i] === 'sent');
    // Withheld (the whole lot, or the batches after the guard said no): each claim undone and audited, SendWithheld.
    const undone = claimed.filter((_, i) => outcomes[i] === 'withheld').map((c) => settle(out, c.k, this.#sendWithheld(c.row, c.built, auditor, { previous: c.row, at: claimedAt }, origin)));
    // Not sent: each claim undone (or kept for Reconcile) and audited as a single command's would be (503).
    const notSent = sending
      .map((c, i) => ({ c, outcome: outcomes[i]! }))
      .flatMap(({ c, outcome }) => (typeof outcome === 'object' ? [settle(out, c.k, this.#sendFailed(c.row, c.built, outcome.error, auditor, c.row))] : []));
    for (const c of sent) this.#failedSends.delete(c.built.messageId);
    if (sent.length > 0) log.info({ operationId: origin?.operationId, messageType: type, sent: sent.length }, 'manager commands sent');
    // As #sendAndAudit: each command sent counts sent, its receipt written, retried or remembered (#writeReceipts).
    await this.#writeReceipts(sent.map((c) => receipt(spec, c.row, c.built, c.row.lastMessageId, c.eventTypeId, c.payload, auditor, origin)), 'bulk');
    for (const c of sent) out[c.k] = { ok: true, value: sentResult(c.row, c.built) };
    await Promise.all([...notSent, ...undone]);
  }

  /**
   * Per lot member, how many rows (parsing or not) its event has: the target's own count when it carries one, else
   * one query per endpoint for the members without. Undefined when unknown (no row, or the count failed or was
   * cut): the event then takes the one-event path.
   */
  async #rowCounts(targets: readonly CommandTarget[], lot: number[]): Promise<Array<number | undefined>> {
    const byEndpoint = new Map<string, string[]>();
    for (const k of lot) {
      const t = targets[k]!;
      if (t.rows === undefined) byEndpoint.set(t.endpointId, [...(byEndpoint.get(t.endpointId) ?? []), t.eventId]);
    }
    const found = new Map<string, Map<string, EventSessions> | undefined>();
    await Promise.all([...byEndpoint].map(async ([endpointId, eventIds]) => found.set(endpointId, await this.#store.listEventSessions(endpointId, eventIds).catch(() => undefined))));
    return lot.map((k) => targets[k]!.rows ?? found.get(targets[k]!.endpointId)?.get(targets[k]!.eventId)?.rows);
  }

  /**
   * Sends commands in as few message batches as the broker's size limit allows (one span for the lot, every
   * message carrying its context): per command, 'sent', 'withheld' (the caller's guard said no before its batch
   * went) or the error of its batch. A batch is one transfer, accepted or refused as a whole.
   */
  async #sendBatched(commands: readonly BuiltCommand[], origin: CommandOrigin | undefined): Promise<BatchedSend[]> {
    const outcomes: BatchedSend[] = commands.map(() => 'sent');
    if (commands.length === 0) return outcomes;
    this.#sender ??= this.#client.createSender(Topic.Manager);
    const sender = this.#sender;
    // The guard is asked before every batch, not once per lot: a batch's send (or the next batch's creation) may
    // stall up to SEND_TIMEOUT_MS, past the end of the caller's lease. Once it says no, nothing more of the lot goes.
    let withheld = false;
    const send = async () => {
      let batch: ServiceBusMessageBatch | undefined;
      let members: number[] = [];
      const flush = async () => {
        const these = members;
        members = [];
        const b = batch;
        batch = undefined;
        if (!b || these.length === 0) return;
        withheld ||= !mayStillSend(origin);
        if (withheld) {
          for (const i of these) outcomes[i] = 'withheld';
          return;
        }
        try {
          await sender.sendMessages(b, { abortSignal: AbortSignal.timeout(SEND_TIMEOUT_MS) });
        } catch (err) {
          for (const i of these) outcomes[i] = { error: err };
        }
      };
      for (let i = 0; i < commands.length; i++) {
        for (let fresh = false; ; fresh = true) {
          if (withheld) {
            outcomes[i] = 'withheld';
            break;
          }
          try {
            batch ??= await sender.createMessageBatch({ abortSignal: AbortSignal.timeout(SEND_TIMEOUT_MS) });
          } catch (err) {
            outcomes[i] = { error: err };
            break;
          }
          if (batch.tryAddMessage(commands[i]!.message)) {
            members.push(i);
            break;
          }
          if (fresh || members.length === 0) {
            // The broker's own refusal, in its own code: the batch is sized from the limit the broker's link
            // advertises, so this command is refused for its size (413, isSizeRefusal). Before, a plain Error
            // was answered 503 "try again", though the same command is refused every time.
            outcomes[i] = { error: new ServiceBusError(`command ${commands[i]!.messageId} is larger than the broker accepts (${commands[i]!.message.body.length} bytes of body; the batch takes at most ${batch.maxSizeInBytes} bytes)`, 'MessageSizeExceeded') };
            break;
          }
          await flush(); // full: send it, and try this command in a new batch
        }
      }
      await flush();
    };
    await withSendSpan(Topic.Manager, commands.map((c) => c.message), send, {
      'nimbus.command': commands[0]!.type,
      ...(origin ? { 'nimbus.operation_id': origin.operationId } : {}),
    });
    return outcomes;
  }

  /**
   * Why the row's stored payload is not the event and must not be resubmitted as it is (undefined when it is the
   * event), as the 409's detail. Two cases, both told by the history entry of the request that wrote the payload
   * (requestMessageId, a point read), never by the payload's shape:
   * - raw text of an EventJson that did not parse (malformed, or nested too deep), kept so an operator can repair it
   *   (resolver-worker/project.ts records ResolverPayloadProblem on that entry). Sent as is, the handler would get a
   *   JSON string instead of the object. Only a string payload is asked about: one that parsed to a string ('"done"')
   *   is a real event, and its entry records no problem.
   * - a handoff settlement's content ({ note, completedBy } or the external result): an older Resolver (before
   *   fc42eea) wrote a HandoffCompletedRequest's content as the row's payload, and a refused completion left it there.
   * The marker must survive a rewrite of the row that keeps the same payload: a plain Resubmit sent before the raw-text
   * refusal (32d5218), or before the settlement fix, carried the payload on under its own id, whose entry records no
   * problem. So when the entry is a resubmission, its payload is followed back through the session's history (every
   * page: the history's order) while the entry before it that carried a payload carried the same one, and the first
   * of that run decides. Asked only for a string payload or one a Manager command wrote (COMMAND_ID_PREFIX): a
   * publisher's own request that parsed is the event, with no read at all.
   */
  async #storedPayloadNotEvent(row: StatusRow): Promise<string | undefined> {
    if (!row.requestMessageId || (typeof row.payload !== 'string' && !writtenByCommand(row))) return undefined;
    const entry = await this.#store.getHistory(row.eventId, row.requestMessageId);
    if (entry === null || entry.endpointId !== row.endpointId || entry.sessionId !== row.sessionId) return undefined;
    let origin = entry;
    if (entry.messageType === MessageType.ResubmissionRequest && payloadProblem(entry) === undefined) {
      const session = inHistoryOrder((await eventHistory(this.#store, row.endpointId, row.eventId)).filter((h) => h.endpointId === row.endpointId && h.sessionId === row.sessionId));
      for (let at = session.findIndex((h) => h.messageId === entry.messageId); at > 0 && origin.messageType === MessageType.ResubmissionRequest; ) {
        const before = session.slice(0, at).findLastIndex((h) => h.payload !== undefined && isRequestType(h.messageType as MessageTypeT));
        if (before < 0 || !isDeepStrictEqual(session[before]!.payload, origin.payload)) break;
        origin = session[before]!;
        at = before;
      }
    }
    const problem = payloadProblem(origin);
    if (problem !== undefined && typeof row.payload === 'string')
      return `the event's stored payload did not parse (${problem}): it is kept as raw text for repair, not as the event; resubmit it with an edited payload`;
    if (origin.messageType === MessageType.HandoffCompletedRequest || origin.messageType === MessageType.HandoffFailedRequest)
      return `the event's stored payload is the content of the handoff settlement ${origin.messageId} (${origin.messageType}), not the event: an older Resolver stored it there; resubmit it with an edited payload - the event's original payload is on its request in the event's history`;
    return undefined;
  }

  /** Is `row` already claimed by this command (a repeated click, a retry by a script)? */
  /**
   * Whether one of `rows` is a Manager claim whose command is not known sent: no "sent" receipt, and not recorded
   * by the Resolver (point reads by the command's id, as #repeat reads them). Asked only for a refused settlement.
   */
  async #unsentClaim(rows: readonly StatusRow[]): Promise<boolean> {
    for (const row of rows) {
      if (!isManagerClaim(row)) continue;
      if (this.#unreceipted.has(row.lastMessageId)) continue; // sent by this process, its receipt lost
      if (await this.#store.getAudit(row.eventId, row.lastMessageId)) continue;
      if (commandRecorded(await this.#store.getHistory(row.eventId, row.lastMessageId), row)) continue;
      return true;
    }
    return false;
  }

  #isClaimBy(type: string, spec: CommandSpec, row: StatusRow): boolean {
    if (row.status !== ResolutionStatus.Pending || row.messageType !== type || row.parentMessageId == null) return false;
    if ((spec.kind === 'handoffComplete' || spec.kind === 'handoffFail') && spec.messageId !== row.parentMessageId)
      return false;
    return row.lastMessageId === commandMessageId(type as never, row, row.parentMessageId);
  }

  async #repeat(spec: CommandSpec, row: StatusRow, asker: Asker, origin?: CommandOrigin): Promise<CommandResult> {
    const auditor = asker.auditor;
    const answered = row.parentMessageId!;
    const messageId = row.lastMessageId;
    // A point read by the command's id: however many other audits the event has, the receipt is found - or, sent
    // by this process without one (the store failed after the send), the receipt it could not write.
    const sentAudit = (await this.#store.getAudit(row.eventId, messageId)) ?? (await this.#lostReceipt(messageId));
    // Without the receipt, the event's history tells whether the Resolver has recorded the command (a point read of
    // its entry: found however long the history), and - a row that looks edited may be a plain claim the Resolver
    // recorded - what a resubmit's claim sent (the history before the command, every page of it).
    const recorded = sentAudit ? null : await this.#store.getHistory(row.eventId, messageId);
    const isRecorded = commandRecorded(recorded, row);
    const before = spec.kind === 'resubmit' && isRecorded && rowSaysEdited(row) ? storedBeforeClaim(await eventHistory(this.#store, row.endpointId, row.eventId), row) : undefined;
    // Same failure, different request (another operator's edit, or error text or note): refused, never answered as
    // already sent - 'duplicate' would drop it without a word.
    const mismatch =
      spec.kind === 'resubmit' ? resubmitMismatch(spec, row, sentAudit, before) : spec.kind === 'skip' ? undefined : handoffMismatch(spec, row, sentAudit, isRecorded ? recorded : null, asker);
    if (mismatch) throw conflict(mismatch, settledCode(spec, []));
    const duplicate: CommandResult = { endpointId: row.endpointId, eventId: row.eventId, sessionId: row.sessionId, outcome: 'duplicate', messageId, messageType: commandType(spec) };
    if (sentAudit) return duplicate;
    // A claim without a receipt is presumed still in its sender's hands for CLAIM_GRACE_MS, unless its send failed here.
    const age = this.#now() - Date.parse(row.updatedAt);
    const abandoned = this.#failedSends.has(messageId) || age >= CLAIM_GRACE_MS;
    if (recorded && isRecorded) {
      // Sent: a second copy would run the handler twice where the endpoint keeps no inbox. Only the receipt is
      // missing; while the sender may still write it (under its own operator's name) it is left to the sender, else
      // (the sender died, or saw a timeout after the broker took it) it is written now, for what the claim sent:
      // a resubmit's from the row, a handoff settlement's text from the command as the Resolver recorded it (this
      // repeat's own text may differ, and is not what was sent).
      if (!abandoned) return duplicate;
      const claimed: CommandSpec = spec.kind === 'resubmit' ? specOfClaim(row, before)! : spec.kind === 'skip' ? spec : recordedHandoff(spec, recorded);
      const payload = claimed.kind === 'resubmit' ? row.payload : undefined;
      const built = buildCommand(claimed, row, answered, row.eventTypeId, payload, auditor);
      await this.#store.recordAudit(receipt(claimed, row, built, answered, row.eventTypeId, payload, auditor, origin, { reconstructed: true }));
      this.#failedSends.delete(messageId);
      log.info({ endpointId: row.endpointId, eventId: row.eventId, messageType: built.type, messageId }, 'manager command already recorded: receipt written, not sent again');
      return duplicate;
    }
    // Claimed but never confirmed sent: either that send failed, or it is still under way in another replica.
    if (!abandoned)
      throw conflict('the same command is being sent right now; reload the event in a few seconds');
    // Abandoned: send again (same MessageId) and write the receipt.
    let payload: unknown = undefined;
    let eventTypeId = row.eventTypeId;
    if (spec.kind === 'resubmit') {
      payload = spec.edited ? spec.edited.payload : row.payload;
      eventTypeId = spec.edited?.eventTypeId ?? row.eventTypeId;
      if (payload === undefined || payload === null) throw conflict('the event has no stored payload to resubmit');
    }
    // The claim row no longer names the delivery that handed the event off: the first send named it from the
    // handoff row; the re-send names the same one, found in the history.
    const handedOff = spec.kind === 'handoffComplete' || spec.kind === 'handoffFail' ? await this.#handedOffBeforeClaim(row) : undefined;
    const built = buildCommand(spec, row, answered, eventTypeId, payload, auditor, handedOff);
    await this.#requireClaimSendable(spec, row, built);
    return this.#sendAndAudit(spec, row, built, answered, eventTypeId, payload, auditor, { previous: undefined, at: this.#now() }, origin);
  }

  /**
   * The delivery that handed off the event a handoff claim on `row` settles, as handedOffBy read it from the
   * handoff row before the claim: the PendingHandoffResponse the claim answered (a point read), else - the claim
   * answered a row the Resolver put back after a refused command, under the refusal notice's id - the session's
   * latest PendingHandoffResponse (the row was put back to it; the claim's command was never recorded, so nothing
   * of the session came after it). Latest by the history's order (server/historyOrder.ts), not the store's list,
   * which orders by enqueuedAt alone: of two handoffs stamped the same millisecond the one recorded last is the
   * newer (manager.test.ts, "two handoffs stamped the same millisecond"). Undefined when neither names one: the
   * subscriber then matches by EventId.
   */
  async #handedOffBeforeClaim(row: StatusRow): Promise<string | undefined> {
    const mine = (h: HistoryEntry | null): h is HistoryEntry => h !== null && h.endpointId === row.endpointId && h.sessionId === row.sessionId;
    const answered = await this.#store.getHistory(row.eventId, row.parentMessageId!);
    if (mine(answered) && answered.messageType === MessageType.PendingHandoffResponse) return handedOffBy(answered);
    // The session's whole history is ordered before the handoffs are picked out: the parent links between them (a
    // handoff, the resubmission answering it, the handoff answering that) are what orders a tie when recordedAt does
    // not (one receive's entries share it).
    const session = inHistoryOrder((await eventHistory(this.#store, row.endpointId, row.eventId)).filter(mine));
    const latest = session.filter((h) => h.messageType === MessageType.PendingHandoffResponse).at(-1);
    return latest ? handedOffBy(latest) : undefined;
  }

  /**
   * Re-sends the command an abandoned claim stands for (Reconcile's repair): same MessageId, receipt written.
   * Only resubmit and skip can be rebuilt from the row; a handoff settlement's text was never stored.
   */
  async resendClaim(row: StatusRow, auditor: Auditor): Promise<CommandResult> {
    // Sent by this process, only its receipt lost: written now, and nothing sent again (a second copy).
    if (await this.#lostReceipt(row.lastMessageId))
      return { endpointId: row.endpointId, eventId: row.eventId, sessionId: row.sessionId, outcome: 'duplicate', messageId: row.lastMessageId, messageType: row.messageType ?? '' };
    const spec = specOfClaim(row);
    if (!spec || row.parentMessageId == null) throw conflict(`a ${row.messageType ?? 'row'} claim cannot be re-sent; restore it instead`);
    const payload = spec.kind === 'resubmit' ? row.payload : undefined;
    if (spec.kind === 'resubmit' && (payload === undefined || payload === null)) throw conflict('the claim has no stored payload to re-send; restore it instead');
    const built = buildCommand(spec, row, row.parentMessageId, row.eventTypeId, payload, auditor);
    await this.#requireClaimSendable(spec, row, built);
    return this.#sendAndAudit(spec, row, built, row.parentMessageId, row.eventTypeId, payload, auditor, { previous: undefined, at: this.#now() });
  }

  /**
   * The size pre-check of a re-send of an abandoned claim (#repeat, resendClaim), as a fresh command's before its
   * claim: 413 naming the limit, and nothing sent, undone or audited - the claim stays as it was. Before, the re-send
   * went to the broker, which refused it every time: each attempt wrote a CommandNotSent entry into the event's audit
   * trail, answered "the claim stays until ... Reconcile repairs it", and Reconcile's re-send was that same refusal
   * (repeatTooLarge.test.ts). A claim gets too large after it was made when the limit it was checked against is no
   * longer the one known (another replica read a larger one, the endpoint topic's was not yet read) or when a console
   * from before the pre-checks made it; its way out is a restore (Reconcile), then a smaller command.
   * Held to the sizes read only: with none read here (the reads failed, no size read before) the command, accepted
   * once, is sent and the broker decides - the Standard tier's 256 KB, a guess, refused with 413 for up to the reads'
   * back-off a re-send a Premium namespace takes (resendUnknownSize.test.ts). A broker's refusal is answered 413 by
   * #sendFailed, the claim kept and the refusal audited (CommandNotSent).
   * That holds for a body rebuilt from the claim (a resubmit's payload, which a repeat must match; a skip). A handoff
   * settlement's repeat carries the caller's own result or reason (the claim's text was never stored), which no check
   * has seen: it is held to the fresh command's limit, 256 KB while none is read - before, it went to the broker
   * unchecked, each refusal audited, and answered "restore it in Reconcile" though a smaller repeat would be sent
   * (review 44-b, handoffRepeatSize.test.ts).
   */
  async #requireClaimSendable(spec: CommandSpec, row: StatusRow, built: BuiltCommand): Promise<void> {
    if (spec.kind === 'handoffComplete' || spec.kind === 'handoffFail') {
      requireSendableSize(sizeWhat(spec), (built.message.body as Buffer).length, await this.#brokerMessageBytes(row.endpointId));
      return;
    }
    const limit = await this.#resendMessageBytes(row.endpointId);
    if (limit === undefined) return;
    requireSendableSize(sizeWhat(spec), (built.message.body as Buffer).length, limit, `its claim stays as it was (Pending, no receipt): ${RESTORE_THEN_SMALLER}`);
  }

  /** Sends a command already built (building can throw: callers build before they claim) and writes its receipt. */
  async #sendAndAudit(
    spec: CommandSpec,
    row: StatusRow,
    built: BuiltCommand,
    answered: string,
    eventTypeId: string | null,
    payload: unknown,
    auditor: Auditor,
    /** The row version the claim replaced (a fresh claim), to put back if the send fails, and when it was claimed. */
    claim: ClaimMade,
    origin?: CommandOrigin,
  ): Promise<CommandResult> {
    const resend = claim.previous === undefined;
    // As in #executeLot: the claim is written (or found abandoned), and the caller is asked right before the send.
    if (!mayStillSend(origin)) return this.#sendWithheld(row, built, auditor, claim, origin);
    try {
      this.#sender ??= this.#client.createSender(Topic.Manager);
      // Bounded: an operator's click must not hang while the client retries a broker that is gone.
      // The command starts (or continues) a trace: the handler's process span is its child (packages/sdk/src/tracing.ts).
      const sender = this.#sender;
      await withSendSpan(Topic.Manager, built.message, () => sender.sendMessages(built.message, { abortSignal: AbortSignal.timeout(SEND_TIMEOUT_MS) }), {
        'nimbus.command': built.type,
        'nimbus.endpoint': row.endpointId,
        'nimbus.event_id': row.eventId,
      });
    } catch (err) {
      return this.#sendFailed(row, built, err, auditor, claim.previous);
    }
    this.#failedSends.delete(built.messageId);
    log.info({ endpointId: row.endpointId, eventId: row.eventId, messageType: built.type, messageId: built.messageId, resend }, 'manager command sent');
    // Sent is sent: a receipt the store will not take is retried, then remembered - never answered as a failure (a
    // 503 "try again", and the audit log saying the command failed, when it is on its way: receiptWriteFails.test.ts).
    await this.#writeReceipts([receipt(spec, row, built, answered, eventTypeId, payload, auditor, origin)], 'one');
    return sentResult(row, built);
  }

  /**
   * Writes the receipts of commands just sent ('one': a click's, by recordAudit; 'bulk': a lot's, by recordAudits),
   * retrying those the store fails after RECEIPT_RETRY_DELAYS_MS. Never throws: the commands are on the broker. A
   * receipt still not written is logged (ids only) and remembered (#unreceipted), so a repeat in this process is
   * answered 'duplicate' rather than refused "being sent" for 30 s and then re-sent as an abandoned claim.
   */
  async #writeReceipts(writes: readonly AuditWrite[], how: 'one' | 'bulk'): Promise<void> {
    const sentAt = new Date().toISOString();
    let pending = writes;
    for (let attempt = 0; pending.length > 0; attempt++) {
      const results = await this.#recordReceipts(pending, how);
      const failed = pending.flatMap((w, i) => {
        const r = results[i]!;
        return r.ok ? [] : [{ w, error: r.error }];
      });
      const wait = RECEIPT_RETRY_DELAYS_MS[attempt];
      if (failed.length > 0 && wait === undefined) {
        for (const { w, error } of failed) this.#receiptLost({ ...w, at: w.at ?? sentAt }, error);
        return;
      }
      if (failed.length > 0) await sleep(wait!);
      pending = failed.map((f) => f.w);
    }
  }

  async #recordReceipts(writes: readonly AuditWrite[], how: 'one' | 'bulk'): Promise<Settled<AuditEntry>[]> {
    try {
      if (how === 'bulk') return await this.#store.recordAudits(writes);
      return await Promise.all(writes.map(async (w): Promise<Settled<AuditEntry>> => ({ ok: true, value: await this.#store.recordAudit(w) })));
    } catch (error) {
      return writes.map(() => ({ ok: false, error }));
    }
  }

  /** A sent command's receipt the store would not take: logged (ids only, no payload) and remembered. */
  #receiptLost(write: AuditWrite, error: unknown): void {
    const id = write.id!;
    log.warn(
      { endpointId: write.endpointId, eventId: write.eventId, messageId: id, auditType: write.type, err: error instanceof Error ? `${error.name}: ${error.message}`.slice(0, 300) : String(error).slice(0, 300) },
      'manager command sent, but its receipt could not be written',
    );
    this.#unreceipted.delete(id);
    this.#unreceipted.set(id, write);
    if (this.#unreceipted.size > UNRECEIPTED_MAX) this.#unreceipted.delete(this.#unreceipted.keys().next().value!);
  }

  /**
   * The receipt of a command this process sent but could not receipt (#unreceipted), or null: written now (one
   * attempt; forgotten once written), and answered as the receipt either way - the command was sent.
   */
  async #lostReceipt(messageId: string): Promise<AuditEntry | null> {
    const write = this.#unreceipted.get(messageId);
    if (!write) return null;
    try {
      const entry = await this.#store.recordAudit(write);
      this.#unreceipted.delete(messageId);
      log.info({ endpointId: write.endpointId, eventId: write.eventId, messageId }, 'manager receipt written late');
      return entry;
    } catch (error) {
      log.warn({ endpointId: write.endpointId, eventId: write.eventId, messageId, err: error instanceof Error ? error.message.slice(0, 300) : String(error).slice(0, 300) }, 'manager receipt still not written');
      return auditEntrySchema.parse(write);
    }
  }

  /**
   * A send failed: undo the claim when this call made it, audit the failure, answer 503 (#undoClaim).
   */
  async #sendFailed(row: StatusRow, built: BuiltCommand, err: unknown, auditor: Auditor, previous: StatusRow | undefined): Promise<never> {
    const text = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
    // A broker refusal means nothing was enqueued; a timeout or a lost connection may have happened after it was.
    const refused = sendCertainlyRefused(err);
    const claimText = await this.#undoClaim(row, built, auditor, previous, { reason: text.slice(0, 1000), data: { brokerRefused: refused }, log: { refused, err: text } });
    // Refused for its size, the same command is refused again: 413, which no client retries (not 503 "try again").
    // A re-send's claim (kept) is refused again on every re-send: its way out is a restore, as the pre-check says.
    if (isSizeRefusal(err))
      throw new HttpError(413, 'too large', `the command is larger than Service Bus accepts; nothing was sent and ${claimText}. ${previous ? 'Send a smaller one' : `It is refused again on every re-send: ${RESTORE_THEN_SMALLER}`}`);
    throw new HttpError(503, 'unavailable', `the command could not be sent to Service Bus; ${claimText}. Try again (it will not be sent twice)`);
  }

  /**
   * The caller's guard said no right before the send: nothing was sent, so the claim is undone and audited as a
   * failed send's is - while it is younger than WITHHELD_UNDO_MS (else it stays, for a repeat or Reconcile) - and
   * the answer is SendWithheld, not 503: the caller (a bulk job's runner past its lease) stops rather than retry.
   */
  async #sendWithheld(row: StatusRow, built: BuiltCommand, auditor: Auditor, claim: ClaimMade, origin: CommandOrigin | undefined): Promise<never> {
    const previous = this.#now() - claim.at < WITHHELD_UNDO_MS ? claim.previous : undefined;
    const by = origin ? `bulk operation ${origin.operationId}` : 'its caller';
    // The data names no operationId: a bulk job counts an event done by an audit whose data names the job (runner.ts).
    await this.#undoClaim(row, built, auditor, previous, { reason: `withheld - the lease of ${by} ended before the send`, data: { withheld: true }, log: { withheld: true, operationId: origin?.operationId } });
    throw new SendWithheld(row.eventId);
  }

  /**
   * A command was not sent: undo its claim when this call made it (`previous`: compare-and-swap on the claim's
   * version, so a row that has moved since - the Resolver recorded the command after all - is left as it is) and
   * audit it (CommandNotSent, `why` saying why). A claim that cannot be undone stays, marked here as abandoned, for
   * a retry or for Reconcile. Answers what became of the claim, in words.
   */
  async #undoClaim(
    row: StatusRow,
    built: BuiltCommand,
    auditor: Auditor,
    previous: StatusRow | undefined,
    why: { reason: string; data: Record<string, unknown>; log: Record<string, unknown> },
  ): Promise<string> {
    let restored: 'restored' | 'moved' | 'failed' | 'kept' = 'kept';
    if (previous) {
      try {
        // conditional: the Resolver's record of the command has the claim's id and status too (a send that timed out
        // but landed); only the claim itself, a conditional write, is undone.
        const r = await this.#store.restoreStatusRow(previous, { status: ResolutionStatus.Pending, lastMessageId: built.messageId, conditional: true });
        restored = r.outcome === 'written' ? 'restored' : 'moved';
      } catch (e) {
        restored = 'failed';
        log.warn({ endpointId: row.endpointId, eventId: row.eventId, err: e instanceof Error ? e.message : String(e) }, 'manager claim not undone');
      }
    }
    if (restored !== 'restored') this.#failedSends.add(built.messageId);
    log.warn({ endpointId: row.endpointId, eventId: row.eventId, messageType: built.type, messageId: built.messageId, claim: restored, ...why.log }, 'manager command not sent');
    const claimText = {
      restored: `the event was put back to ${previous?.status ?? 'its previous state'}`,
      moved: 'the event had moved on meanwhile and was left as it is',
      failed: 'the claim could not be undone (the store failed too); Reconcile will find it',
      kept: 'the claim stays until the command is sent or Reconcile repairs it',
    }[restored];
    try {
      await this.#store.recordAudit({
        // Never the command's own id: that id is the "sent" receipt.
        id: `not-sent~${built.messageId}~${Date.now()}`,
        eventId: row.eventId,
        endpointId: row.endpointId,
        eventTypeId: row.eventTypeId,
        type: AuditType.CommandNotSent,
        ...auditorFields(auditor),
        comment: `${built.type} not sent: ${why.reason}; ${claimText}`,
        data: JSON.stringify({ messageId: built.messageId, messageType: built.type, sessionId: row.sessionId, claim: restored, ...why.data }).slice(0, 4096),
      });
    } catch (e) {
      log.warn({ endpointId: row.endpointId, eventId: row.eventId, err: e instanceof Error ? e.message : String(e) }, 'manager send failure not audited');
    }
    return claimText;
  }

}


/** What a command too large for the broker is, in its 413's words. */
function sizeWhat(spec: CommandSpec): string {
  if (spec.kind === 'resubmit') return `the resubmitted event (its ${spec.edited ? 'edited' : 'stored'} payload, as the command carries it)`;
  if (spec.kind === 'skip') return 'the skip command';
  return 'the settlement (its result or text, as the command carries it)';
}

/** Whether the row's payload was written by a Manager command (a resubmission or, by an older Resolver, a handoff settlement). */
const writtenByCommand = (row: StatusRow): boolean => row.requestMessageId?.startsWith(COMMAND_ID_PREFIX) ?? false;

/** The raw-text marker the Resolver recorded on a request's entry (resolver-worker/project.ts), or undefined. */
function payloadProblem(entry: HistoryEntry): string | undefined {
  const problem = entry.properties?.[RESOLVER_PAYLOAD_PROBLEM];
  return problem === undefined || problem === null || problem === '' ? undefined : String(problem).slice(0, 300);
}

/**
 * HANDOFF_SETTLED_CODE for a handoff settlement refused while none of `rows` is a pending handoff (settled, or
 * resolved otherwise); undefined for other commands, and while a handoff is pending under another message. The
 * caller withholds it while another command's claim is unsent (#unsentClaim; settleConflicts.test.ts).
 */
function settledCode(spec: CommandSpec, rows: readonly StatusRow[]): string | undefined {
  return (spec.kind === 'handoffComplete' || spec.kind === 'handoffFail') && !rows.some(isHandoff) ? HANDOFF_SETTLED_CODE : undefined;
}

/** Why an event's rows cannot be acted on as read (undefined when the set is whole). */
export function incompleteRows(eventId: string, corrupt: EventRows['corrupt'], truncated: boolean): string | undefined {
  if (corrupt.length > 0) {
    const named = corrupt.slice(0, 3).map((c) => `${c.id} (${c.issues.slice(0, 200)})`).join('; ');
    return `event ${eventId} has ${corrupt.length} status row(s) that no longer parse: ${named}; nothing was sent - repair or remove the row first`;
  }
  if (truncated)
    return `event ${eventId} has too many rows; more than ${EVENT_ROWS_LIMIT} sessions, so a claim of this command could be among those not read - nothing was sent`;
  return undefined;
}

/**
 * The command a claimed row stands for, when it can be rebuilt from the row alone (resubmit, skip). A resubmit's
 * claim stored a payload only when the operator edited it (requestMessageId is then the claim's id) - but once the
 * Resolver has recorded the command, a plain claim's row says the same (the command carries the payload it sent):
 * for such a row `before`, what the event held before the claim (storedBeforeClaim), tells the two apart
 * (claimWasEdited). Reconcile re-sends only claims never recorded, whose row alone is evidence enough.
 */
export function specOfClaim(row: StatusRow, before?: StoredRequest): CommandSpec | undefined {
  if (row.messageType === MessageType.SkipRequest) return { kind: 'skip' };
  if (row.messageType === MessageType.ResubmissionRequest) {
    return claimWasEdited(row, null, before) ? { kind: 'resubmit', edited: { payload: row.payload, eventTypeId: row.eventTypeId ?? undefined } } : { kind: 'resubmit' };
  }
  return undefined;
}

/** What became of one command of a lot's batched send: the error when its batch (or the batch's creation) failed. */
type BatchedSend = 'sent' | 'withheld' | { error: unknown };

/** A claim as #sendAndAudit gets it: the row version it replaced (none for a re-send) and when it was written. */
interface ClaimMade {
  previous: StatusRow | undefined;
  at: number;
}

async function settle<T>(out: Settled<T>[], k: number, p: Promise<T>): Promise<void> {
  try {
    out[k] = { ok: true, value: await p };
  } catch (error) {
    out[k] = { ok: false, error };
  }
}

/**
 * The claim: the row as the command leaves it (Pending, lastMessageId = the command's id), before it is sent.
 * Exported for tests that leave a claim behind as a console that died before its send would.
 */
export function claimWrite(spec: CommandSpec, row: StatusRow, answered: string, eventTypeId: string | null, payload: unknown): StatusWrite {
  const type = commandType(spec);
  return {
    endpointId: row.endpointId,
    eventId: row.eventId,
    sessionId: row.sessionId,
    messageId: commandMessageId(type, row, answered),
    messageType: type,
    eventTypeId,
    parentMessageId: answered,
    originatingMessageId: originatingOf(row, answered),
    correlationId: row.correlationId,
    from: Topic.Manager,
    to: row.endpointId,
    enqueuedAt: new Date().toISOString(),
    ...(spec.kind === 'resubmit' && spec.edited ? { payload } : {}),
  };
}

/**
 * The claim's condition: the row still the version the operator acted on. A claim, so the store does not count the
 * command's id among the row's applied messages until the Resolver records the command (RowExpectation.claim).
 */
export function claimExpectation(row: Pick<StatusRow, 'lastMessageId' | 'status'>): RowExpectation {
  return { lastMessageId: row.lastMessageId, status: row.status, claim: true };
}

/**
 * The "sent" receipt: the command's audit entry, under the command's own id (how a repeat finds it).
 * `how.reconstructed`: written by a repeat for a command the Resolver recorded (the sender's receipt was lost).
 */
function receipt(spec: CommandSpec, row: StatusRow, built: BuiltCommand, answered: string, eventTypeId: string | null, payload: unknown, auditor: Auditor, origin?: CommandOrigin, how: { reconstructed?: boolean } = {}): AuditWrite {
  const edited = spec.kind === 'resubmit' && spec.edited !== undefined;
  const data: Record<string, unknown> = { messageId: built.messageId, sessionId: row.sessionId, answers: answered };
  if (origin) data.operationId = origin.operationId;
  if (how.reconstructed) data.reconstructed = true;
  if (edited) {
    const text = JSON.stringify(payload);
    data.eventTypeId = eventTypeId;
    if (text.length <= 3000) data.payload = payload;
    else data.payloadBytes = text.length;
  }
  if (spec.kind === 'handoffFail') data.errorText = spec.errorText.slice(0, 1000);
  if (spec.kind === 'handoffComplete' && spec.note) data.note = spec.note.slice(0, 1000);
  return {
    id: built.messageId,
    eventId: row.eventId,
    endpointId: row.endpointId,
    eventTypeId,
    type: edited ? AuditType.ResubmitWithChanges : AUDIT_TYPE[spec.kind],
    ...auditorFields(auditor),
    comment: spec.kind === 'handoffFail' ? spec.errorText.slice(0, 4000) : spec.kind === 'handoffComplete' ? (spec.note ?? null) : origin ? `bulk operation ${origin.operationId}` : null,
    data: JSON.stringify(data).slice(0, 4096),
  };
}

function sentResult(row: StatusRow, built: BuiltCommand): CommandResult {
  return { endpointId: row.endpointId, eventId: row.eventId, sessionId: row.sessionId, outcome: 'sent', messageId: built.messageId, messageType: built.type };
}
