// Seeding for the console benchmark: N status rows spread over the catalog's endpoints, each with the two history
// entries the Resolver would have written (the request and its response), and the endpoints' counter documents,
// written straight into Cosmos with bulk requests (100 operations per request). Going through Service Bus and
// the Resolver would take an hour for 100,000 events; the documents are the same shape the store writes
// (validated against the store's schemas before they are sent), so the console reads them as it reads real data.
import type { JSONObject, OperationInput } from '@azure/cosmos';
import { blockedByReason, MessageType, ResolutionStatus } from '@nimbus/sdk/contract';
import {
  CONTAINERS,
  COUNTER_BUCKETS,
  bucketOf,
  docId,
  fingerprintOf,
  historyEntrySchema,
  statusRowId,
  statusRowSchema,
  type CounterBucket,
  type HistoryEntry,
  type MessageStore,
  type StatusRow,
} from '../lib/store/index.ts';
import { bulkCreate } from './bulkRetry.ts';

export interface SeedOptions {
  events: number;
  endpoints: string[];
  /** Customer sessions per endpoint. */
  sessionsPerEndpoint: number;
  /** Events are spread over this many minutes before `now`. */
  spanMinutes: number;
  /**
   * Share of Failed + DeadLettered + Unsupported events (default 0.06, the mix below); a larger share is taken
   * from the Completed events (the failure-groups figure is measured with 0.10).
   */
  failedShare?: number;
  now?: number;
}

export interface SeedResult {
  events: number;
  historyEntries: number;
  seconds: number;
  /** A few event ids per endpoint and status, for the measured requests. */
  samples: Array<{ endpointId: string; eventId: string; status: string }>;
  counts: Record<string, Record<CounterBucket, number>>;
}

/** The status mix of a busy platform: most events complete, a few percent need an operator. */
const MIX: Array<{ share: number; status: StatusRow['status']; handoff?: boolean; dead?: boolean }> = [
  { share: 0.86, status: ResolutionStatus.Completed },
  { share: 0.04, status: ResolutionStatus.Failed },
  { share: 0.03, status: ResolutionStatus.Deferred },
  { share: 0.02, status: ResolutionStatus.Skipped },
  { share: 0.01, status: ResolutionStatus.DeadLettered, dead: true },
  { share: 0.01, status: ResolutionStatus.Unsupported },
  { share: 0.02, status: ResolutionStatus.Pending, handoff: true },
  { share: 0.01, status: ResolutionStatus.Pending },
];

const EVENT_TYPES = [
  'OrderPlaced',
  'OrderCancelled',
  'CustomerRegistered',
  'InvoiceIssued',
  'ShipmentDispatched',
];

const RESPONSE_TYPE: Record<string, string> = {
  Completed: MessageType.ResolutionResponse,
  Failed: MessageType.ErrorResponse,
  DeadLettered: MessageType.ErrorResponse,
  Deferred: MessageType.DeferralResponse,
  Skipped: MessageType.SkipResponse,
  Unsupported: MessageType.UnsupportedResponse,
  Handoff: MessageType.PendingHandoffResponse,
};

/** Deterministic pseudo-random numbers (the same seed gives the same data set). */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The mix with `failedShare` of failures: Failed grows, Completed shrinks by as much. */
function mixWith(failedShare: number | undefined): typeof MIX {
  if (failedShare === undefined) return MIX;
  const base = MIX.filter((m) => m.status === ResolutionStatus.Failed || m.status === ResolutionStatus.Unsupported || m.dead).reduce((a, m) => a + m.share, 0);
  const extra = failedShare - base;
  return MIX.map((m) =>
    m.status === ResolutionStatus.Completed ? { ...m, share: m.share - extra } : m.status === ResolutionStatus.Failed && !m.dead ? { ...m, share: m.share + extra } : m,
  );
}

/** The causes failed events are spread over (a few big groups and a long tail, as on a bad morning). */
const FAILURES: Array<{ type: string; text: (orderId: string, i: number) => string }> = [
  { type: 'PaymentGatewayError', text: (o, i) => `Order ${o}: the payment provider answered 502 Bad Gateway (attempt ${1 + (i % 3)})` },
  { type: 'CrmUnavailableError', text: (o) => `CRM API answered 503 Service Unavailable (rate limit) while adding order ${o}` },
  { type: 'CreditApprovalRequiredError', text: (o, i) => `Order ${o}: invoice total ${(1000 + (i % 900)).toFixed(2)} EUR exceeds the credit limit of 1000.00 for CUST-${i % 97}; approve the credit and resubmit` },
  { type: 'TimeoutError', text: (_o, i) => `timeout after ${30 + (i % 5) * 10} s while calling ERP` },
  ...Array.from({ length: 16 }, (_, k) => ({ type: `AdapterError${k}`, text: (o: string) => `adapter ${k} rejected ${o}` })),
];

function pickStatus(r: number, mix: typeof MIX): (typeof MIX)[number] {
  let acc = 0;
  for (const m of mix) {
    acc += m.share;
    if (r < acc) return m;
  }
  return MIX[0]!;
}

function buildEvent(
  i: number,
  endpointId: string,
  rnd: () => number,
  o: { sessionsPerEndpoint: number; spanMinutes: number; now: number; mix: typeof MIX },
): { row: StatusRow; history: HistoryEntry[] } {
  const kind = pickStatus(rnd(), o.mix);
  const eventId = `bench-${endpointId.slice(0, 4)}-${String(i).padStart(7, '0')}`;
  const sessionId = `CUST-${1000 + Math.floor(rnd() * o.sessionsPerEndpoint)}`;
  const eventTypeId = EVENT_TYPES[Math.floor(rnd() * EVENT_TYPES.length)]!;
  const created = o.now - Math.floor(rnd() * o.spanMinutes * 60_000);
  const createdAt = new Date(created).toISOString();
  const updatedAt = new Date(created + 50 + Math.floor(rnd() * 2000)).toISOString();
  const reqId = `${eventId}-req`;
  const resId = `${eventId}-res`;
  const payload = {
    orderId: `ORD-${100000 + i}`,
    customerId: sessionId,
    total: Math.round(rnd() * 90000) / 100,
    currency: 'EUR',
    lines: [{ sku: 'MUG-BLUE', quantity: 1 + Math.floor(rnd() * 4), unitPrice: 9.5 }],
  };
  const failed = kind.status === ResolutionStatus.Failed || kind.dead === true;
  // Skewed towards the first causes: rnd()^3 picks the big groups most of the time.
  const cause = FAILURES[Math.floor(rnd() ** 3 * FAILURES.length)]!;
  const responseType = RESPONSE_TYPE[kind.handoff ? 'Handoff' : kind.status];
  const pendingRequest = kind.status === ResolutionStatus.Pending && !kind.handoff;
  const row: StatusRow = {
    id: statusRowId(eventId, sessionId),
    endpointId,
    eventId,
    sessionId,
    status: kind.status,
    subStatus: kind.handoff ? 'Handoff' : null,
    messageType: (pendingRequest ? MessageType.EventRequest : responseType) as StatusRow['messageType'],
    eventTypeId,
    lastMessageId: pendingRequest ? reqId : resId,
    parentMessageId: pendingRequest ? 'self' : reqId,
    originatingMessageId: reqId,
    correlationId: `${eventId}-corr`,
    from: pendingRequest ? 'storefrontendpoint' : endpointId,
    to: pendingRequest ? endpointId : 'Resolver',
    enqueuedAt: updatedAt,
    requestMessageId: reqId,
    payload,
    errorText: failed
      ? cause.text(payload.orderId, i)
      : kind.status === ResolutionStatus.Deferred
        ? // As production parks: the blocker named only in the park reason (the Resolver writes no blockedBy).
          blockedByReason(sessionId, `bench-${endpointId.slice(0, 4)}-blocker`)
        : null,
    errorType: failed ? cause.type : null,
    deadLetterReason: kind.dead ? 'MaxDeliveryCountExceeded' : null,
    deadLetterErrorDescription: kind.dead ? 'the message could not be handled in 10 deliveries' : null,
    retryCount: failed ? 3 : null,
    retryLimit: failed ? 3 : null,
    handoffReason: kind.handoff ? `Ledger import of ${payload.orderId} queued` : null,
    externalJobId: kind.handoff ? `LEDGER-${i}` : null,
    expectedBy: kind.handoff ? new Date(created + 30 * 60_000).toISOString() : null,
    blockedBy: null,
    createdAt,
    updatedAt,
    eventIdLower: eventId.toLowerCase(),
    sessionIdLower: sessionId.toLowerCase(),
  };
  // As the store computes it on every write (lib/store/fingerprint.ts).
  row.fingerprint = fingerprintOf(row)?.groupId ?? null;
  const common = {
    endpointId,
    eventId,
    sessionId,
    eventTypeId,
    originatingMessageId: reqId,
    correlationId: `${eventId}-corr`,
    errorText: null,
    errorType: null,
    deadLetterReason: null,
    deadLetterErrorDescription: null,
    retryCount: null,
    handoffReason: null,
    externalJobId: null,
    expectedBy: null,
    queueTimeMs: null,
    processingTimeMs: null,
    traceId: null,
    properties: {},
  };
  const history: HistoryEntry[] = [
    {
      ...common,
      id: docId(reqId),
      messageId: reqId,
      messageType: MessageType.EventRequest,
      parentMessageId: 'self',
      from: 'storefrontendpoint',
      to: endpointId,
      enqueuedAt: createdAt,
      payload,
      recordedAt: createdAt,
    },
  ];
  if (!pendingRequest)
    history.push({
      ...common,
      id: docId(resId),
      messageId: resId,
      messageType: responseType as HistoryEntry['messageType'],
      parentMessageId: reqId,
      from: endpointId,
      to: 'Resolver',
      enqueuedAt: updatedAt,
      errorText: row.errorText,
      errorType: row.errorType,
      deadLetterReason: row.deadLetterReason,
      deadLetterErrorDescription: row.deadLetterErrorDescription,
      handoffReason: row.handoffReason,
      externalJobId: row.externalJobId,
      expectedBy: row.expectedBy,
      recordedAt: updatedAt,
    });
  return { row, history };
}

export async function seedConsoleBench(store: MessageStore, options: SeedOptions): Promise<SeedResult> {
  const started = performance.now();
  const o = {
    sessionsPerEndpoint: options.sessionsPerEndpoint,
    spanMinutes: options.spanMinutes,
    now: options.now ?? Date.now(),
    mix: mixWith(options.failedShare),
  };
  const rnd = random(20261202);
  const events = store.database.container(CONTAINERS.events);
  const history = store.database.container(CONTAINERS.history);
  const counters = store.database.container(CONTAINERS.counters);
  const counts: Record<string, Record<CounterBucket, number>> = {};
  const samples: SeedResult['samples'] = [];
  const sampled = new Map<string, number>();
  let historyEntries = 0;
  // Built and written in slices, so a large run does not hold every operation in memory twice.
  const SLICE = 10_000;
  for (let from = 0; from < options.events; from += SLICE) {
    const rowOps: OperationInput[] = [];
    const historyOps: OperationInput[] = [];
    for (let i = from; i < Math.min(options.events, from + SLICE); i++) {
      const endpointId = options.endpoints[i % options.endpoints.length]!;
      const { row, history: entries } = buildEvent(i, endpointId, rnd, o);
      if (i < options.endpoints.length) {
        // The first event of each endpoint is checked against the store's own schemas: the seeder must not
        // drift from what the Resolver writes.
        statusRowSchema.parse(row);
        for (const h of entries) historyEntrySchema.parse(h);
      }
      const bucket = bucketOf(row.status, row.subStatus);
      const c = (counts[endpointId] ??= Object.fromEntries(COUNTER_BUCKETS.map((b) => [b, 0])) as Record<
        CounterBucket,
        number
      >);
      c[bucket]++;
      const sampleKey = `${endpointId}/${bucket}`;
      const taken = sampled.get(sampleKey) ?? 0;
      if (taken < 20) {
        sampled.set(sampleKey, taken + 1);
        samples.push({ endpointId, eventId: row.eventId, status: bucket });
      }
      rowOps.push({
        operationType: 'Create',
        partitionKey: [row.endpointId, row.eventId],
        resourceBody: row as unknown as JSONObject,
      });
      for (const h of entries) {
        historyOps.push({
          operationType: 'Create',
          partitionKey: h.eventId,
          resourceBody: h as unknown as JSONObject,
        });
        historyEntries++;
      }
    }
    await bulkCreate(events, rowOps);
    await bulkCreate(history, historyOps);
  }
  for (const [endpointId, c] of Object.entries(counts))
    await counters.items.upsert({
      id: 'counts',
      endpointId,
      counts: c,
      recountedAt: new Date(o.now).toISOString(),
    });
  return {
    events: options.events,
    historyEntries,
    seconds: (performance.now() - started) / 1000,
    samples,
    counts,
  };
}
