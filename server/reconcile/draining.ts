// Reconcile: sessions that drain forever. After a block is lifted, an endpoint's session stays "draining"
// (packages/sdk/src/contract/sessionState.ts: NextReplaySequence < NextDeferralSequence) until every parked message has come back
// in order; meanwhile every new message parks behind them. If the parked message the replay cursor waits for is
// gone (dead-lettered or expired on the Deferred subscription, lost in a crash), nothing will ever advance the
// cursor and the session parks everything forever. This finds such sessions and moves the cursor past the gap.
//
// Candidates come from the store (sessions with Deferred rows: a session that parks forever keeps making them). For
// each, the session state is read the way the SDK reads it: by taking the main subscription's session (its lock
// makes the read, and a repair's write, exclusive: the endpoint cannot handle that session meanwhile; a session the
// endpoint holds right now is skipped, it is live). The Deferred subscription is peeked for what is still parked,
// and the main session for a replayed copy still on its way. Repair, under the same lock: NextReplaySequence becomes
// the lowest sequence still parked (or NextDeferralSequence when none is), and a ProcessDeferredRequest asks the
// endpoint's deferred processor to replay what is left. Audited on `$reconcile`.
import { setMaxListeners } from 'node:events';
import type { ServiceBusClient, ServiceBusReceivedMessage, ServiceBusSessionReceiver } from '@azure/service-bus';
import {
  Address,
  decodeSessionState,
  encodeBody,
  encodeSessionState,
  isDraining,
  MessageType,
  Prop,
  ResolutionStatus,
  Subscription,
  toWireProperties,
  type SessionState,
} from '@nimbus/sdk/contract';
import { raceDeadline } from '../../lib/concurrency/deadline.ts';
import type { MessageStore } from '../../lib/store/index.ts';
import { AuditType } from '../../lib/store/index.ts';
import { log } from '../log.ts';
import { closeForRequest } from '../requestClose.ts';
import { sequenceNumber } from '../subscriptions/deadLetters.ts';
import { withSendSpan } from '@nimbus/sdk';

/** The audit trail Reconcile writes session repairs to (a session is not an event). */
export const RECONCILE_AUDIT_EVENT = '$reconcile';
const MAX_SESSIONS_PER_ENDPOINT = 100;
const PEEK = 250;
/** Peeks start at the first message explicitly: a peek without it may continue where an earlier one stopped. */
const FROM_START = sequenceNumber('0');

export interface DrainingSession {
  endpointId: string;
  sessionId: string;
  nextReplaySequence: number;
  nextDeferralSequence: number;
  /** DeferralSequence of each message still parked for the session (at most 250 looked at). */
  parkedSequences: number[];
  why: string;
  does: string;
}

export interface DrainingScan {
  sessions: DrainingSession[];
  /** Sessions not looked at because the endpoint (or a replay pass) holds them right now: live, not stuck. */
  busy: number;
  /** Candidate sessions (with Deferred rows) the scan found, at most 100 per endpoint. */
  candidates: number;
  /** Candidates looked at to the end (busy ones included). */
  checked: number;
  /**
   * True when the time budget ran out before every candidate was looked at: the findings are those of the `checked`
   * sessions only; scan again for the rest.
   */
  scanLimited: boolean;
  /** How long the scan ran. */
  elapsedMs: number;
}

export interface DrainingScanOptions {
  /**
   * How long the scan may run before it answers with what it has (`scanLimited`). A session lock the broker is slow
   * to grant (a loaded box, a lost connection the client retries on for minutes) must not hold the answer.
   */
  budgetMs?: number;
  /** Sessions inspected at once: each is a few broker round trips, mostly waiting, so a few overlap well. */
  concurrency?: number;
}

export const DRAINING_SCAN_BUDGET_MS = 20_000;
export const DRAINING_SCAN_CONCURRENCY = 4;

const codeOf = (err: unknown) => (err as { code?: unknown }).code;

async function acceptOrBusy(
  client: ServiceBusClient,
  topic: string,
  subscription: string,
  sessionId: string,
  signal?: AbortSignal,
): Promise<ServiceBusSessionReceiver | 'busy'> {
  try {
    return await client.acceptSession(topic, subscription, sessionId, { maxAutoLockRenewalDurationInMs: 0, abortSignal: signal });
  } catch (err) {
    if (codeOf(err) === 'SessionCannotBeLocked') return 'busy';
    throw err;
  }
}

const sequenceOf = (m: ServiceBusReceivedMessage, prop: string): number | undefined => {
  const v = Number(m.applicationProperties?.[prop]);
  return Number.isInteger(v) && v >= 0 ? v : undefined;
};

/** What is still parked for the session on the Deferred subscription, or 'busy' while a replay pass holds it. */
async function parkedSequences(client: ServiceBusClient, endpointId: string, sessionId: string, signal?: AbortSignal): Promise<number[] | 'busy'> {
  const parked = await acceptOrBusy(client, endpointId, Subscription.Deferred, sessionId, signal);
  if (parked === 'busy') return 'busy';
  try {
    const peeked = await parked.peekMessages(PEEK, { fromSequenceNumber: FROM_START, abortSignal: signal });
    return peeked.map((m) => sequenceOf(m, Prop.DeferralSequence)).filter((s): s is number => s !== undefined).sort((a, b) => a - b);
  } finally {
    // Bounded here and below (server/requestClose.ts): a session link's close met by a dropped connection never ends.
    await closeForRequest('a parked session receiver', parked, { endpointId, sessionId });
  }
}

/** Inspects one session under its main-subscription lock; the finding when it drains with nothing to wait for. */
async function inspect(
  client: ServiceBusClient,
  main: ServiceBusSessionReceiver,
  endpointId: string,
  sessionId: string,
  signal?: AbortSignal,
): Promise<{ state: SessionState; finding: DrainingSession | undefined } | 'busy'> {
  const state = decodeSessionState(await main.getSessionState({ abortSignal: signal }));
  if (!isDraining(state)) return { state, finding: undefined };
  const cursor = state.NextReplaySequence;
  // A replayed copy of the awaited message may be on its way to the endpoint: then the drain is moving.
  const inFlight = (await main.peekMessages(PEEK, { fromSequenceNumber: FROM_START, abortSignal: signal })).some((m) => sequenceOf(m, Prop.ReplaySequence) === cursor);
  if (inFlight) return { state, finding: undefined };
  const parked = await parkedSequences(client, endpointId, sessionId, signal);
  if (parked === 'busy') return 'busy';
  if (parked.includes(cursor)) return { state, finding: undefined };
  const next = parked.find((s) => s > cursor);
  return {
    state,
    finding: {
      endpointId,
      sessionId,
      nextReplaySequence: cursor,
      nextDeferralSequence: state.NextDeferralSequence,
      parkedSequences: parked,
      why: `draining: the replay waits for parked message #${cursor}, which is no longer on the Deferred subscription (dead-lettered, expired or lost), so every new message of the session parks behind it forever`,
      does:
        next !== undefined
          ? `move the replay past the gap to #${next} and ask the deferred processor to replay the ${parked.filter((s) => s >= next).length} message(s) still parked`
          : `end the drain (nothing is left parked): new messages of the session are handled again`,
    },
  };
}

/** The sessions of `endpointId` with Deferred rows: a session that parks forever keeps making them. */
async function candidateSessions(store: MessageStore, endpointId: string, signal: AbortSignal): Promise<string[]> {
  const candidates = new Set<string>();
  let token: string | undefined;
  do {
    const page = await store.listEvents({ endpointId, statuses: [ResolutionStatus.Deferred], pageSize: 200, continuationToken: token });
    for (const r of page.items) if (r.sessionId !== '') candidates.add(r.sessionId);
    token = page.continuationToken;
  } while (token && candidates.size < MAX_SESSIONS_PER_ENDPOINT && !signal.aborted);
  return [...candidates].slice(0, MAX_SESSIONS_PER_ENDPOINT);
}

/**
 * Looks into each candidate session under its lock, a few at a time, and answers when all are done or when the time
 * budget runs out, whichever comes first. At the budget, sessions still being looked at are let go: their broker
 * calls are aborted and their locks closed in the background, and they are not counted as checked.
 */
export async function findDrainingSessions(client: ServiceBusClient, store: MessageStore, endpointIds: string[], options: DrainingScanOptions = {}): Promise<DrainingScan> {
  const started = Date.now();
  const budget = new AbortController();
  // Every broker call of the scan listens on this one signal (the client adds a listener per call, and not every
  // call removes its own): many listeners here are expected, not a leak.
  setMaxListeners(0, budget.signal);
  const timer = setTimeout(() => budget.abort(new Error('the session scan ran out of time')), options.budgetMs ?? DRAINING_SCAN_BUDGET_MS);
  const candidates: Array<{ endpointId: string; sessionId: string }> = [];
  const found: Array<{ index: number; finding: DrainingSession }> = [];
  let listedAll = false;
  let busy = 0;
  let checked = 0;
  try {
    const listing = (async () => {
      for (const endpointId of endpointIds) {
        const sessions = await candidateSessions(store, endpointId, budget.signal);
        if (budget.signal.aborted) return;
        for (const sessionId of sessions) candidates.push({ endpointId, sessionId });
      }
      listedAll = true;
    })();
    // A store slow to list is cut short by the budget too; one that fails fails the scan (the caller's draining.error).
    // raceDeadline observes a failure after the budget won (and drops it), never an unhandled rejection
    // (draining.test.ts checks it). The budget's own timer stays: it aborts the signal the broker calls listen on.
    await raceDeadline(listing, { signal: budget.signal });
    let next = 0;
    const worker = async () => {
      while (!budget.signal.aborted && next < candidates.length) {
        const index = next++;
        const { endpointId, sessionId } = candidates[index]!;
        const r = await inspectSession(client, endpointId, sessionId, budget.signal);
        if (budget.signal.aborted) return;
        checked++;
        if (r === 'busy') busy++;
        else if (r) found.push({ index, finding: r });
      }
    };
    const workers = Array.from({ length: Math.max(1, options.concurrency ?? DRAINING_SCAN_CONCURRENCY) }, () =>
      // Past the budget a worker's failure is its aborted call, not the scan's: the scan answers what it has.
      worker().catch((err: unknown) => {
        if (!budget.signal.aborted) throw err;
      }),
    );
    await raceDeadline(Promise.all(workers), { signal: budget.signal });
  } finally {
    clearTimeout(timer);
    // Lets go of whatever is still under way (only past the budget): aborted calls, locks closed in the background.
    budget.abort(new Error('the session scan has answered'));
  }
  const listed = candidates.slice(0);
  return {
    sessions: found.sort((a, b) => a.index - b.index).map((f) => f.finding),
    busy,
    candidates: listed.length,
    checked,
    scanLimited: !listedAll || checked < listed.length,
    elapsedMs: Date.now() - started,
  };
}

/** One candidate under its main-session lock: its finding, undefined when it is healthy, or 'busy' when it is live. */
async function inspectSession(client: ServiceBusClient, endpointId: string, sessionId: string, signal: AbortSignal): Promise<DrainingSession | undefined | 'busy'> {
  const main = await acceptOrBusy(client, endpointId, endpointId, sessionId, signal);
  if (main === 'busy') return 'busy';
  try {
    const r = await inspect(client, main, endpointId, sessionId, signal);
    return r === 'busy' ? 'busy' : r.finding;
  } finally {
    await closeForRequest('a session receiver', main, { endpointId, sessionId });
  }
}

export interface DrainingTarget {
  endpointId: string;
  sessionId: string;
  /** The cursor the operator saw: the repair applies only if the session still waits at it. */
  nextReplaySequence: number;
}

export interface DrainingResult {
  target: DrainingTarget;
  outcome: 'repaired' | 'unchanged';
  reason?: string;
  nextReplaySequence?: number;
}

/** The replay trigger the SDK's deferred processor answers (packages/sdk/src/deferredProcessor.ts). */
function replayTrigger(endpointId: string, sessionId: string, from: number, until: number) {
  return {
    messageId: `reconcile-drain-${endpointId}-${sessionId}-${from}-${until}`.slice(0, 128),
    sessionId,
    body: Buffer.from(encodeBody({}), 'utf8'),
    contentType: 'application/json',
    applicationProperties: toWireProperties({
      [Prop.To]: Address.DeferredProcessor,
      [Prop.MessageType]: MessageType.ProcessDeferredRequest,
      [Prop.EventId]: `reconcile-drain-${sessionId}`.slice(0, 128),
      [Prop.SessionId]: sessionId,
      [Prop.ReplayUntil]: until,
    }),
  };
}

export async function repairDrainingSessions(client: ServiceBusClient, store: MessageStore, targets: DrainingTarget[], auditor: string): Promise<DrainingResult[]> {
  const results: DrainingResult[] = [];
  for (const target of targets) {
    const unchanged = (reason: string) => results.push({ target, outcome: 'unchanged', reason });
    const main = await acceptOrBusy(client, target.endpointId, target.endpointId, target.sessionId);
    if (main === 'busy') {
      unchanged('the endpoint is handling this session right now (it is live); scan again later');
      continue;
    }
    try {
      const r = await inspect(client, main, target.endpointId, target.sessionId);
      if (r === 'busy') {
        unchanged('a replay pass holds the parked messages right now; scan again later');
        continue;
      }
      if (!r.finding) {
        unchanged('the session no longer drains with a gap');
        continue;
      }
      if (r.finding.nextReplaySequence !== target.nextReplaySequence) {
        unchanged(`the session moved since the preview (now waiting for #${r.finding.nextReplaySequence})`);
        continue;
      }
      const next = r.finding.parkedSequences.find((s) => s > target.nextReplaySequence) ?? r.state.NextDeferralSequence;
      // Written under the main session's lock: the endpoint cannot read or write this state meanwhile.
      await main.setSessionState(Buffer.from(encodeSessionState({ ...r.state, NextReplaySequence: next })));
      if (next < r.state.NextDeferralSequence) {
        const sender = client.createSender(target.endpointId);
        try {
          const trigger = replayTrigger(target.endpointId, target.sessionId, next, r.state.NextDeferralSequence);
          await withSendSpan(target.endpointId, trigger, () => sender.sendMessages(trigger));
        } finally {
          await closeForRequest('the replay trigger sender', sender, { endpointId: target.endpointId });
        }
      }
      await store.recordAudit({
        eventId: RECONCILE_AUDIT_EVENT,
        endpointId: target.endpointId,
        type: AuditType.ReconcileDrainingSession,
        auditor,
        comment: `${r.finding.why}. Repair: ${r.finding.does}`.slice(0, 4096),
        data: JSON.stringify({ sessionId: target.sessionId, from: target.nextReplaySequence, to: next, nextDeferralSequence: r.state.NextDeferralSequence, parked: r.finding.parkedSequences.slice(0, 50) }).slice(0, 4096),
      });
      log.info({ endpointId: target.endpointId, sessionId: target.sessionId, from: target.nextReplaySequence, to: next }, 'draining session repaired');
      results.push({ target, outcome: 'repaired', nextReplaySequence: next });
    } catch (err) {
      unchanged(err instanceof Error ? err.message : String(err));
    } finally {
      await closeForRequest('a session receiver', main, { endpointId: target.endpointId, sessionId: target.sessionId });
    }
  }
  return results;
}
