// Operations → Reconcile Stale Pending (DESIGN.md §5). A row can read Pending although its history already
// holds the response that settled it, or one that answered its message without settling it (a new handoff park):
// a late request copy overwrote it before the guard existed, or the status write was lost after the history write.
// Reconcile finds such rows with the evidence, and re-applies the stored response through the store's guarded
// write with a compare-and-swap on the row version the preview saw, so a row that moved meanwhile is left alone
// and a second apply changes nothing. Handoffs past their ExpectedBy
// are only flagged: their outcome lives in an external system, not in the history. The same scan finds rows that
// nothing will move (./stuck.ts: claims without a receipt, control requests nobody answered; here, rows answered by
// an entry that no longer parses) and ./draining.ts sessions that drain forever.
import { decideStaleWrite, PendingSubStatus, ResolutionStatus, resultingStatus, type GuardedRowView, type MessageType } from '@nimbus/sdk/contract';
import {
  AuditType,
  type HistoryEntry,
  type MessageStore,
  type StatusRowSummary,
} from '../../lib/store/index.ts';
import { log } from '../log.ts';
import { findingRow, stuckFinding, type StuckOptions, type StuckRow } from './stuck.ts';
import { HISTORY_CAP, readEventHistory, type EventHistoryRead } from './history.ts';
import { comesAfter, inHistoryOrder } from '../historyOrder.ts';
import { answersOnce, isAnswer, isLaterResponse, isSettling, laterResponsesOnce, type LaterResponses, type RowAnswers } from './answers.ts';

export interface StaleRow {
  endpointId: string;
  eventId: string;
  sessionId: string;
  eventTypeId: string | null;
  /** The row version the repair is conditional on. */
  rowMessageId: string;
  rowMessageType: string | null;
  rowUpdatedAt: string;
  evidence: {
    messageId: string;
    messageType: string;
    enqueuedAt: string;
    /** The status the stored response gives the row. */
    status: string;
    /** answers-row: the response answers the very message the row shows; later-response: it came after it. */
    rule: 'answers-row' | 'later-response';
  };
}

export interface OverdueHandoff {
  endpointId: string;
  eventId: string;
  sessionId: string;
  expectedBy: string;
  handoffReason: string | null;
  externalJobId: string | null;
  overdueSeconds: number;
}

export interface ReconcilePreview {
  stale: StaleRow[];
  /** Rows Pending from a control request that nothing will answer (./stuck.ts). */
  stuck: StuckRow[];
  overdueHandoffs: OverdueHandoff[];
  /** Pending rows looked at. */
  scanned: number;
  /** True when an endpoint had more Pending rows than one scan reads: run again after repairing. */
  truncated: boolean;
  generatedAt: string;
}

const MAX_ROWS_PER_ENDPOINT = 2000;

/** Only a Pending row can be stale; a handoff park is settled by an external system, not by its history. */
const mayBeStale = (row: Pick<StatusRowSummary, 'status' | 'subStatus'>) => row.status === ResolutionStatus.Pending && row.subStatus !== PendingSubStatus.Handoff;

type EvidenceRow = Pick<StatusRowSummary, 'lastMessageId' | 'messageType' | 'parentMessageId' | 'sessionId' | 'enqueuedAt' | 'status' | 'subStatus'>;

const statusOf = (h: HistoryEntry) => resultingStatus(h.messageType as MessageType, h.deadLetterErrorDescription).status;

/**
 * The stored response the row should show, or undefined. Pure (unit-tested). First a settling (terminal) response:
 * one that answers the row's message (`answers-row`), failing that one enqueued after it (`later-response`). Then
 * the non-settling answers to the row's own message (a new handoff park, a deferral): their row write was lost as
 * surely as a settling one's, and without this such a row is neither stale nor stuck (the stuck check counts them
 * as answers). They are replayed oldest first through the stale-write guard the Resolver applied, over the settling
 * response found (those newer than it only) or else over the row: what the guard lets through is what the row
 * would show now - the newest answer, a park after a failure, never a park over Completed or a deferral over a
 * command (the Resolver's own write of it was refused, so the row never showed it and a repair would be refused
 * too). `later-response` stays settling-only: a non-settling response to another message of the session does not
 * end the row's request, which can still be answered.
 */
export function settlingEvidence(row: EvidenceRow, history: HistoryEntry[]): StaleRow['evidence'] | undefined {
  if (!mayBeStale(row)) return undefined;
  // Oldest first in the history's order (server/historyOrder.ts): entries stamped the same millisecond (a request
  // and its answer) in the order the Resolver applied them, not the order the store happened to list them.
  const own = inHistoryOrder(history.filter((h) => h.sessionId === row.sessionId));
  // An answer by Reconcile's one rule (isAnswer, which the stuck check's "answered?" uses too): settling, or an
  // outcome the row can show; never a history-only entry that names the message.
  const answersRow = (h: HistoryEntry) => h.parentMessageId === row.lastMessageId && isAnswer(h);
  // Newest first: when several responses answer, the latest one is the outcome (terminal writes are last-writer-wins).
  // Never the row's own parent (isLaterResponse): it came before the row's message, whatever the clocks say.
  // The newest settling response of either kind: the Resolver applied them in that order, and a terminal write is
  // last-writer-wins, so an older answer does not beat a newer later response (and a park between them, newer than
  // the answer but older than the later response, does not reopen the row over the later one).
  const settled = own.findLast((h) => (isSettling(h) && answersRow(h)) || isLaterResponse(row, h));
  let shown: GuardedRowView = settled ? { status: statusOf(settled), messageType: settled.messageType as MessageType, parentMessageId: settled.parentMessageId } : row;
  let outcome = settled;
  // The answers after it (comesAfter), replayed in the history's order: a park stamped the same millisecond as the
  // settling response but recorded after it reopens it, as the Resolver's write of it did. One of the same
  // recordedAt too (one receive batch) does not: only the message ids would order the pair, and the row then
  // reopened or not by how its GUIDs sorted; the settling response stays, as before the tie rule (historyTies.test.ts).
  const reopening = own.filter((h) => answersRow(h) && !isSettling(h) && (!settled || comesAfter(h, settled, own)));
  for (const h of reopening) {
    if (!decideStaleWrite({ status: statusOf(h), messageType: h.messageType as MessageType, messageId: h.messageId }, shown).apply) continue;
    shown = { status: statusOf(h), messageType: h.messageType as MessageType, parentMessageId: h.parentMessageId };
    outcome = h;
  }
  if (!outcome) return undefined;
  return { messageId: outcome.messageId, messageType: outcome.messageType, enqueuedAt: outcome.enqueuedAt, status: statusOf(outcome), rule: answersRow(outcome) ? 'answers-row' : 'later-response' };
}

/**
 * settlingEvidence on the real store, with the stored response it names. The list is capped (oldest first), so on
 * a long event the answer to the row's message - newer than the message - may be cut off: when the list was cut,
 * the answers are read by their link (`answers`: the row's one read of them, which the stuck check then reuses)
 * and the settling responses enqueued after the row's message (`later`, the `later-response` rule; the stuck check
 * reuses that read too), whatever the list holds. A complete list settles it alone: no read more. An answer that no longer parses is no evidence (there is nothing to re-apply); the stuck check still
 * counts it as an answer.
 */
async function staleEvidence(
  row: EvidenceRow,
  history: EventHistoryRead,
  answers: () => Promise<RowAnswers>,
  later: () => Promise<LaterResponses>,
): Promise<{ evidence: StaleRow['evidence']; entry: HistoryEntry } | undefined> {
  const found = (entries: HistoryEntry[]) => {
    const evidence = settlingEvidence(row, entries);
    const entry = evidence && entries.find((h) => h.messageId === evidence.messageId);
    return evidence && entry ? { evidence, entry } : undefined;
  };
  // A list that fits under the cap decides alone. On a cut list the row's answers and the later responses are both
  // read whatever the list holds, each added to what is known rather than judged alone: what lies past the cap is
  // newer than anything in the list, and the newest outcome wins (a park past the cap reopens an older failure in
  // it; a newer settling answer or later response wins over an older one). Before, a settling entry in the list
  // decided alone and the repair depended on the cap.
  const inList = found(history.entries);
  if (!history.cutOff || !mayBeStale(row)) return inList;
  return found(union(union(history.entries, (await answers()).items), (await later()).items));
}

/** Two reads of one history, each entry once. */
const union = (a: HistoryEntry[], b: HistoryEntry[]) => [...new Map([...a, ...b].map((h) => [h.messageId, h])).values()];

/** How many unreadable answers a finding names (their document ids and problems), and how much of each problem. */
const UNREADABLE_NAMED = 3;
const ISSUES_SHOWN = 200;

/**
 * A row its stored answer should have settled, but the answer no longer parses: without this it would be neither
 * stale (nothing to re-apply) nor stuck (the stuck check counts it as an answer), and stay Pending with no finding.
 * The same for a settling-type response enqueued after the row's message that no longer parses (`later`): it may
 * have settled the event, so the stuck check offers no restore under it. Listed with why and no repair. Read only
 * when the list cannot be trusted alone - it was cut at the cap, or it held entries that do not parse - so a short,
 * clean history costs no read more; the later responses only when no answer is unreadable.
 */
async function unreadableAnswer(row: StatusRowSummary, history: EventHistoryRead, answers: () => Promise<RowAnswers>, later: () => Promise<LaterResponses>): Promise<StuckRow | undefined> {
  if (!mayBeStale(row) || (!history.cutOff && history.corrupt === 0)) return undefined;
  const shown = row.messageType ?? 'message';
  const unreadable = async (): Promise<{ corrupt: RowAnswers['corrupt']; what: string; why: string } | undefined> => {
    const answered = (await answers()).corrupt;
    if (answered.length > 0) return { corrupt: answered, what: `an answer to the ${shown} it shows`, why: 'Reconcile cannot tell what that answer settled' };
    const since = (await later()).corrupt;
    if (since.length > 0) return { corrupt: since, what: `a response enqueued after the ${shown} it shows`, why: 'it may have settled the event since, and Reconcile cannot tell what it settled' };
    return undefined;
  };
  const found = await unreadable();
  if (!found) return undefined;
  const { corrupt } = found;
  const named = corrupt
    .slice(0, UNREADABLE_NAMED)
    .map((c) => `${c.id} (${c.issues.slice(0, ISSUES_SHOWN)})`)
    .join('; ');
  const more = corrupt.length > UNREADABLE_NAMED ? ` and ${corrupt.length - UNREADABLE_NAMED} more` : '';
  return {
    kind: 'unreadable',
    ...findingRow(row),
    why: `Pending although the history holds ${found.what} that no longer parses: ${named}${more}. ${found.why}, so it re-applies nothing and restores nothing; repair or remove the history document, or settle the event from its page`,
    repairs: [],
    restoresTo: null,
  };
}

export async function previewReconcile(
  store: MessageStore,
  endpointIds: string[],
  now = new Date(),
  grace: Omit<StuckOptions, 'now'> = {},
): Promise<ReconcilePreview> {
  const stale: StaleRow[] = [];
  const stuck: StuckRow[] = [];
  const overdueHandoffs: OverdueHandoff[] = [];
  let scanned = 0;
  let truncated = false;
  for (const endpointId of endpointIds) {
    let token: string | undefined;
    let seen = 0;
    do {
      const page = await store.listEvents({ endpointId, statuses: [ResolutionStatus.Pending], pageSize: 200, continuationToken: token });
      token = page.continuationToken;
      for (const row of page.items) {
        seen++;
        scanned++;
        if (row.subStatus === PendingSubStatus.Handoff) {
          if (row.expectedBy && Date.parse(row.expectedBy) < now.getTime()) {
            overdueHandoffs.push({
              endpointId,
              eventId: row.eventId,
              sessionId: row.sessionId,
              expectedBy: row.expectedBy,
              handoffReason: row.handoffReason,
              externalJobId: row.externalJobId,
              overdueSeconds: Math.round((now.getTime() - Date.parse(row.expectedBy)) / 1000),
            });
          }
          continue;
        }
        const history = await readEventHistory(store, row.endpointId, row.eventId, grace.historyCap ?? HISTORY_CAP);
        const answers = answersOnce(store, row);
        const later = laterResponsesOnce(store, row);
        const evidence = (await staleEvidence(row, history, answers, later))?.evidence;
        if (!evidence) {
          const finding = (await unreadableAnswer(row, history, answers, later)) ?? (await stuckFinding(store, row, history, { ...grace, now }, answers, later));
          if (finding) stuck.push(finding);
        }
        if (evidence) {
          stale.push({ ...findingRow(row), evidence });
        }
      }
      if (seen >= MAX_ROWS_PER_ENDPOINT && token) {
        truncated = true;
        break;
      }
    } while (token);
  }
  return { stale, stuck, overdueHandoffs, scanned, truncated, generatedAt: now.toISOString() };
}

export interface ReconcileTarget {
  endpointId: string;
  eventId: string;
  sessionId: string;
  /** The row version the operator saw in the preview. */
  rowMessageId: string;
}

export interface ReconcileResult {
  target: ReconcileTarget;
  outcome: 'repaired' | 'unchanged';
  /** Why nothing was written: the row moved, is no longer stale, or the guard refused. */
  reason?: string;
  status?: string;
}

/**
 * Re-applies the stored outcome of each target. The evidence is re-read here (never taken from the request),
 * and the write is conditional on the row still being Pending at the version the operator saw. `o.historyCap`:
 * the cap the history list is read with (a test passes a small one).
 */
export async function applyReconcile(
  store: MessageStore,
  targets: ReconcileTarget[],
  auditor: string,
  o: Pick<StuckOptions, 'historyCap'> = {},
): Promise<{ repaired: number; unchanged: number; results: ReconcileResult[] }> {
  const results: ReconcileResult[] = [];
  for (const target of targets) {
    const row = await store.getStatusRow(target.endpointId, target.eventId, target.sessionId);
    if (!row || row.lastMessageId !== target.rowMessageId) {
      results.push({ target, outcome: 'unchanged', reason: row ? `the row changed since the preview (now ${row.status})` : 'the row no longer exists' });
      continue;
    }
    const found = await staleEvidence(row, await readEventHistory(store, target.endpointId, target.eventId, o.historyCap ?? HISTORY_CAP), answersOnce(store, row), laterResponsesOnce(store, row));
    if (!found) {
      results.push({ target, outcome: 'unchanged', reason: `the row is ${row.status} and not stale` });
      continue;
    }
    const { evidence, entry } = found;
    const written = await store.writeStatus(
      {
        endpointId: row.endpointId,
        eventId: row.eventId,
        sessionId: row.sessionId,
        messageId: entry.messageId,
        messageType: entry.messageType,
        eventTypeId: entry.eventTypeId,
        parentMessageId: entry.parentMessageId,
        originatingMessageId: entry.originatingMessageId,
        correlationId: entry.correlationId,
        from: entry.from,
        to: entry.to,
        enqueuedAt: entry.enqueuedAt,
        errorText: entry.errorText,
        errorType: entry.errorType,
        deadLetterReason: entry.deadLetterReason,
        deadLetterErrorDescription: entry.deadLetterErrorDescription,
        retryCount: entry.retryCount,
        handoffReason: entry.handoffReason,
        externalJobId: entry.externalJobId,
        expectedBy: entry.expectedBy,
      },
      { status: ResolutionStatus.Pending, lastMessageId: row.lastMessageId },
    );
    if (written.outcome === 'ignored') {
      results.push({ target, outcome: 'unchanged', reason: written.reason });
      continue;
    }
    await store.recordAudit({
      // One audit per repaired version: a retried apply does not add a second one.
      id: `reconcile-${row.lastMessageId}-${entry.messageId}`.slice(0, 200),
      eventId: row.eventId,
      endpointId: row.endpointId,
      eventTypeId: row.eventTypeId,
      type: AuditType.ReconcileStalePending,
      auditor,
      comment: `Pending row re-settled as ${written.row.status} from stored ${entry.messageType} ${entry.messageId}`,
      data: JSON.stringify({ sessionId: row.sessionId, staleMessageId: row.lastMessageId, staleMessageType: row.messageType, appliedMessageId: entry.messageId, rule: evidence.rule }).slice(0, 4096),
    });
    log.info({ endpointId: row.endpointId, eventId: row.eventId, status: written.row.status }, 'stale pending row reconciled');
    results.push({ target, outcome: 'repaired', status: written.row.status });
  }
  return { repaired: results.filter((r) => r.outcome === 'repaired').length, unchanged: results.filter((r) => r.outcome === 'unchanged').length, results };
}
