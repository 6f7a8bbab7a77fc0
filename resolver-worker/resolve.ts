// What the Resolver does with one message, up to (not including) its settlement: the heartbeat divert, the
// history entry and the guarded status write, the audits, and the decision for store failures under the
// throttle budget. It never throws: every path ends in a Settlement the processor carries out, so a bad
// message can neither crash the worker nor block its session.
import type { ServiceBusReceivedMessage } from '@azure/service-bus';
import type { Logger } from 'pino';
import {
  Address,
  isHeartbeatEventType,
  isSubscriberNotice,
  MessageType,
  readHeartbeatPayload,
  WireText,
  type MessageType as MessageTypeT,
} from '@nimbus/sdk/contract';
import {
  AuditType,
  cosmosStatus,
  isStoreError,
  isStoreErrorNamed,
  type HeartbeatStatus,
  type HistoryWrite,
  type MessageStore,
  type StatusWriteResult,
} from '../lib/store/index.ts';
import { budgetExhausted, logicalAttempt, retryDelay, backoffMs, type BudgetOptions } from './budget.ts';
import type { ResolverMetrics } from './metrics.ts';
import type { OutcomeRecorder } from './outcomeMetrics.ts';
import { limiter } from '../lib/concurrency/limiter.ts';
import { sleep } from '../lib/concurrency/sleep.ts';
import { endpointOf, isHistoryOnly, isRequestType, project, TRUNCATED } from './project.ts';
import { deliveredPayload } from '../lib/store/deliveredPayload.ts';
import { readResolverMessage, type ResolverMessage } from './read.ts';
import { STOPPED, untilStopped } from './untilStopped.ts';
import { processContextOf, withInternalSpan } from '@nimbus/sdk';
import type { Context } from '@opentelemetry/api';

/** Dead-letter reasons the Resolver uses (stable: operators filter on them). */
export const DeadLetterReason = {
  CosmosDbThrottled: WireText.CosmosDbThrottled,
  StoreUnavailable: 'StoreUnavailable',
  UnknownMessageType: 'UnknownMessageType',
  MissingEventId: 'MissingEventId',
  MissingEndpoint: 'MissingEndpoint',
  InvalidMessage: 'InvalidMessage',
  ResolverFailure: 'ResolverFailure',
} as const;

export type CompletedResult = 'written' | 'ignored' | 'heartbeat' | 'liveness' | 'dropped' | 'recorded';

export type Settlement =
  | { kind: 'complete'; result: CompletedResult }
  | {
      kind: 'deadLetter';
      reason: string;
      description: string;
      storeReason?: 'throttled' | 'transient';
      /** A heartbeat/liveness write that already spent its tries in place (retryInPlace). */
      inPlace?: true;
    }
  /** Store throttled: schedule a same-id replacement at now + delay and complete the original. */
  | { kind: 'reschedule'; attempt: number; delayMs: number; source: 'provider' | 'backoff' }
  /** Leave the original for the broker to redeliver (abandon after the delay); spends one delivery of the budget. */
  | {
      kind: 'redeliver';
      attempt: number;
      delayMs: number;
      storeReason: 'throttled' | 'transient';
      /**
       * A heartbeat/liveness write handed to the outage circuit: it failed while the store's probe failed too, so it
       * is held, not abandoned (processor.ts); at the lock-renewal horizon it is dropped, never dead-lettered.
       */
      inPlace?: true;
      /**
       * A heartbeat/liveness write whose next wait in place would end past the session's lock horizon: abandoned at
       * once while the lock holds, neither held nor retried again (processor.ts).
       */
      atHorizon?: true;
    }
  /** Stopping: settle nothing; the message comes back with its session. */
  | { kind: 'leave' }
  /**
   * The store refused our credentials (401/403): settle nothing and stop receiving until access is back. Retrying
   * cannot help and dead-lettering would drain the whole topic into the DLQ because of one wrong key.
   */
  | { kind: 'halt'; reason: string };

export interface ResolveContext {
  store: MessageStore;
  log: Logger;
  metrics: ResolverMetrics;
  budget: BudgetOptions;
  /** Cap on one wait before a heartbeat is retried in place, or before a transient failure is abandoned. */
  inPlaceMaxDelayMs: number;
  transientMaxDelayMs: number;
  signal: AbortSignal;
  version: string;
  now: () => Date;
  /** The stored time series (issue 16); absent when the host turned them off. */
  outcomes?: OutcomeRecorder;
  /**
   * Asked after a transient failure of a write retried in place (heartbeats): true when the store does not answer
   * its probe either (the processor's outage circuit, outage.ts). The write then stops retrying here and is held by
   * the circuit, bounded by the session's lock horizon, instead of spending its whole budget against a store that
   * is down. Absent: retried in place until the budget ends, as before.
   */
  storeDown?: () => Promise<boolean>;
  /**
   * Until when (epoch ms) the session's lock allows work on the message (the processor's lock horizon, a margin
   * before the lock can lapse). A write retried in place (heartbeats) waits no further than that: past it, a
   * settlement would meet a lost lock. Absent: no bound.
   */
  lockHorizon?: () => number;
}

/** Service Bus caps a dead-letter description; long exception texts are cut with a marker. */
export function truncateDescription(text: string, max = 4096): string {
  return text.length > max ? `${text.slice(0, max - TRUNCATED.length)}${TRUNCATED}` : text;
}

export type StoreFailure =
  | { kind: 'throttled'; retryAfterMs: number | undefined }
  | { kind: 'transient' }
  /** `detail`: what was denied, when the store says (a container it may not create or read). */
  | { kind: 'denied'; status: number; detail?: string }
  | { kind: 'refused' }
  /** The store is closing (a stop): nothing was written that a redelivery would not write again. */
  | { kind: 'closed' }
  | { kind: 'bug' };

/**
 * Classifies a failure of a store call. Authentication and permission answers (401/403) are neither transient nor
 * the message's fault: a wrong key fails every message alike, so they stop the worker ('halt') instead of spending
 * budgets and ending as dead letters. So does a container opened on first use (leases, metrics, failure groups) that
 * Cosmos refused to create or to let this identity read (lib/store/containers.ts): the store turns that 403 into a
 * typed error naming the container, which was classified 'refused' and dead-lettered every message as
 * InvalidMessage until someone fixed the deployment.
 */
export function classifyStoreFailure(err: unknown): StoreFailure {
  // By mark and name, not `instanceof`: the error may come from another copy of lib/store (isStoreError).
  if (isStoreErrorNamed(err, 'StoreClosedError')) return { kind: 'closed' };
  if (isStoreErrorNamed(err, 'StoreThrottledError')) return { kind: 'throttled', retryAfterMs: err.retryAfterMs };
  if (isStoreErrorNamed(err, 'ContainerMissingError') || isStoreErrorNamed(err, 'ContainerAccessDeniedError'))
    return { kind: 'denied', status: 403, detail: err.message };
  if (isStoreError(err)) return err.transient ? { kind: 'transient' } : { kind: 'refused' };
  const code = cosmosStatus(err);
  if (code === 401 || code === 403) return { kind: 'denied', status: code };
  return { kind: 'bug' };
}

/** The halt for a denied store call: what the log and /api/ready say (the store's own words when it gave any). */
function halt({ status, detail }: Extract<StoreFailure, { kind: 'denied' }>): Extract<Settlement, { kind: 'halt' }> {
  return {
    kind: 'halt',
    reason:
      detail !== undefined
        ? `the store denied the Resolver a container: ${detail}`
        : status === 401
        ? 'the store refused the Resolver\'s credentials (401): check NIMBUS_COSMOS_KEY'
        : 'the store denied the Resolver permission (403): check the key or the identity\'s data-plane role on the database',
  };
}

function errorText(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

function deadLetter(
  reason: string,
  description: string,
  storeReason?: 'throttled' | 'transient',
): Extract<Settlement, { kind: 'deadLetter' }> {
  return { kind: 'deadLetter', reason, description: truncateDescription(description), ...(storeReason ? { storeReason } : {}) };
}

/** A message that is an ordinary outcome for one status row: what recordEvent (or a row group) records. */
interface Recordable {
  m: ResolverMessage & { messageType: MessageTypeT; eventId: string };
  endpointId: string;
}

/**
 * What a read message is: heartbeat traffic, a message that cannot be recorded (with the dead letter that says
 * why), or an outcome for one status row.
 */
function classifyMessage(
  m: ResolverMessage,
): { kind: 'heartbeat' } | { kind: 'unrecordable'; settlement: Settlement } | { kind: 'outcome'; recordable: Recordable } {
  if (isHeartbeatEventType(m.eventTypeId)) return { kind: 'heartbeat' };
  if (m.messageType === undefined) {
    const shown = m.rawMessageType === undefined ? 'missing' : `'${m.rawMessageType.slice(0, 60)}'`;
    return { kind: 'unrecordable', settlement: deadLetter(DeadLetterReason.UnknownMessageType, `MessageType ${shown} is not a NimBus message type`) };
  }
  if (m.eventId === undefined) {
    return { kind: 'unrecordable', settlement: deadLetter(DeadLetterReason.MissingEventId, `${m.messageType} ${m.messageId} has no EventId`) };
  }
  const typed = { ...m, messageType: m.messageType, eventId: m.eventId };
  const endpointId = endpointOf(typed);
  if (endpointId === undefined) {
    const which = isRequestType(m.messageType) ? 'To' : 'From';
    return {
      kind: 'unrecordable',
      settlement: deadLetter(DeadLetterReason.MissingEndpoint, `${m.messageType} ${m.messageId} has no ${which}: its endpoint is unknown`),
    };
  }
  return { kind: 'outcome', recordable: { m: typed, endpointId } };
}

export function resolveMessage(raw: ServiceBusReceivedMessage, ctx: ResolveContext): Promise<Settlement> {
  const read = readSafely(raw, ctx);
  return 'settlement' in read ? Promise.resolve(read.settlement) : resolveRead(read.m, ctx);
}

/**
 * Reads a message, or when the read itself throws (a bug: reading is lenient and names bad values as problems), the
 * dead letter that says so, for this message alone. A throw here used to escape resolveMessage and the
 * BatchResolution constructor, outside every try: the session's whole receive was released unsettled, again on each
 * delivery, until the broker dead-lettered every message of it (MaxDeliveryCountExceeded), the good ones included.
 */
function readSafely(raw: ServiceBusReceivedMessage, ctx: ResolveContext): { m: ResolverMessage } | { settlement: Settlement } {
  try {
    return { m: readResolverMessage(raw, ctx.now, ctx.budget) };
  } catch (err) {
    const where = { messageId: String(raw.messageId), sessionId: raw.sessionId };
    ctx.log.error({ ...where, err: errorText(err) }, 'Resolver: the message could not be read; dead-lettering');
    return { settlement: deadLetter(DeadLetterReason.ResolverFailure, `the message could not be read: ${errorText(err)}`) };
  }
}

/** resolveMessage for a message already read. */
async function resolveRead(m: ResolverMessage, ctx: ResolveContext, parent?: Context): Promise<Settlement> {
  const attempt = logicalAttempt(m.throttleRetryCount, m.wireDeliveryCount);
  try {
    const c = classifyMessage(m);
    if (c.kind === 'heartbeat') return await resolveHeartbeat(m, attempt, ctx);
    if (c.kind === 'unrecordable') return c.settlement;
    const { m: rm, endpointId } = c.recordable;
    return await withInternalSpan(`record ${endpointId}`, writeSpanAttributes(rm, endpointId), () => recordEvent(rm, endpointId, attempt, ctx), parent);
  } catch (err) {
    // Only a bug gets here (store failures are classified inside); dead-letter with the reason, never crash.
    ctx.log.error({ messageId: m.messageId, sessionId: m.sessionId, err: errorText(err) }, 'Resolver: unexpected failure');
    return deadLetter(DeadLetterReason.ResolverFailure, errorText(err));
  }
}

/** Rows of one batch whose store work runs at the same time. */
const ROWS_IN_FLIGHT = 16;

/**
 * The messages of one receive, resolved in order, with the store work of every status row started together as the
 * batch starts: rows do not depend on each other, so their round trips overlap instead of adding up (a receive of
 * 50 messages over 25 rows costs about the round trips of one row, not 25 times them). A row with two or more
 * messages in the batch (a backlog delivers an event's request copy and its response in one receive) is recorded
 * with store.recordOutcomes (one history batch and one row write instead of two requests per message); a row with
 * one message is resolved whole, exactly as alone (recordEvent), just earlier. Each message then takes its result
 * in its turn: every message is still decided by the guard in its own order against its own row, with its own
 * metrics, log and audits. If a group's write fails, its messages are resolved alone in their turn, so store
 * failures meet the throttle budget exactly as before; a single message's failure is its settlement, as alone.
 * Heartbeats, control traffic without an outcome and unrecordable messages are resolved alone, in order. A message
 * with no outcome of its own that touches a row (a subscriber notice puts a refused command's row back) is a
 * barrier for that row: the row's later messages in the batch wait for their turn, so they never overtake it.
 */
export class BatchResolution {
  readonly #ctx: ResolveContext;
  /** Each message as read (once). */
  readonly #read = new Map<ServiceBusReceivedMessage, ResolverMessage>();
  /** Messages whose read threw (readSafely): their dead letter, handed out in their turn. */
  readonly #unreadable = new Map<ServiceBusReceivedMessage, Settlement>();
  /** Row key and reading of each message that can join a group (the others are resolved alone). */
  readonly #rowOf = new Map<ServiceBusReceivedMessage, { key: string; recordable: Recordable }>();
  readonly #groups = new Map<string, ServiceBusReceivedMessage[]>();
  /** Each row's store work, started with the batch: its messages' settlements; undefined: a group's write failed. */
  readonly #writes = new Map<string, Promise<Settlement[] | undefined>>();
  /** Messages whose settlement was handed out (by resolve or takeRecordedAhead). */
  readonly #taken = new Set<ServiceBusReceivedMessage>();
  /** Rows whose store work has ended (takeRecordedAhead on stop takes only these). */
  readonly #finished = new Set<string>();

  constructor(messages: ServiceBusReceivedMessage[], ctx: ResolveContext) {
    this.#ctx = ctx;
    // Rows that a history-only message earlier in the batch touches: their later messages are resolved in turn.
    const barred = new Set<string>();
    for (const raw of messages) {
      const read = readSafely(raw, ctx);
      if ('settlement' in read) {
        this.#unreadable.set(raw, read.settlement);
        continue;
      }
      const m = read.m;
      this.#read.set(raw, m);
      const c = classifyMessage(m);
      if (c.kind !== 'outcome') continue;
      const recordable = c.recordable;
      const key = JSON.stringify([recordable.endpointId, recordable.m.eventId, recordable.m.sessionId ?? '']);
      // History-only messages (ProcessDeferredRequest, refused commands, subscriber notices) have no outcome of
      // their own: always resolved alone, in turn.
      if (isHistoryOnly(recordable.m)) {
        barred.add(key);
        continue;
      }
      if (barred.has(key)) continue;
      this.#rowOf.set(raw, { key, recordable });
      const group = this.#groups.get(key);
      if (group) group.push(raw);
      else this.#groups.set(key, [raw]);
    }
    // The rows' store work starts now, side by side, at most ROWS_IN_FLIGHT at a time (a large receive must not
    // turn into a burst of requests that a provisioned Cosmos account answers with 429s). It never rejects: a
    // group's failure resolves to undefined, a single message's to its settlement.
    // A row whose turn comes after a stop is not started (undefined: its messages are left and come back): the store
    // may be closing by then, and a write that starts after the last counter flush has a stamp no flush covers.
    const limit = limiter(ROWS_IN_FLIGHT);
    for (const [key, group] of this.#groups) {
      const write = limit(() =>
        ctx.signal.aborted ? Promise.resolve(undefined) : group.length > 1 ? this.#recordGroup(group) : this.#recordOne(group[0]!),
      );
      this.#writes.set(key, write);
      void write.then(() => this.#finished.add(key));
    }
  }

  /** Resolves `raw`, in the batch's order. */
  async resolve(raw: ServiceBusReceivedMessage): Promise<Settlement> {
    this.#taken.add(raw);
    const unreadable = this.#unreadable.get(raw);
    if (unreadable !== undefined) return unreadable;
    const key = this.#rowOf.get(raw)?.key;
    const write = key === undefined ? undefined : this.#writes.get(key);
    const alone = () => resolveRead(this.#read.get(raw)!, this.#ctx);
    if (write === undefined) return alone();
    const settlements = await write;
    // Not started (a stop) or the group's write failed: after a stop nothing more is written; it comes back.
    if (settlements === undefined) return this.#ctx.signal.aborted ? { kind: 'leave' } : alone();
    return settlements[this.#groups.get(key!)!.indexOf(raw)]!;
  }

  /**
   * Messages recorded by their row's write that the processor has not reached: when it stops early (a message
   * left for redelivery releases the session), it completes these too, since their outcomes are stored. Waits
   * for the writes still running until `stop` aborts, and from then on takes only writes that have ended: a store
   * that does not answer would keep stop() waiting for up to ROWS_IN_FLIGHT writes and their time-outs; a message
   * not taken simply comes back.
   */
  async takeRecordedAhead(stop: AbortSignal): Promise<Array<[ServiceBusReceivedMessage, Settlement]>> {
    const ahead: Array<[ServiceBusReceivedMessage, Settlement]> = [];
    for (const [key, write] of this.#writes) {
      const settlements = this.#finished.has(key) ? await write : await untilStopped(write, stop);
      if (settlements === undefined || settlements === STOPPED) continue;
      this.#groups.get(key)!.forEach((raw, k) => {
        // Only outcomes that are stored: a single message whose write failed is left, and comes back.
        if (this.#taken.has(raw) || settlements[k]!.kind !== 'complete') return;
        this.#taken.add(raw);
        ahead.push([raw, settlements[k]!]);
      });
    }
    return ahead;
  }

  /** A row with one message in the batch: resolved as alone, ahead of its turn; its write span continues its trace. */
  async #recordOne(raw: ServiceBusReceivedMessage): Promise<Settlement[]> {
    const m = this.#read.get(raw)!;
    return [await resolveRead(m, this.#ctx, processContextOf({ applicationProperties: m.properties }))];
  }

  /** All members recorded together, or undefined when the write failed (nothing settled yet). */
  async #recordGroup(group: ServiceBusReceivedMessage[]): Promise<Settlement[] | undefined> {
    const members = group.map((raw) => {
      const { recordable } = this.#rowOf.get(raw)!;
      return { ...recordable, ...project(recordable.m, recordable.endpointId) };
    });
    const started = performance.now();
    try {
      // One write for several messages: its span continues the first one's trace.
      const first = members[0]!;
      const results = await withInternalSpan(
        `record ${first.endpointId}`,
        { ...writeSpanAttributes(first.m, first.endpointId), 'nimbus.resolver.messages': members.length },
        () =>
          this.#ctx.store.recordOutcomes(
            members.map(({ m, endpointId, history, status }) => ({
              history,
              status,
              mayBeLate: mayBeLate(m),
              originalTimeUnknown: m.originalTimeUnknown,
              onHistory: countOnHistory(m, endpointId, this.#ctx),
            })),
          ),
        processContextOf({ applicationProperties: first.m.properties }),
      );
      const elapsed = performance.now() - started;
      const settlements: Settlement[] = [];
      for (const [k, member] of members.entries()) {
        settlements.push(await afterStatus(member.m, member.endpointId, member.history, results[k]!, elapsed, this.#ctx));
      }
      return settlements;
    } catch (err) {
      this.#ctx.log.debug({ sessionId: members[0]!.m.sessionId, messages: members.length, err: errorText(err) }, 'Resolver: row group not recorded; resolving its messages one by one');
      return undefined;
    }
  }
}

/**
 * Whether the message may arrive after messages enqueued after it: the Resolver's own throttle replacement (the
 * session moved on while it waited; its original's history create may have been throttled too) or a broker
 * redelivery. The store then asks the stale-write guard's history questions even when this call creates the
 * message's history entry (recordOutcome's `mayBeLate`); a first delivery keeps the shortcut and costs no query.
 */
function mayBeLate(m: ResolverMessage): boolean {
  return m.throttleRetryCount > 0 || m.wireDeliveryCount > 0;
}

/**
 * The store's onHistory for a message's record: the outcomes counted by the call that creates their history entry
 * (outcomeMetrics.ts countedByHistory) are counted when it does, also when the row write then fails or is refused.
 */
function countOnHistory(m: ResolverMessage & { messageType: MessageTypeT }, endpointId: string, ctx: ResolveContext) {
  return (history: { recorded: boolean }) => {
    if (history.recorded) ctx.outcomes?.historyCreated(m, endpointId);
  };
}

/** What the Resolver's store-write span says about the message it records. */
function writeSpanAttributes(m: ResolverMessage, endpointId: string): Record<string, string> {
  return {
    'db.system.name': 'azure.cosmosdb',
    'nimbus.endpoint': endpointId,
    'nimbus.event_id': m.eventId ?? '',
    'nimbus.message_type': m.rawMessageType ?? '',
    'messaging.message.id': m.messageId,
  };
}

async function recordEvent(
  m: ResolverMessage & { messageType: MessageTypeT; eventId: string },
  endpointId: string,
  attempt: number,
  ctx: ResolveContext,
): Promise<Settlement> {
  const { history, status } = project(m, endpointId);
  const tags = { 'nimbus.endpoint': endpointId, 'nimbus.message_type': m.messageType };
  const started = performance.now();
  if (isHistoryOnly(m)) {
    // No outcome of its own: the deferred processor's trigger, a Manager-only command that did not come from the
    // Manager (the subscriber refuses it, so it must not reopen the row), a subscriber notice (refused command,
    // replay gap), recorded in history and, for a notice, as an audit.
    try {
      await ctx.store.recordHistory(history);
      if (isSubscriberNotice(m)) await recordNotice(m, endpointId, history, ctx);
    } catch (err) {
      return onStoreFailure(err, m, attempt, ctx, tags);
    }
    return { kind: 'complete', result: 'recorded' };
  }
  let result: RecordedOutcome;
  try {
    result = await ctx.store.recordOutcome({
      history,
      status,
      mayBeLate: mayBeLate(m),
      originalTimeUnknown: m.originalTimeUnknown,
      onHistory: countOnHistory(m, endpointId, ctx),
    });
  } catch (err) {
    const failure = classifyStoreFailure(err);
    ctx.metrics.outcomeWritten({ ...tags, 'error.type': failure.kind });
    ctx.metrics.writeDuration(performance.now() - started, { ...tags, 'error.type': failure.kind });
    return onStoreFailure(err, m, attempt, ctx, tags);
  }
  return afterStatus(m, endpointId, history, result, performance.now() - started, ctx);
}

/** A message's history entry and status write, as recordOutcome(s) report them. */
type RecordedOutcome = { history: { recorded: boolean }; status: StatusWriteResult };

/** After a message's status write: metrics, the "Ignored stale" log and comment audit, the retry audit. */
async function afterStatus(
  m: ResolverMessage & { messageType: MessageTypeT; eventId: string },
  endpointId: string,
  history: HistoryWrite,
  recorded: RecordedOutcome,
  elapsed: number,
  ctx: ResolveContext,
): Promise<Settlement> {
  const result = recorded.status;
  const tags = { 'nimbus.endpoint': endpointId, 'nimbus.message_type': m.messageType };
  if (result.outcome === 'ignored') {
    const current = result.current;
    ctx.metrics.outcomeIgnored({ ...tags, 'nimbus.reason': result.reason });
    ctx.metrics.writeDuration(elapsed, { ...tags, 'nimbus.outcome.applied': false });
    ctx.log.warn(
      {
        endpointId,
        eventId: m.eventId,
        sessionId: m.sessionId,
        messageId: m.messageId,
        messageType: m.messageType,
        reason: result.reason,
        rowStatus: current?.status,
        rowMessageId: current?.lastMessageId,
        enqueuedTimeUtc: m.enqueuedAt,
        throttleRetryCount: m.throttleRetryCount,
        deliveryCount: m.wireDeliveryCount + 1,
      },
      `Resolver: Ignored stale ${m.messageType} ${m.messageId} for ${endpointId}/${m.eventId} (${result.reason})`,
    );
    await audit(ctx, endpointId, {
      // Keyed on the stale message: a redelivered refusal keeps one comment.
      id: `resolver-stale~${m.messageId}`,
      eventId: m.eventId,
      endpointId,
      eventTypeId: history.eventTypeId ?? null,
      type: AuditType.Comment,
      auditor: 'Resolver',
      comment:
        result.reason === 'retry-after-settlement'
          ? `Ignored late RetryRequest ${m.messageId}: the event is already ${current?.status ?? 'settled'}; the subscriber completes it without running the handler.`
          : `Ignored stale ${m.messageType} ${m.messageId}: the row already holds a later outcome (${result.reason}).`,
      data: JSON.stringify({
        messageId: m.messageId,
        messageType: m.messageType,
        reason: result.reason,
        rowStatus: current?.status ?? null,
        rowMessageId: current?.lastMessageId ?? null,
        enqueuedTimeUtc: m.enqueuedAt,
      }),
    });
  } else {
    ctx.metrics.outcomeWritten({ ...tags, 'nimbus.outcome': result.row.status.toLowerCase() });
    ctx.metrics.writeDuration(elapsed, { ...tags, 'nimbus.outcome.applied': true });
    ctx.outcomes?.applied(m, endpointId, result);
    // The row is written but its counter delta is not exact (docs/store.md): a terminal write over a row that did
    // not parse, whose endpoint the store could not recount after it (its counters document unreadable too, or the
    // store failing), or a landed write in doubt that could not be counted. Nothing else reads `counters`, so without
    // this line the drift went unseen until someone recounted. Ids only.
    if (result.counters === 'failed')
      ctx.log.warn(
        { endpointId, eventId: m.eventId, sessionId: m.sessionId, messageId: m.messageId, messageType: m.messageType, previousStatus: result.previousStatus },
        `Resolver: ${endpointId}'s counters may be off after ${m.messageType} ${m.messageId} (the row replaced did not parse and the endpoint could not be recounted, or a write's counter delta was lost): run npm run recount -- ${endpointId}`,
      );
  }
  // A late retry refused by the guard ran nothing: its Comment audit above says so, a Retry audit would not.
  if (m.messageType === MessageType.RetryRequest && !(result.outcome === 'ignored' && result.reason === 'retry-after-settlement')) {
    // After the status write, and keyed on the message: a rescheduled copy does not repeat it.
    await audit(ctx, endpointId, {
      id: `resolver-retry~${m.messageId}`,
      eventId: m.eventId,
      endpointId,
      eventTypeId: history.eventTypeId ?? null,
      type: AuditType.Retry,
      auditor: 'Manager',
      comment: `Retry ${m.retryCount ?? '?'} requested by the retry policy`,
    });
  }
  return { kind: 'complete', result: result.outcome === 'ignored' ? 'ignored' : 'written' };
}

/**
 * A subscriber notice: an audit on the event, and for a refused command, the row put back as it was. The row
 * shows the refused command itself when the Manager claimed it before sending (or the Resolver recorded the
 * command's copy): then the latest outcome in the event's history for that session is written again, conditional
 * on the row still showing the refused command. It is written under the notice's MessageId, because the guard
 * refuses a message the row already answers (the claim names the outcome it answered as its parent). Store
 * failures throw (the notice is redelivered; history and audit are idempotent); the audit is best effort.
 */
async function recordNotice(
  m: ResolverMessage & { messageType: MessageTypeT; eventId: string },
  endpointId: string,
  history: HistoryWrite,
  ctx: ResolveContext,
): Promise<void> {
  const refused = m.deadLetterReason === WireText.CommandRefused;
  let restored: string | undefined;
  if (refused && m.parentMessageId) restored = await restoreAfterRefusal(m, endpointId, m.parentMessageId, ctx);
  const description = m.deadLetterErrorDescription ?? '';
  ctx.log.warn(
    { endpointId, eventId: m.eventId, sessionId: m.sessionId, messageId: m.messageId, refusedMessageId: m.parentMessageId, restored },
    refused ? `Resolver: command refused by ${endpointId}: ${description}` : `Resolver: replay gap skipped by ${endpointId}: ${description}`,
  );
  await audit(ctx, endpointId, {
    id: `resolver-notice~${m.messageId}`,
    eventId: m.eventId,
    endpointId,
    eventTypeId: history.eventTypeId ?? null,
    type: refused ? AuditType.CommandRefused : AuditType.ReplayGap,
    auditor: endpointId,
    comment: refused
      ? `Command ${m.parentMessageId ?? ''} refused by ${endpointId}: ${description}${restored ? `; the row was put back to ${restored}` : ''}`.slice(0, 4096)
      : `Replay gap in session ${m.sessionId ?? ''} skipped by ${endpointId}: ${description}`.slice(0, 4096),
    data: JSON.stringify({ noticeMessageId: m.messageId, refusedMessageId: refused ? (m.parentMessageId ?? null) : null, sessionId: m.sessionId ?? null, restored: restored ?? null }),
  });
}

/** Puts a row that shows the refused command back to the latest outcome before it; returns that status, if written. */
async function restoreAfterRefusal(
  m: ResolverMessage & { messageType: MessageTypeT; eventId: string },
  endpointId: string,
  refusedId: string,
  ctx: ResolveContext,
): Promise<string | undefined> {
  const sessionId = m.sessionId ?? '';
  const row = await ctx.store.getStatusRow(endpointId, m.eventId, sessionId);
  if (row === null || row.lastMessageId !== refusedId) return undefined;
  // Newest first from the store: a list read of the history runs oldest first and stops at a cap, so on a long
  // event (many resubmits and retries) it lacks the newest outcome and would put the row back to an older one.
  // Three: the refused command and the notice are left out by the query already (a request not dead-lettered, a
  // notice); the ids are checked again here, and the newest outcome that is neither is the one.
  const { items } = await ctx.store.listSessionResponses(m.eventId, endpointId, sessionId, 3);
  const previous = items.find((h) => h.messageId !== refusedId && h.messageId !== m.messageId);
  if (previous === undefined) return undefined;
  // The row's payload came from the refused command (an edited resubmission: its claim, or its record): put back the
  // body last delivered, with the request that carried it, or the edit stays on the row as if it had been sent.
  // Before, only the outcome's fields were written (restoredPayload.test.ts).
  const delivered = row.requestMessageId === refusedId ? await deliveredPayload(ctx.store, previous) : undefined;
  const result = await ctx.store.writeStatus(
    {
      endpointId,
      eventId: m.eventId,
      sessionId,
      messageId: m.messageId,
      messageType: previous.messageType,
      eventTypeId: previous.eventTypeId,
      parentMessageId: previous.parentMessageId,
      originatingMessageId: previous.originatingMessageId,
      correlationId: previous.correlationId,
      from: previous.from,
      to: previous.to,
      enqueuedAt: previous.enqueuedAt,
      errorText: previous.errorText,
      errorType: previous.errorType,
      deadLetterReason: previous.deadLetterReason,
      deadLetterErrorDescription: previous.deadLetterErrorDescription,
      retryCount: previous.retryCount,
      handoffReason: previous.handoffReason,
      externalJobId: previous.externalJobId,
      expectedBy: previous.expectedBy,
      ...(delivered ? { payload: delivered.payload, requestMessageId: delivered.requestMessageId } : {}),
    },
    { lastMessageId: refusedId },
  );
  if (result.outcome === 'ignored') return undefined;
  return result.row.subStatus ? `${result.row.status} (${result.row.subStatus})` : result.row.status;
}

/** Best effort: an audit that cannot be written is logged, never fails the message (its outcome is recorded). */
async function audit(ctx: ResolveContext, endpointId: string, entry: Parameters<MessageStore['recordAudit']>[0]): Promise<void> {
  const tags = { 'nimbus.endpoint': endpointId, audit_type: entry.type.toLowerCase() };
  try {
    await ctx.store.recordAudit(entry);
    ctx.metrics.auditWritten(tags);
  } catch (err) {
    ctx.metrics.auditWritten({ ...tags, 'error.type': classifyStoreFailure(err).kind });
    ctx.log.warn({ eventId: entry.eventId, auditType: entry.type, err: errorText(err) }, 'Resolver: audit not written');
  }
}

function onStoreFailure(
  err: unknown,
  m: ResolverMessage,
  attempt: number,
  ctx: ResolveContext,
  tags: Record<string, string>,
): Settlement {
  const failure = classifyStoreFailure(err);
  const where = { ...tags, messageId: m.messageId, sessionId: m.sessionId, eventId: m.eventId, attempt };
  switch (failure.kind) {
    case 'throttled': {
      if (budgetExhausted(attempt, ctx.budget)) {
        ctx.log.error({ ...where, err: errorText(err) }, 'Resolver: store throttle budget exhausted; dead-lettering');
        return deadLetter(DeadLetterReason.CosmosDbThrottled, `${errorText(err)} (attempt ${attempt} of ${ctx.budget.maxAttempts})`, 'throttled');
      }
      const { delayMs, source } = retryDelay(attempt, failure.retryAfterMs, ctx.budget);
      ctx.log.warn({ ...where, delayMs, source }, 'Resolver: store throttled; rescheduling a replacement');
      return { kind: 'reschedule', attempt, delayMs, source };
    }
    case 'transient': {
      if (budgetExhausted(attempt, ctx.budget)) {
        ctx.log.error({ ...where, err: errorText(err) }, 'Resolver: store unavailable on the last attempt; dead-lettering');
        return deadLetter(DeadLetterReason.StoreUnavailable, `${errorText(err)} (attempt ${attempt} of ${ctx.budget.maxAttempts})`, 'transient');
      }
      const delayMs = Math.min(backoffMs(attempt, ctx.budget), ctx.transientMaxDelayMs);
      // The processor probes the store before carrying this out: held through an outage, redelivered only when the
      // store answers and the write still fails (outage.ts). The log says so rather than promise a redelivery.
      ctx.log.warn({ ...where, delayMs, err: errorText(err) }, 'Resolver: store write failed (transient); probing the store: held if it is down, else left for redelivery');
      return { kind: 'redeliver', attempt, delayMs, storeReason: 'transient' };
    }
    case 'closed':
      // Its counter delta could not be flushed any more (the store refused the write): left unsettled, it comes back
      // to a live instance, and no budget is spent on it.
      ctx.log.info({ ...where }, 'Resolver: the store is closing; the message is left for redelivery');
      return { kind: 'leave' };
    case 'denied':
      ctx.log.error({ ...where, status: failure.status }, 'Resolver: store access denied; the message is left for later');
      return halt(failure);
    case 'refused':
      // The store refuses this input (an id it cannot key, a type it cannot classify): retrying cannot help.
      ctx.log.warn({ ...where, err: errorText(err) }, 'Resolver: message refused by the store; dead-lettering');
      return deadLetter(DeadLetterReason.InvalidMessage, errorText(err));
    case 'bug':
      ctx.log.error({ ...where, err: errorText(err) }, 'Resolver: unexpected store failure; dead-lettering');
      return deadLetter(DeadLetterReason.ResolverFailure, errorText(err));
  }
}

// ---------------------------------------------------------------------------------------------- heartbeats

const HEARTBEAT_STATUS: Partial<Record<MessageTypeT, HeartbeatStatus>> = {
  [MessageType.ResolutionResponse]: 'On',
  [MessageType.UnsupportedResponse]: 'Unsupported',
  [MessageType.ErrorResponse]: 'Off',
  [MessageType.DeferralResponse]: 'Off',
};

/**
 * Heartbeat traffic never becomes a tracking row or history. The probe copy the fan-out also forwards is
 * dropped; a reply updates the endpoint's heartbeat record; the Resolver's own probe records its liveness.
 */
async function resolveHeartbeat(m: ResolverMessage, attempt: number, ctx: ResolveContext): Promise<Settlement> {
  const isRequest = m.messageType === undefined || isRequestType(m.messageType);
  const payload = readHeartbeatPayload(m.content.EventContent?.EventJson);
  if (isRequest) {
    if (m.to?.toLowerCase() !== Address.Resolver.toLowerCase()) return { kind: 'complete', result: 'dropped' };
    return retryInPlace(m, attempt, ctx, 'liveness', async () => {
      const now = ctx.now();
      const sentAt = payload.ForwardSendTime ?? m.enqueuedAt;
      // A stored record that no longer parses is replaced rather than blocking liveness forever.
      const previous = await ctx.store.getServiceHealth(Address.Resolver).catch((err: unknown) => {
        if (isStoreErrorNamed(err, 'CorruptDocumentError')) return null;
        throw err;
      });
      await ctx.store.setServiceHealth({
        serviceId: Address.Resolver,
        status: 'On',
        version: ctx.version,
        lastSeenAt: now.toISOString(),
        // Keep when the scheduler sent the probe; clearing the message id clears its "in flight" marker.
        lastProbeSentAt: previous?.lastProbeSentAt ?? null,
        lastProbeMessageId: null,
        roundTripMs: Math.max(0, now.getTime() - Date.parse(sentAt)) || 0,
      });
    });
  }
  // The payload's Endpoint wins: a reply built without the forwarder's stamp still names its endpoint.
  const endpointId = payload.Endpoint ?? m.from;
  if (endpointId == null || endpointId === '') {
    ctx.log.warn({ messageId: m.messageId }, 'Resolver: heartbeat reply without an endpoint; dropped');
    return { kind: 'complete', result: 'dropped' };
  }
  return retryInPlace(m, attempt, ctx, 'heartbeat', async () => {
    const now = ctx.now().toISOString();
    await ctx.store.recordHeartbeat({
      endpointId,
      // The sender's Pending record is keyed by the probe's correlation id, which the reply carries.
      probeId: m.correlationId ?? m.parentMessageId ?? m.messageId,
      status: HEARTBEAT_STATUS[m.messageType!] ?? 'Unknown',
      // Without the probe's own stamp, null keeps the send time the scheduler stored (the reply's enqueue time
      // would be when the endpoint answered, not when the probe left).
      sentAt: payload.ForwardSendTime ? new Date(payload.ForwardSendTime).toISOString() : null,
      receivedAt: payload.ForwardReceivedTime ? new Date(payload.ForwardReceivedTime).toISOString() : now,
      answeredAt: now,
      sdkVersion: payload.SdkVersion ? payload.SdkVersion.slice(0, 64) : null,
    });
  });
}

/**
 * Heartbeats are retried in place, never rescheduled: a copy arriving minutes later could overwrite a newer
 * heartbeat. Each try spends one attempt of the same budget; the last one dead-letters like any message.
 */
async function retryInPlace(
  m: ResolverMessage,
  attempt: number,
  ctx: ResolveContext,
  result: 'heartbeat' | 'liveness',
  write: () => Promise<void>,
): Promise<Settlement> {
  const tags = { 'nimbus.endpoint': m.from ?? Address.Resolver, 'nimbus.message_type': result };
  for (let a = attempt; ; a++) {
    try {
      await write();
      return { kind: 'complete', result };
    } catch (err) {
      const failure = classifyStoreFailure(err);
      if (failure.kind === 'denied') return halt(failure);
      if (failure.kind === 'closed') return { kind: 'leave' };
      if (failure.kind === 'refused' || failure.kind === 'bug') {
        // Bad heartbeat data (an endpoint id the store cannot key…) is logged and dropped, never dead-lettered.
        ctx.log.warn({ messageId: m.messageId, err: errorText(err) }, 'Resolver: heartbeat not recordable; dropped');
        return { kind: 'complete', result: 'dropped' };
      }
      const reason = failure.kind === 'throttled' ? 'throttled' : 'transient';
      // The store is down for everyone: waiting out the budget here (minutes with the production back-off) would
      // only use up the session's lock horizon; the circuit holds the message and retries it when the store answers.
      if (reason === 'transient' && ctx.storeDown && (await ctx.storeDown())) {
        return { kind: 'redeliver', attempt: a, delayMs: 0, storeReason: 'transient', inPlace: true };
      }
      if (budgetExhausted(a, ctx.budget)) {
        return {
          ...deadLetter(
            failure.kind === 'throttled' ? DeadLetterReason.CosmosDbThrottled : DeadLetterReason.StoreUnavailable,
            `${errorText(err)} (attempt ${a} of ${ctx.budget.maxAttempts}, retried in place)`,
            reason,
          ),
          inPlace: true,
        };
      }
      const { delayMs, source } = retryDelay(a, failure.kind === 'throttled' ? failure.retryAfterMs : undefined, ctx.budget);
      const wait = Math.min(delayMs, ctx.inPlaceMaxDelayMs);
      // The tries in place (215 s of waits with the production budget) are not bounded by the budget alone: begun
      // late in a session, they outlast the lock, and the settlement at their end fails with it (the message comes
      // back anyway, a delivery spent, after holding its session for nothing). Handed back to the broker instead,
      // while the lock holds, as any message left for redelivery.
      if (ctx.lockHorizon && Date.now() + wait >= ctx.lockHorizon()) {
        ctx.log.warn({ messageId: m.messageId, attempt: a }, `Resolver: ${result} write ${reason}; the session lock horizon is near, leaving it for redelivery`);
        return { kind: 'redeliver', attempt: a, delayMs: 0, storeReason: reason, atHorizon: true };
      }
      ctx.metrics.storeRetry({ ...tags, 'nimbus.store.reason': reason, 'nimbus.retry.action': 'retried_in_place' });
      ctx.metrics.retryDelay(wait / 1000, { 'nimbus.delay.source': source });
      ctx.log.warn({ messageId: m.messageId, attempt: a, delayMs: wait }, `Resolver: ${result} write ${reason}; retrying in place`);
      if (!(await sleep(wait, ctx.signal))) return { kind: 'leave' };
    }
  }
}
