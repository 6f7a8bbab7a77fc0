// The agent zone's non-claiming receive: the oldest pending handoff of an endpoint (optionally of one event type),
// read from the Resolver's status rows. Nothing is locked or marked: the same event is handed out again to every
// receive until it is settled - the settlement's claim turns the row into plain Pending at once (Manager), and the
// Resolver's projection of HandoffCompletedRequest / HandoffFailedRequest keeps it so - so a settled event is never
// handed out again. Past its expected-by a handoff is still handed out, flagged overdue.
import type { SqlParameter } from '@azure/cosmos';
import { PendingSubStatus, ResolutionStatus } from '@nimbus/sdk/contract';
import { CONTAINERS, statusRowSchema, type MessageStore, type StatusRow } from '../../lib/store/index.ts';
import { sleep } from '../../lib/concurrency/sleep.ts';
import { stoppingSignal } from '../stopping.ts';

/** The longest a receive waits for a handoff to arrive. */
export const MAX_WAIT_SECONDS = 30;
/** How often a waiting receive looks again. */
const POLL_MS = 1_000;
/** Candidates read per look: the oldest is picked in code, ties by event id (one ORDER BY field needs no composite index). */
const CANDIDATES = 20;

export interface PendingHandoff {
  endpointId: string;
  eventId: string;
  sessionId: string;
  eventTypeId: string | null;
  /**
   * Settle with this (POST /api/agent/settle `messageId`): the status row's `lastMessageId`, which for a pending
   * handoff is the id of the PendingHandoffResponse the endpoint sent (not the id of the delivery it answered).
   */
  messageId: string;
  correlationId: string | null;
  enqueuedAt: string | null;
  payload: unknown;
  handoff: { reason: string | null; externalJobId: string | null; expectedBy: string | null; overdue: boolean };
}

export interface HandoffQuery {
  endpointId: string;
  eventTypeId?: string;
  /** Event ids the agent already holds (in work): skipped, so that a worker pool can take the next one. */
  exclude?: readonly string[];
}

function view(row: StatusRow, now: number): PendingHandoff {
  const expectedBy = row.expectedBy;
  return {
    endpointId: row.endpointId,
    eventId: row.eventId,
    sessionId: row.sessionId,
    eventTypeId: row.eventTypeId,
    messageId: row.lastMessageId,
    correlationId: row.correlationId,
    enqueuedAt: row.enqueuedAt,
    payload: row.payload ?? null,
    handoff: {
      reason: row.handoffReason,
      externalJobId: row.externalJobId,
      expectedBy,
      overdue: expectedBy !== null && Date.parse(expectedBy) < now,
    },
  };
}

/** The oldest pending handoff now, or null. */
export async function oldestPendingHandoff(store: MessageStore, q: HandoffQuery, now = Date.now()): Promise<PendingHandoff | null> {
  const where = ['c.endpointId = @ep', `c.status = '${ResolutionStatus.Pending}'`, `c.subStatus = '${PendingSubStatus.Handoff}'`];
  const parameters: SqlParameter[] = [{ name: '@ep', value: q.endpointId }];
  if (q.eventTypeId !== undefined) {
    where.push('c.eventTypeId = @type');
    parameters.push({ name: '@type', value: q.eventTypeId });
  }
  if (q.exclude && q.exclude.length > 0) {
    where.push('NOT ARRAY_CONTAINS(@exclude, c.eventId)');
    parameters.push({ name: '@exclude', value: [...q.exclude] });
  }
  const { resources } = await store.database
    .container(CONTAINERS.events)
    .items.query(
      { query: `SELECT TOP ${CANDIDATES} * FROM c WHERE ${where.join(' AND ')} ORDER BY c.enqueuedAt ASC`, parameters },
      { partitionKey: [q.endpointId] },
    )
    .fetchAll();
  const rows = resources.flatMap((r) => {
    const p = statusRowSchema.safeParse(r);
    return p.success ? [p.data] : [];
  });
  rows.sort((a, b) => cmp(a.enqueuedAt ?? a.createdAt, b.enqueuedAt ?? b.createdAt) || cmp(a.eventId, b.eventId));
  return rows[0] ? view(rows[0], now) : null;
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Long-poll: the oldest pending handoff, looking again every second until one is there or `waitSeconds` pass
 * (null then), or the caller goes away (`signal`), or the console stops (null: the stop waits for requests in flight,
 * and a wait of up to 30 s would outlast its grace).
 */
export async function receivePendingHandoff(
  store: MessageStore,
  q: HandoffQuery,
  waitSeconds: number,
  signal?: AbortSignal,
): Promise<PendingHandoff | null> {
  const deadline = Date.now() + Math.min(MAX_WAIT_SECONDS, Math.max(0, waitSeconds)) * 1000;
  const stopping = stoppingSignal();
  // Not AbortSignal.any: on Node 20 each combined signal stays registered on the long-lived stopping signal (a
  // leak of one per receive, nodejs/node#55351). A local controller whose listeners go when the wait ends.
  const ended = new AbortController();
  const end = () => ended.abort();
  for (const s of [signal, stopping]) {
    if (s?.aborted) end();
    else s?.addEventListener('abort', end, { once: true });
  }
  try {
    for (;;) {
      const found = await oldestPendingHandoff(store, q);
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0 || ended.signal.aborted) return null;
      await sleep(Math.min(POLL_MS, left), ended.signal);
    }
  } finally {
    signal?.removeEventListener('abort', end);
    stopping.removeEventListener('abort', end);
  }
}
