// Dead-letter replay (DESIGN.md §5): each selected dead letter is received under a lock, a copy with the same
// MessageId and without ThrottleRetryCount / DeadLetterReason / DeadLetterErrorDescription is sent to the
// topic it came from, and only then is the dead letter completed; a failed send abandons it. If the console
// dies in between, the lock expires and the dead letter is still there (nothing lost); a second replay sends
// the same MessageId again, which the Resolver's history and the SDK inbox recognise (no duplicate outcome).
// A long replay writes its progress to an operation record as it goes, and is audited when it ends.
import { randomUUID } from 'node:crypto';
import type { ServiceBusAdministrationClient, ServiceBusClient, ServiceBusReceivedMessage } from '@azure/service-bus';
import { Prop } from '../../lib/contract/index.ts';
import type { MessageStore } from '../../lib/store/index.ts';
import type { PlatformDocs } from '../heartbeat/platformDocs.ts';
import { log } from '../log.ts';
import { deadLetterReceiver, replayCopy, sequenceNumber, viewOf, type DeadLetterView } from './deadLetters.ts';
import { ruleFilterSql } from './overview.ts';
import { subscriptionMatches, type Match } from './ruleMatch.ts';

/** Which dead letters: the listed sequence numbers, or every one matching the reason filter (`all`). */
export interface ReplaySelection {
  sequenceNumbers?: string[];
  all?: boolean;
  reason?: string;
  /** Upper bound on the number replayed in one operation. */
  max?: number;
}

export const MAX_REPLAY = 5000;
/** Dead letters one replay pass may look at (and hold locked) while searching for its selection. */
export const MAX_SCAN = 20_000;
/** The audit partition for namespace-level operator actions (they belong to no event). */
export const TOPOLOGY_AUDIT_EVENT = '$topology';

export function selects(sel: ReplaySelection, v: Pick<DeadLetterView, 'sequenceNumber' | 'reason'>): boolean {
  if (sel.reason !== undefined && v.reason !== sel.reason) return false;
  if (sel.sequenceNumbers && sel.sequenceNumbers.length > 0) return sel.sequenceNumbers.includes(v.sequenceNumber);
  return sel.all === true;
}

export interface ReplayPreview {
  topic: string;
  subscription: string;
  count: number;
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

/** What a replay would do: how many, and which other subscriptions the copies would also reach. */
export async function previewReplay(
  client: ServiceBusClient,
  admin: ServiceBusAdministrationClient,
  topic: string,
  subscription: string,
  sel: ReplaySelection,
): Promise<ReplayPreview> {
  const max = Math.min(sel.max ?? MAX_REPLAY, MAX_REPLAY);
  const rules = await topicRules(admin, topic);
  const receiver = deadLetterReceiver(client, topic, subscription);
  const reach = new Map<string, { yes: number; unknown: number }>();
  const sample: ReplayPreview['sample'] = [];
  let count = 0;
  let truncated = false;
  try {
    let batch = await receiver.peekMessages(100, { fromSequenceNumber: sequenceNumber('0') });
    while (batch.length > 0) {
      for (const m of batch) {
        const v = viewOf(m);
        if (!selects(sel, v)) continue;
        if (count >= max) {
          truncated = true;
          break;
        }
        count++;
        if (sample.length < 20) sample.push({ sequenceNumber: v.sequenceNumber, messageId: v.messageId, reason: v.reason, enqueuedAt: v.enqueuedAt });
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
    await receiver.close().catch(() => undefined);
  }
  const alsoReaches = [...reach.entries()]
    .map(([s, e]) => ({ subscription: s, count: e.yes + e.unknown, certain: e.unknown === 0 }))
    .sort((a, b) => a.subscription.localeCompare(b.subscription));
  return { topic, subscription, count, truncated, sample, alsoReaches };
}

export interface ReplayOperation {
  id: string;
  kind: 'replay';
  topic: string;
  subscription: string;
  auditor: string;
  state: 'running' | 'done' | 'failed';
  replayed: number;
  failed: number;
  /** Dead letters whose copy was sent but whose completion failed (lock lost): they may be replayed again. */
  notCompleted: number;
  messageIds: string[];
  error: string | null;
  startedAt: string;
  updatedAt: string;
  finishedAt: string | null;
}

export interface ReplayDeps {
  client: ServiceBusClient;
  store: MessageStore;
  docs?: PlatformDocs;
  /** How long one receive waits for more dead letters before the pass ends. */
  receiveWaitMs?: number;
  /** Least time between two writes of the progress record (default 500 ms; the final state is always written). */
  progressEveryMs?: number;
}

export const operationDocName = (id: string) => `op_${id}`;

/**
 * Runs one replay to its end and returns the final operation record. `onProgress` and the operation document
 * are updated as it goes (the document at most every 500 ms).
 */
export async function replayDeadLetters(
  deps: ReplayDeps,
  args: { topic: string; subscription: string; selection: ReplaySelection; auditor: string; operationId?: string },
  onProgress?: (op: ReplayOperation) => void,
): Promise<ReplayOperation> {
  const { client, store, docs } = deps;
  const { topic, subscription, selection, auditor } = args;
  const max = Math.min(selection.max ?? MAX_REPLAY, MAX_REPLAY);
  const now = () => new Date().toISOString();
  const op: ReplayOperation = {
    id: args.operationId ?? randomUUID(),
    kind: 'replay',
    topic,
    subscription,
    auditor,
    state: 'running',
    replayed: 0,
    failed: 0,
    notCompleted: 0,
    messageIds: [],
    error: null,
    startedAt: now(),
    updatedAt: now(),
    finishedAt: null,
  };
  let lastSaved = 0;
  const save = async (force: boolean) => {
    op.updatedAt = now();
    onProgress?.({ ...op });
    if (!docs || (!force && Date.now() - lastSaved < (deps.progressEveryMs ?? 500))) return;
    lastSaved = Date.now();
    await docs.write(operationDocName(op.id), op).catch((err: unknown) => {
      log.warn({ operationId: op.id, err: err instanceof Error ? err.message : String(err) }, 'replay progress not saved');
    });
  };
  await save(true);

  const receiver = deadLetterReceiver(client, topic, subscription);
  const sender = client.createSender(topic);
  // Dead letters this pass received but does not replay: their locks are held until the end, so the loop
  // does not receive them again, then released with abandon (they stay in the dead-letter queue).
  const held: ServiceBusReceivedMessage[] = [];
  const seen = new Set<string>();
  const wanted = selection.sequenceNumbers && selection.sequenceNumbers.length > 0 ? new Set(selection.sequenceNumbers) : null;
  let consecutiveFailures = 0;
  try {
    outer: while (op.replayed + op.failed < max) {
      if (wanted && [...wanted].every((s) => seen.has(s))) break;
      if (seen.size >= MAX_SCAN) {
        op.error = `stopped after looking at ${MAX_SCAN} dead letters; run the replay again for the rest`;
        break;
      }
      const batch = await receiver.receiveMessages(20, { maxWaitTimeInMs: deps.receiveWaitMs ?? 1000 });
      if (batch.length === 0) break;
      let fresh = 0;
      for (const m of batch) {
        const v = viewOf(m);
        if (seen.has(v.sequenceNumber)) {
          // Came back after its lock expired or after a failed send: this pass has already decided on it.
          held.push(m);
          continue;
        }
        seen.add(v.sequenceNumber);
        fresh++;
        if (!selects(selection, v) || op.replayed + op.failed >= max) {
          held.push(m);
          continue;
        }
        try {
          await sender.sendMessages(replayCopy(m));
        } catch (err) {
          op.failed++;
          op.error = err instanceof Error ? err.message.slice(0, 300) : 'send failed';
          await receiver.abandonMessage(m).catch(() => undefined);
          await save(false);
          if (++consecutiveFailures >= 3) break outer;
          continue;
        }
        consecutiveFailures = 0;
        try {
          await receiver.completeMessage(m);
        } catch {
          op.notCompleted++;
        }
        op.replayed++;
        if (op.messageIds.length < 200 && v.messageId) op.messageIds.push(v.messageId);
        const eventId = v.applicationProperties[Prop.EventId];
        if (typeof eventId === 'string' && eventId !== '') {
          // The event's own audit trail shows the replay too; keyed so a retried write adds nothing.
          await store
            .recordAudit({
              id: `replay-${op.id}-${v.sequenceNumber}`,
              eventId: eventId.slice(0, 128),
              type: 'ReplayDeadLetter',
              auditor,
              comment: `dead letter replayed from ${topic}/${subscription}`,
              data: JSON.stringify({ messageId: v.messageId, reason: v.reason, operationId: op.id }).slice(0, 4096),
            })
            .catch(() => undefined);
        }
        await save(false);
      }
      if (fresh === 0) break;
    }
    op.state = op.failed > 0 && op.replayed === 0 ? 'failed' : 'done';
  } catch (err) {
    op.state = 'failed';
    op.error = err instanceof Error ? err.message.slice(0, 300) : 'replay failed';
  } finally {
    await Promise.all(held.map((m) => receiver.abandonMessage(m).catch(() => undefined)));
    await sender.close().catch(() => undefined);
    await receiver.close().catch(() => undefined);
  }
  op.finishedAt = now();
  await save(true);
  await store.recordAudit({
    id: `replay-${op.id}`,
    eventId: TOPOLOGY_AUDIT_EVENT,
    type: 'ReplayDeadLetters',
    auditor,
    comment: `${topic}/${subscription}: ${op.replayed} replayed, ${op.failed} failed`,
    data: JSON.stringify({ topic, subscription, replayed: op.replayed, failed: op.failed, notCompleted: op.notCompleted, error: op.error, messageIds: op.messageIds.slice(0, 50) }).slice(0, 4096),
  });
  log.info({ operationId: op.id, topic, subscription, replayed: op.replayed, failed: op.failed }, 'dead-letter replay finished');
  return op;
}
