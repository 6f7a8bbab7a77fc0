// Dead-letter replay (DESIGN.md §5): each selected dead letter is received under a lock, a copy with the same
// MessageId and without ThrottleRetryCount / DeadLetterReason / DeadLetterErrorDescription is sent to the
// topic it came from, and only then is the dead letter completed; a send the broker refused abandons it.
//
// Never twice, even if the console dies midway: every dead letter goes through the replay journal
// (replayJournal.ts) - `sending` is written before the send, `sent` after it, `done` after the completion. A
// later replay completes a `sent` dead letter without sending again, and leaves a `sending` one (the process
// died during its send: the copy may be out) in the queue as *uncertain* until an operator decides, audited,
// to resend it or to remove it as delivered. A `done` record is about a dead letter already removed: one in the
// queue under its key is replayed as one with no record (claimed over it), never removed unsent; so is one enqueued
// after a `sent` record's claim (its `done` write failed: replayJournal.ts isAboutAnother). Topics have no duplicate detection to fall back on (the
// Resolver's throttle path legitimately re-sends a MessageId), so the journal is the only guard.
// A long replay writes its progress to an operation record as it goes, and is audited when it ends.
import { auditorFields } from '../manager/commands.ts';
import { randomUUID } from 'node:crypto';
import type { ServiceBusAdministrationClient, ServiceBusClient, ServiceBusReceivedMessage, ServiceBusReceiver } from '@azure/service-bus';
import { Prop } from '@nimbus/sdk/contract';
import { holdLease, type HeldLease, type LeaseStore, type MessageStore } from '../../lib/store/index.ts';
import { conflict } from '../http.ts';
import type { PlatformDocs } from '../heartbeat/platformDocs.ts';
import { log } from '../log.ts';
import { deadLetterReceiver, replayCopy, sequenceNumber, viewOf, type DeadLetterView } from './deadLetters.ts';
import type { ReplayWarning } from './deadLetterEvent.ts';
import { ruleFilterSql } from './overview.ts';
import { recordIdOf, type DeadLetterKey, type JournalEntry, type JournalRecord, type ReplayJournal, type UncertainDecision } from './replayJournal.ts';
import { subscriptionMatches, type Match } from './ruleMatch.ts';
import { sendCertainlyRefused } from './sendOutcome.ts';
import { extractTraceContext, withSendSpan } from '@nimbus/sdk';
import { boundedClose } from '@nimbus/sdk/servicebus';

/** Which dead letters: the listed sequence numbers, or every one matching the reason filter (`all`). */
export interface ReplaySelection {
  sequenceNumbers?: string[];
  all?: boolean;
  reason?: string;
  /** Upper bound on the number replayed in one operation. */
  max?: number;
  /**
   * The operator's decision on the listed dead letters that are uncertain (a replay died during their send):
   * `resend` sends a copy again although one may already be out, `markDelivered` removes the dead letter
   * without sending. Only with `sequenceNumbers`; dead letters that are not uncertain are replayed as usual.
   */
  uncertain?: UncertainDecision;
  /**
   * Replay also the dead letters whose replay is futile or harmful (`replayWarning`: a refused Manager command…).
   * Without it a replay skips them (they stay in the queue, counted as `skipped`), and one that lists any of them by
   * sequence number is refused with a 409 before anything starts.
   */
  includeWarned?: boolean;
}

export const MAX_REPLAY = 5000;
/** Dead letters one replay pass may look at (and hold locked) while searching for its selection. */
export const MAX_SCAN = 20_000;
/** The audit partition for namespace-level operator actions (they belong to no event). */
export const TOPOLOGY_AUDIT_EVENT = '$topology';
/** Uncertain dead letters listed with their evidence in a preview (the count covers all). */
const MAX_UNCERTAIN_LISTED = 100;

export function selects(sel: ReplaySelection, v: Pick<DeadLetterView, 'sequenceNumber' | 'reason'>): boolean {
  if (sel.reason !== undefined && v.reason !== sel.reason) return false;
  if (sel.sequenceNumbers && sel.sequenceNumbers.length > 0) return sel.sequenceNumbers.includes(v.sequenceNumber);
  return sel.all === true;
}

/** A dead letter whose replay is futile or harmful, as the preview and a refused replay name it. */
export type WarnedDeadLetter = Pick<DeadLetterView, 'sequenceNumber' | 'messageId' | 'reason' | 'event' | 'enqueuedAt'> & { warning: ReplayWarning };

const warnedOf = (v: DeadLetterView, warning: ReplayWarning): WarnedDeadLetter => ({ sequenceNumber: v.sequenceNumber, messageId: v.messageId, reason: v.reason, event: v.event, enqueuedAt: v.enqueuedAt, warning });

/** Why a dead letter is uncertain: the claim left in `sending`, and what became of the operation that made it. */
export interface UncertainEvidence {
  sequenceNumber: string;
  messageId: string | null;
  reason: string | null;
  enqueuedAt: string | null;
  deliveryCount: number | null;
  /** The replay whose send was in flight, who started it, when it claimed this dead letter. */
  operationId: string;
  auditor: string;
  claimedAt: string;
  /** That operation's record: `interrupted` (its process died), `running`, `done`/`failed`, or `unknown`. */
  operationState: 'interrupted' | 'running' | 'done' | 'failed' | 'unknown';
  /** Present when this claim itself came from an earlier operator decision. */
  decision: JournalRecord['decision'];
}

export interface ReplayPreview {
  topic: string;
  subscription: string;
  count: number;
  /** Of `count`: a replay already sent their copy (journal `sent`); they are only removed, not sent. */
  alreadySent: number;
  /** Of `count`: a replay died during their send; they are left in the queue until an operator decides. */
  uncertain: number;
  /** Of `count`: sent now (count - alreadySent - uncertain, or + uncertain with a `resend` decision). */
  toSend: number;
  /**
   * Of `count`: dead-lettered as permanent failures (DeadLetterReason `Permanent failure: …`). Replayed unchanged
   * they fail again; their fix is on the event page (Resubmit with changes).
   */
  permanentFailures: number;
  /**
   * Of `count`: marked with a `replayWarning` (replaying them unchanged is futile or harmful). Without `includeWarned`
   * they are skipped, left in the queue, and not in `toSend`; with it they are replayed as any other. Not those whose
   * copy the journal records as sent: a replay only removes them (counted in `alreadySent`), the warning is about a send.
   */
  warned: number;
  /**
   * Of `warned`: those a replay with `includeWarned` sends - not the uncertain ones (left in the queue unless the
   * decision is `resend`). The count of the opt-in and of the confirm button's "including M likely refused again";
   * before, those said `warned`, the uncertain and already-sent ones included.
   */
  warnedToSend: number;
  /** The warned ones with their warning and event (at most 100), for the preview's links to the event pages. */
  warnedItems: WarnedDeadLetter[];
  /**
   * Of a selection listed by sequence number: the sequence number of every warned one among them, without the cap of
   * `warnedItems` (bounded by the request's own list, at most MAX_REPLAY). The console leaves exactly these out of the
   * replay it confirms; before, it left out only the 100 of `warnedItems`, so a listed replay of more than 100 warned
   * ones was refused with a 409. Empty for a filter or `all` (their replay skips warned ones by itself).
   */
  warnedSequenceNumbers: string[];
  /** The uncertain ones with their evidence (at most 100). */
  uncertainItems: UncertainEvidence[];
  /** True when the scan stopped at its bound: there may be more matching dead letters. */
  truncated: boolean;
  sample: Array<Pick<DeadLetterView, 'sequenceNumber' | 'messageId' | 'reason' | 'enqueuedAt'>>;
  /** Other subscriptions of the topic a copy would also reach, with how many of the copies. */
  alsoReaches: Array<{ subscription: string; count: number; certain: boolean }>;
}

async function topicRules(admin: ServiceBusAdministrationClient, topic: string): Promise<Map<string, Array<string | undefined>>> {
  const out = new Map<string, Array<string | undefined>>();
  for await (const s of admin.listSubscriptions(topic)) {
    const filters: Array<string | undefined> = [];
    for await (const r of admin.listRules(topic, s.subscriptionName)) {
      const sql = ruleFilterSql(r);
      filters.push(sql === null || sql === '(correlation filter)' ? undefined : sql);
    }
    out.set(s.subscriptionName, filters);
  }
  return out;
}

/** A 'running' operation not updated for this long has lost its process. */
export const INTERRUPTED_AFTER_MS = 60_000;

/**
 * Each replay operation runs under a lease named for it (renewed every 10 s while it runs): one process runs an
 * operation, and a process that dies stops renewing, so within this TTL the operation reads as interrupted.
 */
export const REPLAY_LEASE_TTL_MS = 30_000;
export const replayLeaseName = (operationId: string) => `replay_${operationId}`;

export function operationStateOf(op: Pick<ReplayOperation, 'state' | 'updatedAt'> | null | undefined, now = Date.now()): UncertainEvidence['operationState'] {
  if (!op) return 'unknown';
  if (op.state === 'running') return now - Date.parse(op.updatedAt) > INTERRUPTED_AFTER_MS ? 'interrupted' : 'running';
  return op.state;
}

export async function uncertainEvidence(docs: PlatformDocs | undefined, items: Array<{ view: DeadLetterView; record: JournalRecord }>): Promise<UncertainEvidence[]> {
  const ops = new Map<string, UncertainEvidence['operationState']>();
  for (const id of new Set(items.map((i) => i.record.operationId))) {
    const doc = docs ? await docs.read<ReplayOperation>(operationDocName(id)).catch(() => null) : null;
    ops.set(id, operationStateOf(doc?.value));
  }
  return items.map(({ view, record }) => ({
    sequenceNumber: view.sequenceNumber,
    messageId: view.messageId,
    reason: view.reason,
    enqueuedAt: view.enqueuedAt,
    deliveryCount: view.deliveryCount,
    operationId: record.operationId,
    auditor: record.auditor,
    claimedAt: record.claimedAt,
    operationState: ops.get(record.operationId) ?? 'unknown',
    decision: record.decision,
  }));
}

/** What a replay would do: how many, what the journal already knows of them, and which other subscriptions the copies would also reach. */
export async function previewReplay(
  client: ServiceBusClient,
  admin: ServiceBusAdministrationClient,
  journal: ReplayJournal,
  topic: string,
  subscription: string,
  sel: ReplaySelection,
  docs?: PlatformDocs,
): Promise<ReplayPreview> {
  const max = Math.min(sel.max ?? MAX_REPLAY, MAX_REPLAY);
  // Without `done` records, as the run judges them: a dead letter beside one is replayed as one with no record. So is
  // one beside a `sent` record older than it (journal.verdictOf, replayOne).
  const [rules, open] = await Promise.all([topicRules(admin, topic), journal.openRecords(topic, subscription)]);
  const receiver = deadLetterReceiver(client, topic, subscription);
  const reach = new Map<string, { yes: number; unknown: number }>();
  const sample: ReplayPreview['sample'] = [];
  const uncertainFound: Array<{ view: DeadLetterView; record: JournalRecord }> = [];
  let count = 0;
  let alreadySent = 0;
  let uncertain = 0;
  let permanentFailures = 0;
  const warnedItems: WarnedDeadLetter[] = [];
  const warnedSequenceNumbers: string[] = [];
  const listed = (sel.sequenceNumbers?.length ?? 0) > 0;
  let warned = 0;
  let warnedToSend = 0;
  let truncated = false;
  try {
    let batch = await receiver.peekMessages(100, { fromSequenceNumber: sequenceNumber('0') });
    while (batch.length > 0) {
      for (const m of batch) {
        const v = viewOf(m, topic);
        if (!selects(sel, v)) continue;
        if (count >= max) {
          truncated = true;
          break;
        }
        count++;
        if (v.permanentFailure) permanentFailures++;
        const record = open.get(recordIdOf(v));
        const verdict = journal.verdictOf(record, v.enqueuedAt);
        // As runReplay decides: a warned one whose copy is out is only removed, so the warning (about a send) does not hold.
        const warning = verdict === 'alreadySent' ? null : v.replayWarning;
        if (warning) {
          warned++;
          if (verdict !== 'uncertain' || sel.uncertain === 'resend') warnedToSend++;
          if (warnedItems.length < MAX_UNCERTAIN_LISTED) warnedItems.push(warnedOf(v, warning));
          if (listed) warnedSequenceNumbers.push(v.sequenceNumber);
        }
        if (warning && sel.includeWarned !== true) {
          // Skipped by the replay (runReplay): no claim, no copy, reaches nobody.
          if (sample.length < 20) sample.push({ sequenceNumber: v.sequenceNumber, messageId: v.messageId, reason: v.reason, enqueuedAt: v.enqueuedAt });
          continue;
        }
        if (verdict === 'alreadySent') alreadySent++;
        if (verdict === 'uncertain') {
          uncertain++;
          if (uncertainFound.length < MAX_UNCERTAIN_LISTED) uncertainFound.push({ view: v, record: record! });
        }
        if (sample.length < 20) sample.push({ sequenceNumber: v.sequenceNumber, messageId: v.messageId, reason: v.reason, enqueuedAt: v.enqueuedAt });
        // A copy goes out only for these; already-sent and (undecided) uncertain ones reach nobody now.
        if (verdict === 'alreadySent' || (verdict === 'uncertain' && sel.uncertain !== 'resend')) continue;
        const props = { ...(replayCopy(m).applicationProperties ?? {}) };
        for (const [name, filters] of rules) {
          if (name.toLowerCase() === subscription.toLowerCase()) continue;
          const r: Match = subscriptionMatches(filters, props);
          if (r === 'no') continue;
          const e = reach.get(name) ?? { yes: 0, unknown: 0 };
          if (r === 'yes') e.yes++;
          else e.unknown++;
          reach.set(name, e);
        }
      }
      if (truncated) break;
      batch = await receiver.peekMessages(100, { fromSequenceNumber: sequenceNumber(BigInt(batch[batch.length - 1]!.sequenceNumber!.toString()) + 1n) });
    }
  } finally {
    await closeBounded('a dead-letter peek receiver', receiver);
  }
  const alsoReaches = [...reach.entries()]
    .map(([s, e]) => ({ subscription: s, count: e.yes + e.unknown, certain: e.unknown === 0 }))
    .sort((a, b) => a.subscription.localeCompare(b.subscription));
  const toSend = count - alreadySent - (sel.uncertain === 'resend' ? 0 : uncertain) - (sel.includeWarned === true ? 0 : warned);
  return { topic, subscription, count, alreadySent, uncertain, toSend, permanentFailures, warned, warnedToSend, warnedItems, warnedSequenceNumbers, uncertainItems: await uncertainEvidence(docs, uncertainFound), truncated, sample, alsoReaches };
}

/**
 * The dead letters among `sequenceNumbers` whose replay is futile or harmful (`replayWarning`), found by peeking
 * from the lowest listed one until every listed one was seen (at most MAX_SCAN looked at). A replay that lists any
 * of them without `includeWarned` is refused before it starts, so the operator is told instead of finding them skipped.
 */
export async function warnedAmong(client: ServiceBusClient, topic: string, subscription: string, sequenceNumbers: string[]): Promise<WarnedDeadLetter[]> {
  const wanted = new Set(sequenceNumbers);
  if (wanted.size === 0) return [];
  const lowest = [...wanted].reduce((a, b) => (BigInt(b) < BigInt(a) ? b : a));
  const found: WarnedDeadLetter[] = [];
  const receiver = deadLetterReceiver(client, topic, subscription);
  let seen = 0;
  let scanned = 0;
  try {
    let batch = await receiver.peekMessages(100, { fromSequenceNumber: sequenceNumber(lowest) });
    while (batch.length > 0 && seen < wanted.size && scanned < MAX_SCAN) {
      for (const m of batch) {
        scanned++;
        const v = viewOf(m, topic);
        if (!wanted.has(v.sequenceNumber)) continue;
        seen++;
        if (v.replayWarning) found.push(warnedOf(v, v.replayWarning));
      }
      batch = await receiver.peekMessages(100, { fromSequenceNumber: sequenceNumber(BigInt(batch[batch.length - 1]!.sequenceNumber!.toString()) + 1n) });
    }
  } finally {
    await closeBounded('a dead-letter peek receiver', receiver);
  }
  return found;
}

export interface ReplayOperation {
  id: string;
  kind: 'replay';
  topic: string;
  subscription: string;
  auditor: string;
  /** The starter's stable id (principalKey) beside the display name; absent on operations recorded before it was. */
  auditorId?: string;
  state: 'running' | 'done' | 'failed';
  /** Copies sent by this operation (and their dead letters completed, unless counted in notCompleted). */
  replayed: number;
  /** Sends the broker refused: nothing went out, the dead letter stays and may be replayed again. */
  failed: number;
  /** Dead letters whose copy was sent but whose completion failed (lock lost): the next replay removes them without sending. */
  notCompleted: number;
  /** Dead letters an earlier replay had already sent: completed now without sending again. */
  alreadySent: number;
  /** Dead letters left in the queue because whether their copy went out is unknown (operator decision needed). */
  uncertain: number;
  uncertainSequenceNumbers: string[];
  /**
   * Dead letters of the selection left in the queue unreplayed because their replay is futile or harmful
   * (`replayWarning`) and the request did not say `includeWarned`. Absent on records written before.
   */
  skipped?: number;
  skippedSequenceNumbers?: string[];
  /**
   * Dead letters of the selection (by filter or `all`) that were not in the queue when the replay started - above
   * its highest sequence number then, such as a replayed copy the subscriber dead-lettered again - left in the
   * queue unreplayed for the operator's next decision. Absent on records written before.
   */
  arrivedAfterStart?: number;
  /** The operator decision this operation applied to uncertain dead letters, and to how many. */
  decision: UncertainDecision | null;
  decided: number;
  messageIds: string[];
  error: string | null;
  startedAt: string;
  updatedAt: string;
  finishedAt: string | null;
}

/** Points where a test kills the replaying process, to leave the journal exactly as a crash there would. */
export interface ReplayCrashPoints {
  /** After the `sending` claim is stored, before the send. */
  afterClaim?: (sequenceNumber: string) => void;
  /** After the send resolved, before `sent` is stored. */
  afterSend?: (sequenceNumber: string) => void;
}

export interface ReplayDeps {
  client: ServiceBusClient;
  /**
   * The client the copies are sent with. It should not retry sends by itself (retryOptions.maxRetries 0):
   * a retried send after a timeout can enqueue a second copy that no journal saw. Default: `client`.
   */
  sendClient?: ServiceBusClient;
  store: MessageStore;
  journal: ReplayJournal;
  docs?: PlatformDocs;
  /** How long one receive waits for more dead letters before the pass ends. */
  receiveWaitMs?: number;
  /** Least time between two writes of the progress record (default 500 ms; the final state is always written). */
  progressEveryMs?: number;
  crashPoints?: ReplayCrashPoints;
  /** How long a close of the replay's sender or receiver is waited for (default boundedClose's 30 s). */
  closeTimeoutMs?: number;
  /** The operation's lease (REPLAY_LEASE_TTL_MS): the replay runs only while this process holds it. */
  lease?: { leases: LeaseStore; owner: string; ttlMs?: number };
}

export const operationDocName = (id: string) => `op_${id}`;

const errorText = (err: unknown, fallback: string) => (err instanceof Error ? err.message.slice(0, 300) : fallback);

/** A journal write that must not be lost to a passing throttle or blip: a few tries, then the error. */
async function persist<T>(write: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      if (attempt >= 4) throw err;
      await new Promise((r) => setTimeout(r, 100 * attempt));
    }
  }
}

/** Why a replay did not start: its lease was not taken, or its first operation record was not written. */
export class ReplayNotStartedError extends Error {
  override readonly name = 'ReplayNotStartedError';
  readonly step: 'lease' | 'record';
  constructor(step: 'lease' | 'record', message: string, cause: unknown) {
    super(message, { cause });
    this.step = step;
  }
}

/** A replay that has started: its lease is held and its operation record exists. `run` does the work, once. */
export interface StartedReplay {
  operationId: string;
  run(onProgress?: (op: ReplayOperation) => void): Promise<ReplayOperation>;
}

/**
 * Starts a replay: takes its lease and writes its first operation record ('running'), so whoever is told the
 * operation id finds the record. Nothing is held or replayed when this throws: ReplayNotStartedError when the
 * store failed, a 409 conflict when another process holds the operation's lease.
 */
export async function beginReplay(
  deps: ReplayDeps,
  args: { topic: string; subscription: string; selection: ReplaySelection; auditor: string; auditorId?: string; operationId?: string },
): Promise<StartedReplay> {
  const { topic, subscription, selection, auditor, auditorId } = args;
  const max = Math.min(selection.max ?? MAX_REPLAY, MAX_REPLAY);
  const wanted = selection.sequenceNumbers && selection.sequenceNumbers.length > 0 ? new Set(selection.sequenceNumbers) : null;
  // A decision applies only to dead letters the operator listed one by one, never to a filter.
  const decision = wanted ? (selection.uncertain ?? null) : null;
  const now = () => new Date().toISOString();
  const op: ReplayOperation = {
    id: args.operationId ?? randomUUID(),
    kind: 'replay',
    topic,
    subscription,
    auditor,
    ...(auditorId ? { auditorId } : {}),
    state: 'running',
    replayed: 0,
    failed: 0,
    notCompleted: 0,
    alreadySent: 0,
    uncertain: 0,
    uncertainSequenceNumbers: [],
    skipped: 0,
    skippedSequenceNumbers: [],
    arrivedAfterStart: 0,
    decision,
    decided: 0,
    messageIds: [],
    error: null,
    startedAt: now(),
    updatedAt: now(),
    finishedAt: null,
  };
  let lease: HeldLease | undefined;
  if (deps.lease) {
    try {
      lease = await holdLease(deps.lease.leases, replayLeaseName(op.id), deps.lease.owner, { ttlMs: deps.lease.ttlMs ?? REPLAY_LEASE_TTL_MS });
    } catch (err) {
      throw new ReplayNotStartedError('lease', `the replay's lease could not be taken: ${errorText(err, 'store error')}`, err);
    }
    if (!lease) throw conflict(`replay operation ${op.id} is already running in another process`);
  }
  if (deps.docs) {
    try {
      await deps.docs.write(operationDocName(op.id), op);
    } catch (err) {
      await lease?.release();
      throw new ReplayNotStartedError('record', `the replay's operation record could not be written: ${errorText(err, 'store error')}`, err);
    }
  }
  let ran = false;
  return {
    operationId: op.id,
    async run(onProgress) {
      if (ran) throw new Error(`replay ${op.id} has already run`);
      ran = true;
      try {
        return await runReplay(deps, args, op, max, wanted, decision, lease, onProgress);
      } finally {
        await lease?.release();
      }
    },
  };
}

/**
 * Runs one replay to its end and returns the final operation record. `onProgress` and the operation document
 * are updated as it goes (the document at most every 500 ms).
 */
/**
 * The dead letters a pass has taken toward its `max`: those it decided on, the ones it skipped as futile included,
 * as the preview counts them (so a run sends no more than the preview said; before, skipped ones were not counted
 * and a run replayed up to `max` past them).
 */
const takenBy = (op: ReplayOperation): number => op.replayed + op.failed + op.alreadySent + op.uncertain + (op.skipped ?? 0);

export async function replayDeadLetters(
  deps: ReplayDeps,
  args: { topic: string; subscription: string; selection: ReplaySelection; auditor: string; auditorId?: string; operationId?: string },
  onProgress?: (op: ReplayOperation) => void,
): Promise<ReplayOperation> {
  return (await beginReplay(deps, args)).run(onProgress);
}

async function runReplay(
  deps: ReplayDeps,
  args: { topic: string; subscription: string; selection: ReplaySelection; auditor: string; auditorId?: string },
  op: ReplayOperation,
  max: number,
  wanted: Set<string> | null,
  decision: UncertainDecision | null,
  lease: HeldLease | undefined,
  onProgress?: (op: ReplayOperation) => void,
): Promise<ReplayOperation> {
  const { client, store, docs, journal } = deps;
  const { topic, subscription, selection, auditor, auditorId } = args;
  // The history entries' auditor and stable id, cut to their 256 characters (manager/commands.ts auditorFields).
  const who = auditorFields(auditorId ? { name: auditor, id: auditorId } : auditor);
  const now = () => new Date().toISOString();
  let lastSaved = 0;
  const save = async (force: boolean) => {
    op.updatedAt = now();
    onProgress?.({ ...op, messageIds: [...op.messageIds], uncertainSequenceNumbers: [...op.uncertainSequenceNumbers], skippedSequenceNumbers: [...(op.skippedSequenceNumbers ?? [])] });
    if (!docs || (!force && Date.now() - lastSaved < (deps.progressEveryMs ?? 500))) return;
    lastSaved = Date.now();
    await docs.write(operationDocName(op.id), op).catch((err: unknown) => {
      log.warn({ operationId: op.id, err: errorText(err, 'write failed') }, 'replay progress not saved');
    });
  };
  await save(true);

  const receiver = deadLetterReceiver(client, topic, subscription);
  const sender = (deps.sendClient ?? client).createSender(topic);
  // Dead letters this pass received but does not replay now: their locks are held until the end, so the loop
  // does not receive them again, then released with abandon (they stay in the dead-letter queue).
  const held: ServiceBusReceivedMessage[] = [];
  const seen = new Set<string>();
  let consecutiveFailures = 0;

  const eventAudit = (v: DeadLetterView, type: string, comment: string, extra: Record<string, unknown> = {}) => {
    const eventId = v.applicationProperties[Prop.EventId];
    if (typeof eventId !== 'string' || eventId === '') return Promise.resolve();
    // The event's own audit trail shows the replay too; keyed so a retried write adds nothing.
    return store
      .recordAudit({
        id: `${type}-${op.id}-${v.sequenceNumber}`,
        eventId: eventId.slice(0, 128),
        type,
        ...who,
        comment,
        data: JSON.stringify({ messageId: v.messageId, reason: v.reason, operationId: op.id, ...extra }).slice(0, 4096),
      })
      .then(() => undefined)
      .catch(() => undefined);
  };

  /** Removes a dead letter whose copy is out; the journal then says `done`. */
  const completeSent = async (m: ServiceBusReceivedMessage, v: DeadLetterView, entry: JournalEntry | null) => {
    try {
      await receiver.completeMessage(m);
    } catch {
      // Lock lost: the record still says `sent`, so whoever receives it next removes it without sending.
      op.notCompleted++;
      return;
    }
    if (!entry) return;
    // Retried like the other journal writes: a record left `sent` would be taken for any later dead letter under its
    // key (a recreated entity reusing it) enqueued within CLOCK_SKEW_MS of its claim, and that one removed unsent.
    // Before, one failure was ignored. Nothing is undone when it still fails: the copy is out and the dead letter gone.
    await persist(() => journal.transition(entry, { state: 'done', doneAt: now() })).catch((err: unknown) => {
      log.warn({ operationId: op.id, sequenceNumber: v.sequenceNumber, err: errorText(err, 'write failed') }, 'replay journal: done not recorded');
    });
  };

  /** This operation's claim as the journal holds it now (`sending` or `sent`, with its etag); null if not ours or unread. */
  const ownRecord = async (claim: JournalEntry): Promise<JournalEntry | null> => {
    const { topic: t, subscription: s, sequenceNumber, messageId } = claim.record;
    const now = await journal.get({ topic: t, subscription: s, sequenceNumber, messageId }).catch(() => null);
    return now && now.record.operationId === op.id && now.record.claimedAt === claim.record.claimedAt && now.record.state !== 'done' ? now : null;
  };

  /** Sends the copy under a claim this operation holds (`sending`), then records `sent` and completes. */
  const sendClaimed = async (m: ServiceBusReceivedMessage, v: DeadLetterView, claim: JournalEntry): Promise<'sent' | 'refused' | 'uncertain'> => {
    deps.crashPoints?.afterClaim?.(v.sequenceNumber);
    try {
      // The copy continues the dead-lettered message's trace: the replay is one more hop of it.
      const copy = replayCopy(m);
      await withSendSpan(sender.entityPath, copy, () => sender.sendMessages(copy), { 'nimbus.operation': 'replay' }, extractTraceContext(m.applicationProperties));
    } catch (err) {
      op.error = errorText(err, 'send failed');
      if (sendCertainlyRefused(err)) {
        // Nothing went out: forget the claim so a later replay may send it.
        await journal.release(claim).catch(() => false);
        await receiver.abandonMessage(m).catch(() => undefined);
        op.failed++;
        return 'refused';
      }
      // It may have gone out after all: the claim stays `sending` and the dead letter waits for an operator.
      held.push(m);
      markUncertain(v);
      return 'uncertain';
    }
    deps.crashPoints?.afterSend?.(v.sequenceNumber);
    let sent: JournalEntry | null = null;
    try {
      sent = await persist(() => journal.transition(claim, { state: 'sent', sentAt: now() }));
    } catch (err) {
      // The copy is out; completing the dead letter is still right (once it is gone nothing can resend it).
      log.warn({ operationId: op.id, sequenceNumber: v.sequenceNumber, err: errorText(err, 'write failed') }, 'replay journal: sent not recorded');
    }
    // No entry back: the write failed, or it landed and its reply was lost (the retry, If-Match the claim's etag, then
    // answers 412 - null). Our own record, read again, is what `done` is written over after the completion; before,
    // no `done` was written at all, and the record left `sent` was taken for a recreated entity's dead letter under
    // its key within CLOCK_SKEW_MS, removed unsent (review rv44-a, replayReusedKey.test.ts).
    sent ??= await ownRecord(claim);
    await completeSent(m, v, sent);
    op.replayed++;
    if (op.messageIds.length < 200 && v.messageId) op.messageIds.push(v.messageId);
    return 'sent';
  };

  const markUncertain = (v: DeadLetterView) => {
    op.uncertain++;
    if (op.uncertainSequenceNumbers.length < 200) op.uncertainSequenceNumbers.push(v.sequenceNumber);
  };

  /** An operator's decision on a dead letter left `sending` by another operation. */
  const decide = async (m: ServiceBusReceivedMessage, v: DeadLetterView, entry: JournalEntry, kind: UncertainDecision) => {
    const d = { kind, by: auditor, ...(auditorId ? { byId: auditorId } : {}), at: now(), operationId: op.id, previousOperationId: entry.record.operationId, previousClaimedAt: entry.record.claimedAt };
    let taken: JournalEntry | null;
    try {
      taken =
        kind === 'resend'
          ? await journal.transition(entry, { operationId: op.id, auditor, auditorId, claimedAt: now(), decision: d })
          : await journal.transition(entry, { state: 'sent', operationId: op.id, auditor, auditorId, sentAt: now(), decision: d });
    } catch (err) {
      // The decision was not recorded, so it is not acted on: the dead letter stays uncertain.
      op.error = `replay journal unavailable, decision not applied: ${errorText(err, 'store error')}`;
      held.push(m);
      markUncertain(v);
      return;
    }
    if (!taken) {
      // The record changed since it was read (its owner finished after all): next time it is judged anew.
      held.push(m);
      return;
    }
    op.decided++;
    await eventAudit(v, kind === 'resend' ? 'ReplayUncertainResend' : 'ReplayUncertainMarkDelivered', `uncertain dead letter of ${topic}/${subscription}: ${kind === 'resend' ? 'resent on operator decision' : 'removed as delivered on operator decision'}`, { previousOperationId: d.previousOperationId, previousClaimedAt: d.previousClaimedAt });
    if (kind === 'resend') {
      await sendClaimed(m, v, taken);
      return;
    }
    await completeSent(m, v, taken);
  };

  /**
   * A warned dead letter (not `includeWarned`) dealt with without a send, when the journal says none is needed: its
   * copy recorded as sent (`sent`) is removed as an un-warned one is (counted `alreadySent`), and under a
   * `markDelivered` decision an uncertain one (`sending`) is removed as delivered. The warning is about a send, so it
   * holds back neither; before, a filter replay checked the warning first and skipped an already-sent one, left in
   * the queue. False leaves it to be skipped: it has no record (replayOne would claim and send it), or only a `done`
   * one - written after its dead letter's completion, so about another dead letter under the same key (a recreated
   * entity); before, it was removed unsent while the preview said skipped - or a `sent` one claimed before this dead
   * letter was enqueued (isAboutAnother: about an earlier one whose `done` write failed), it is uncertain without that
   * decision, or the journal did not answer.
   */
  const settleWarned = async (m: ServiceBusReceivedMessage, v: DeadLetterView): Promise<boolean> => {
    let entry: JournalEntry | null;
    try {
      entry = await journal.get({ topic, subscription, sequenceNumber: v.sequenceNumber, messageId: v.messageId });
    } catch (err) {
      op.error = `replay journal unavailable, a warned dead letter left in the queue: ${errorText(err, 'store error')}`;
      return false;
    }
    // `done`, or `sent` but older than this dead letter (its `done` write failed): about another dead letter.
    if (!entry || journal.isAboutAnother(entry.record, v.enqueuedAt)) return false;
    if (entry.record.state === 'sent') {
      op.alreadySent++;
      await completeSent(m, v, entry);
      return true;
    }
    if (decision !== 'markDelivered') return false;
    await decide(m, v, entry, 'markDelivered');
    return true;
  };

  const replayOne = async (m: ServiceBusReceivedMessage, v: DeadLetterView): Promise<'ok' | 'failed'> => {
    const key: DeadLetterKey = { topic, subscription, sequenceNumber: v.sequenceNumber, messageId: v.messageId };
    let entry: JournalEntry | null;
    let claim: JournalEntry | null = null;
    try {
      entry = await journal.get(key);
      // `done` is written only after its dead letter was completed: this one, in the queue under the same key, is
      // another (a recreated entity reusing the sequence number and the MessageId) and was never replayed. Claimed
      // over it as if there were no record; before, it was removed without a copy - lost - while the preview
      // (openRecords leaves `done` out) counted it as sent now. Likewise a `sent` record claimed before this dead
      // letter was enqueued: its `done` write failed, and it is about an earlier dead letter (isAboutAnother).
      if (entry && journal.isAboutAnother(entry.record, v.enqueuedAt)) {
        // Null: changed since our read (a record deleted since is claimed fresh); judge what is there now.
        claim = await journal.reclaim(entry, { operationId: op.id, auditor, auditorId });
        if (!claim) entry = await journal.get(key);
      } else if (!entry) {
        claim = await journal.claim(key, { operationId: op.id, auditor, auditorId });
        // Null: someone claimed it between our read and our create; judge their record.
        if (!claim) entry = await journal.get(key);
      }
    } catch (err) {
      // No journal, no send: without the `sending` record a crash could not be told apart from "never sent".
      op.failed++;
      op.error = `replay journal unavailable, not sent: ${errorText(err, 'store error')}`;
      await receiver.abandonMessage(m).catch(() => undefined);
      return 'failed';
    }
    if (claim) {
      // Outside the try above: once the claim exists, a failure is judged by sendClaimed, never as "not sent".
      const r = await sendClaimed(m, v, claim);
      if (r === 'sent') await eventAudit(v, 'ReplayDeadLetter', `dead letter replayed from ${topic}/${subscription}`);
      return r === 'sent' ? 'ok' : 'failed';
    }
    if (!entry || journal.isAboutAnother(entry.record, v.enqueuedAt)) {
      // Gone, or a record about another dead letter someone else wrote since our read: judged anew by the next pass.
      held.push(m);
      return 'ok';
    }
    if (entry.record.state === 'sent') {
      // The copy is out; remove it, send nothing.
      op.alreadySent++;
      await completeSent(m, v, entry);
      return 'ok';
    }
    if (decision) {
      await decide(m, v, entry, decision);
      return 'ok';
    }
    held.push(m);
    markUncertain(v);
    return 'ok';
  };

  try {
    // A replay by filter or `all` takes only the dead letters in the queue when it started. Without this bound a
    // copy the subscriber dead-letters again during the pass (a permanent failure replayed unchanged) came back
    // under a new sequence number, was received and replayed again, and again, up to `max`: the endpoint flooded
    // with one failing message, the audit filled. Listed sequence numbers need no bound: a copy never has one.
    const bound = wanted ? null : await highestSequenceNumber(receiver);
    while (takenBy(op) < max) {
      if (lease?.signal.aborted) {
        // The lease ran out (the store unreachable for a TTL): another process may take the operation over now.
        op.error = 'stopped: this process lost the replay lease';
        break;
      }
      if (wanted && [...wanted].every((s) => seen.has(s))) break;
      if (seen.size >= MAX_SCAN) {
        op.error = `stopped after looking at ${MAX_SCAN} dead letters; run the replay again for the rest`;
        break;
      }
      const batch = await receiver.receiveMessages(20, { maxWaitTimeInMs: deps.receiveWaitMs ?? 1000 });
      if (batch.length === 0) break;
      let fresh = 0;
      let stop = false;
      for (const m of batch) {
        const v = viewOf(m, topic);
        if (seen.has(v.sequenceNumber)) {
          // Came back after its lock expired or after a refused send: this pass has already decided on it.
          held.push(m);
          continue;
        }
        seen.add(v.sequenceNumber);
        fresh++;
        if (bound !== null && BigInt(v.sequenceNumber) > bound) {
          // Arrived after the start (the queue need not be in sequence order, so this is no reason to stop): held
          // under lock like an unselected one so this pass does not receive it again, then left in the queue.
          held.push(m);
          if (selects(selection, v)) op.arrivedAfterStart = (op.arrivedAfterStart ?? 0) + 1;
          continue;
        }
        if (stop || !selects(selection, v) || takenBy(op) >= max) {
          held.push(m);
          continue;
        }
        if (v.replayWarning && selection.includeWarned !== true) {
          // Its copy already out, or an operator's "remove as delivered" on an uncertain one: nothing is sent, so the
          // warning (about a send) does not hold it back; anything else about it would send, and it is left.
          if (await settleWarned(m, v)) {
            await save(false);
            continue;
          }
          // Replayed unchanged it is refused again (or runs a handler it should not): left in the queue, reported.
          held.push(m);
          op.skipped = (op.skipped ?? 0) + 1;
          if ((op.skippedSequenceNumbers ??= []).length < 200) op.skippedSequenceNumbers.push(v.sequenceNumber);
          continue;
        }
        const r = await replayOne(m, v);
        consecutiveFailures = r === 'failed' ? consecutiveFailures + 1 : 0;
        if (consecutiveFailures >= 3) stop = true;
        await save(false);
      }
      if (stop || fresh === 0) break;
    }
    op.state = op.failed > 0 && op.replayed === 0 && op.alreadySent === 0 ? 'failed' : 'done';
  } catch (err) {
    op.state = 'failed';
    op.error = errorText(err, 'replay failed');
  } finally {
    await releaseAll(receiver, held);
    await closeBounded("the replay's sender", sender, deps.closeTimeoutMs);
    await closeBounded("the replay's dead-letter receiver", receiver, deps.closeTimeoutMs);
  }
  op.finishedAt = now();
  await save(true);
  await store.recordAudit({
    id: `replay-${op.id}`,
    eventId: TOPOLOGY_AUDIT_EVENT,
    type: decision ? 'ReplayUncertainDecision' : 'ReplayDeadLetters',
    ...who,
    comment: `${topic}/${subscription}: ${op.replayed} replayed, ${op.alreadySent} already sent (removed), ${op.uncertain} uncertain (left), ${op.skipped ?? 0} skipped as futile (left), ${op.arrivedAfterStart ?? 0} arrived after the start (left), ${op.failed} failed${decision ? `; operator decision ${decision} on ${op.decided}` : ''}`,
    data: JSON.stringify({
      topic,
      subscription,
      replayed: op.replayed,
      failed: op.failed,
      notCompleted: op.notCompleted,
      alreadySent: op.alreadySent,
      uncertain: op.uncertain,
      skipped: op.skipped ?? 0,
      arrivedAfterStart: op.arrivedAfterStart ?? 0,
      includeWarned: selection.includeWarned === true,
      decision,
      decided: op.decided,
      sequenceNumbers: decision ? selection.sequenceNumbers?.slice(0, 100) : undefined,
      error: op.error,
      messageIds: op.messageIds.slice(0, 50),
    }).slice(0, 4096),
  });
  log.info({ operationId: op.id, topic, subscription, replayed: op.replayed, alreadySent: op.alreadySent, uncertain: op.uncertain, skipped: op.skipped ?? 0, arrivedAfterStart: op.arrivedAfterStart ?? 0, failed: op.failed }, 'dead-letter replay finished');
  return op;
}

/**
 * Closes a sender or receiver, waiting at most `timeoutMs`: a close the broker had not answered when the connection
 * dropped never ends by itself (boundedClose), and the replay's final record, audit and lease release come after it.
 */
async function closeBounded(what: string, part: { close(): Promise<void> }, timeoutMs?: number): Promise<void> {
  await boundedClose(`closing ${what}`, () => part.close(), { timeoutMs, logger: log }).catch(() => undefined);
}

async function releaseAll(receiver: ServiceBusReceiver, held: ServiceBusReceivedMessage[]): Promise<void> {
  await Promise.all(held.map((m) => receiver.abandonMessage(m).catch(() => undefined)));
}

/**
 * The highest sequence number in the dead-letter queue now, found by peeking it through (peek takes no lock and
 * sees locked messages too); -1 when the queue is empty. Every message enqueued later - a replayed copy included -
 * has a higher one. The peek stops after MAX_SCAN, as a replay pass does: what lies beyond waits for the next run.
 */
async function highestSequenceNumber(receiver: ServiceBusReceiver): Promise<bigint> {
  let highest = -1n;
  let looked = 0;
  let batch = await receiver.peekMessages(100, { fromSequenceNumber: sequenceNumber('0') });
  while (batch.length > 0 && looked < MAX_SCAN) {
    looked += batch.length;
    for (const m of batch) {
      const n = BigInt(m.sequenceNumber!.toString());
      if (n > highest) highest = n;
    }
    batch = await receiver.peekMessages(100, { fromSequenceNumber: sequenceNumber(highest + 1n) });
  }
  return highest;
}
