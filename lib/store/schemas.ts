// Shapes of everything the store writes and reads back, validated with zod at the boundary in both directions:
// bad input is a StoreInputError, a stored document that no longer matches is a CorruptDocumentError.
import { z } from 'zod';
import { messageTypeSchema, pendingSubStatusSchema, resolutionStatusSchema } from '@nimbus/sdk/contract';

/** Service Bus caps message/session ids at 128 characters; the store accepts the same. */
const idSchema = z.string().min(1).max(128);
const endpointIdSchema = z
  .string()
  .min(1)
  .max(50)
  .regex(/^[A-Za-z0-9._-]+$/, 'endpoint ids are letters, digits, ".", "_" and "-"');
/** ISO-8601 UTC with milliseconds (Date#toISOString): fixed width, so string order is time order. */
const isoSchema = z.iso.datetime();
const optText = z.string().max(32_768).nullable().default(null);

export { endpointIdSchema, idSchema, isoSchema };

/**
 * One status write: what the Resolver projects from one message. The status itself is NOT an input; it is
 * derived from `messageType` and `deadLetterErrorDescription` with the contract's `resultingStatus`, so a
 * row can never claim a status its message type does not produce.
 */
export const statusWriteSchema = z.object({
  endpointId: endpointIdSchema,
  eventId: idSchema,
  sessionId: z.string().max(128).default(''),
  messageId: idSchema,
  messageType: messageTypeSchema,
  eventTypeId: z.string().max(260).nullable().default(null),
  /** Id of the message this one answers ('self' on an original request). */
  parentMessageId: z.string().max(128).nullable().default(null),
  originatingMessageId: z.string().max(128).nullable().default(null),
  correlationId: z.string().max(128).nullable().default(null),
  from: z.string().max(260).nullable().default(null),
  to: z.string().max(260).nullable().default(null),
  enqueuedAt: isoSchema.nullable().default(null),
  /** The request's event body (JSON); only requests carry it. Absent keeps the row's stored payload. */
  payload: z.unknown().optional(),
  /**
   * With `payload`: the request whose body it is, when that is not this message (the Resolver's restore after a
   * refused command puts back the payload last delivered, under the notice's id; the row must still name the request
   * that carried it, whose history entry says whether it is raw text that did not parse). Default: this message.
   */
  requestMessageId: idSchema.optional(),
  errorText: optText,
  errorType: z.string().max(1024).nullable().default(null),
  deadLetterReason: z.string().max(4096).nullable().default(null),
  deadLetterErrorDescription: optText,
  retryCount: z.number().int().min(0).nullable().default(null),
  retryLimit: z.number().int().min(0).nullable().default(null),
  handoffReason: z.string().max(4096).nullable().default(null),
  externalJobId: z.string().max(512).nullable().default(null),
  expectedBy: isoSchema.nullable().default(null),
  /** For a parked (Deferred) row: the event id that blocks its session. */
  blockedBy: z.string().max(128).nullable().default(null),
});
export type StatusWrite = z.input<typeof statusWriteSchema>;
export type StatusWriteParsed = z.output<typeof statusWriteSchema>;

/**
 * An event's row by its session only (MessageStore.listEventSessions): a session that no longer reads is null, so
 * the row is still counted as the event's.
 */
export const eventRowRefSchema = z.object({ eventId: z.string(), sessionId: z.string().nullable().catch(null) });

/** The status row: one per endpoint + event + session, in the `events` container. */
export const statusRowSchema = z.object({
  id: z.string(),
  endpointId: z.string(),
  eventId: z.string(),
  sessionId: z.string(),
  status: resolutionStatusSchema,
  subStatus: pendingSubStatusSchema.nullable(),
  /** The message type that last wrote the row; null for rows seeded without one (treated as request stage). */
  messageType: messageTypeSchema.nullable(),
  eventTypeId: z.string().nullable(),
  lastMessageId: z.string(),
  parentMessageId: z.string().nullable(),
  originatingMessageId: z.string().nullable(),
  correlationId: z.string().nullable(),
  from: z.string().nullable(),
  to: z.string().nullable(),
  enqueuedAt: z.string().nullable(),
  /** Latest request that carried a body, and that body. */
  requestMessageId: z.string().nullable(),
  payload: z.unknown().optional(),
  errorText: z.string().nullable(),
  errorType: z.string().nullable(),
  deadLetterReason: z.string().nullable(),
  deadLetterErrorDescription: z.string().nullable(),
  retryCount: z.number().nullable(),
  retryLimit: z.number().nullable(),
  handoffReason: z.string().nullable(),
  externalJobId: z.string().nullable(),
  expectedBy: z.string().nullable(),
  blockedBy: z.string().nullable(),
  createdAt: isoSchema,
  updatedAt: isoSchema,
  /** Lower-cased copies for case-insensitive prefix search (the embedded server has no STARTSWITH(.., true)). */
  eventIdLower: z.string(),
  sessionIdLower: z.string(),
  /**
   * The failure group (lib/store/fingerprint.ts) of a Failed, DeadLettered or Unsupported row, null otherwise.
   * Absent on rows written before groups existed, until `npm run backfill:fingerprints` gives them one.
   */
  fingerprint: z.string().nullable().optional(),
  /**
   * Counter deltas of this row that a buffering writer (the Resolver) may not have applied yet, one per writer and
   * flush window (lib/store/counters.ts): what a survivor applies when that writer dies before its flush.
   */
  counted: z.array(z.lazy(() => countStampSchema)).optional(),
  /**
   * Per writer (a store instance), its last write of this row (lib/store/writeMarks.ts): how a store tells whether
   * its write in doubt landed once another writer has moved the row on. Absent on rows of older writers; a damaged
   * list reads as absent (it only ever proves that a write landed, so the row stays readable without it).
   */
  lastWrites: z.array(z.lazy(() => writeMarkSchema)).optional().catch(undefined),
  /**
   * The ids of the last messages applied to this row, newest first (lib/store/appliedMessages.ts): how the Resolver
   * tells a copy applied again over a later version from a new outcome, so its time series counts the outcome once.
   * Absent on rows of older writers (the last message id stands in for it); a damaged list reads as absent.
   */
  appliedMessageIds: z.array(z.string()).optional().catch(undefined),
  /**
   * Whether this version was written by a conditional write (`expect`: the Manager's claim, Reconcile's repair, the
   * Resolver's restore after a refusal) rather than by a message's own record (the Resolver's other writes; a restore
   * keeps the value of the version it puts back, and Reconcile's, rebuilt from a history entry, puts back a record):
   * how the Resolver tells its first record of a console command, which replaces the command's claim under the same id, from a copy
   * of that record, so its time series counts the command once (resolver-worker/outcomeMetrics.ts). Absent on rows
   * of older writers; a damaged value reads as absent.
   */
  conditional: z.boolean().optional().catch(undefined),
});
export type StatusRow = z.output<typeof statusRowSchema>;
/** A row as listed in pages: everything but the payload. */
export type StatusRowSummary = Omit<StatusRow, 'payload'>;

/** One history entry per MessageId, in the `history` container (partition = eventId). */
export const historyWriteSchema = z.object({
  endpointId: endpointIdSchema,
  eventId: idSchema,
  messageId: idSchema,
  messageType: messageTypeSchema,
  sessionId: z.string().max(128).default(''),
  eventTypeId: z.string().max(260).nullable().default(null),
  parentMessageId: z.string().max(128).nullable().default(null),
  originatingMessageId: z.string().max(128).nullable().default(null),
  correlationId: z.string().max(128).nullable().default(null),
  from: z.string().max(260).nullable().default(null),
  to: z.string().max(260).nullable().default(null),
  enqueuedAt: isoSchema,
  payload: z.unknown().optional(),
  errorText: optText,
  errorType: z.string().max(1024).nullable().default(null),
  deadLetterReason: z.string().max(4096).nullable().default(null),
  deadLetterErrorDescription: optText,
  retryCount: z.number().int().min(0).nullable().default(null),
  handoffReason: z.string().max(4096).nullable().default(null),
  externalJobId: z.string().max(512).nullable().default(null),
  expectedBy: isoSchema.nullable().default(null),
  queueTimeMs: z.number().min(0).nullable().default(null),
  processingTimeMs: z.number().min(0).nullable().default(null),
  /**
   * The W3C trace id the message carried (its `traceparent`), so the console can link the event to its trace.
   * Null when the message carried none; absent on entries written before it was recorded.
   */
  traceId: z
    .string()
    .regex(/^[0-9a-f]{32}$/)
    .nullable()
    .default(null),
  /** Remaining application properties worth keeping (strings, numbers, booleans only). */
  properties: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])).default({}),
});
export type HistoryWrite = z.input<typeof historyWriteSchema>;
export const historyEntrySchema = historyWriteSchema.extend({
  id: z.string(),
  endpointId: z.string(),
  eventId: z.string(),
  messageId: z.string(),
  recordedAt: isoSchema,
  /**
   * A random id of the create that wrote the entry (MessageStore.recordHistory): a create answered 409 reads the entry
   * and tells its own earlier attempt, whose answer was lost, from another call's entry. Absent on older entries.
   */
  createToken: z.string().optional().catch(undefined),
});
export type HistoryEntry = z.output<typeof historyEntrySchema>;

/** Audit types in use. Stored as strings (self-describing; an old reader shows a new type instead of failing). */
export const AuditType = {
  Resubmit: 'Resubmit',
  ResubmitWithChanges: 'ResubmitWithChanges',
  Skip: 'Skip',
  Retry: 'Retry',
  Comment: 'Comment',
  CompleteHandoff: 'CompleteHandoff',
  FailHandoff: 'FailHandoff',
  ReconcileStalePending: 'ReconcileStalePending',
  /** A Manager command whose send failed; its claim on the row was undone (or left for Reconcile). */
  CommandNotSent: 'CommandNotSent',
  /** Reconcile repaired a row left claimed or Pending by a command nobody answered (re-sent or restored). */
  ReconcileStuckCommand: 'ReconcileStuckCommand',
  /** Reconcile moved a draining session's replay cursor past parked messages that no longer exist. */
  ReconcileDrainingSession: 'ReconcileDrainingSession',
  RecountCounters: 'RecountCounters',
  /** Written by the Resolver: a subscriber refused a command (it changed nothing; the row keeps its status). */
  CommandRefused: 'CommandRefused',
  /** Written by the Resolver: a subscriber skipped parked sequences of a session that never came back. */
  ReplayGap: 'ReplayGap',
} as const;

export const auditWriteSchema = z.object({
  /** Optional caller-chosen id: writing the same id twice keeps one audit (idempotent retries). */
  id: z.string().min(1).max(200).optional(),
  eventId: idSchema,
  endpointId: endpointIdSchema.nullable().default(null),
  eventTypeId: z.string().max(260).nullable().default(null),
  type: z.string().min(1).max(64),
  auditor: z.string().min(1).max(256),
  /**
   * The auditor's stable id (`user:<oid>`, `service:<client or key id>`): a display name is shared by two people and
   * changes in Entra, the id does neither. Absent on entries written before it was recorded, and on the platform's own.
   */
  auditorId: z.string().min(1).max(256).optional(),
  comment: z.string().max(4096).nullable().default(null),
  /** Small structured detail (the changed body, the stale message id…), kept under 4 KB. */
  data: z.string().max(4096).nullable().default(null),
  at: isoSchema.optional(),
});
export type AuditWrite = z.input<typeof auditWriteSchema>;
export const auditEntrySchema = auditWriteSchema.extend({
  id: z.string(),
  endpointId: z.string().nullable(),
  at: isoSchema,
});
export type AuditEntry = z.output<typeof auditEntrySchema>;

/** Status-bucket counters of one endpoint, in the `counters` container. */
export const COUNTER_BUCKETS = [
  'Pending',
  'Handoff',
  'Deferred',
  'Failed',
  'DeadLettered',
  'Unsupported',
  'Completed',
  'Skipped',
] as const;
export type CounterBucket = (typeof COUNTER_BUCKETS)[number];
/** One buffered counter delta recorded on its row: writer `o` moved the row from bucket `f` to `t` in window `s`. */
export const countStampSchema = z.object({
  o: z.string(),
  s: z.number().int(),
  f: z.enum(COUNTER_BUCKETS).nullable(),
  t: z.enum(COUNTER_BUCKETS),
});
export type CountStamp = z.output<typeof countStampSchema>;

/** Write `n` (numbered per store instance) of writer `o` (the store instance's id) on a status row. */
export const writeMarkSchema = z.object({ o: z.string(), n: z.number().int() });
export type WriteMark = z.output<typeof writeMarkSchema>;

export const counterDocSchema = z.object({
  id: z.literal('counts'),
  endpointId: z.string(),
  counts: z.object(
    Object.fromEntries(COUNTER_BUCKETS.map((b) => [b, z.number().int()])) as Record<
      CounterBucket,
      z.ZodNumber
    >,
  ),
  recountedAt: isoSchema.nullable(),
  /**
   * Per buffering writer, the last flush window whose deltas are applied to this document (set in the same patch
   * as the deltas). A dead writer's stamps above it are what its crash lost; RECOVERED once a survivor applied them.
   */
  flushed: z.record(z.string(), z.number().int()).optional(),
});
export type CounterDoc = z.output<typeof counterDocSchema>;

/**
 * Any counters-container document, system properties included: what a read that judges each document itself takes
 * from the query (MessageStore.listCounterDocs), so one that no longer parses is still seen with its endpoint.
 */
export const anyCounterDocSchema = z.record(z.string(), z.unknown());

/** Endpoint heartbeat probe records, in the `heartbeats` container (partition = endpointId). */
export const HeartbeatStatus = z.enum(['Pending', 'On', 'Off', 'Unknown', 'Unsupported']);
export type HeartbeatStatus = z.output<typeof HeartbeatStatus>;
export const heartbeatWriteSchema = z.object({
  endpointId: endpointIdSchema,
  /** The probe's CorrelationId (else its MessageId): the sender's Pending row and the reply merge on it. */
  probeId: idSchema,
  status: HeartbeatStatus,
  sentAt: isoSchema.nullable().default(null),
  receivedAt: isoSchema.nullable().default(null),
  answeredAt: isoSchema.nullable().default(null),
  sdkVersion: z.string().max(64).nullable().default(null),
  intervalSeconds: z.number().int().min(0).nullable().default(null),
});
export type HeartbeatWrite = z.input<typeof heartbeatWriteSchema>;
export const heartbeatRecordSchema = heartbeatWriteSchema.extend({
  id: z.string(),
  endpointId: z.string(),
  probeId: z.string(),
  updatedAt: isoSchema,
});
export type HeartbeatRecord = z.output<typeof heartbeatRecordSchema>;

/** Heartbeat schedule (one document). Kept away from endpoint data so it can never look like an endpoint. */
export const heartbeatSettingsSchema = z.object({
  enabled: z.boolean().default(false),
  intervalSeconds: z.number().int().min(30).default(300),
  timeoutSeconds: z.number().int().min(5).default(60),
  lastSentAt: isoSchema.nullable().default(null),
});
export type HeartbeatSettings = z.output<typeof heartbeatSettingsSchema>;

/** Liveness of a platform service (the Resolver). */
export const serviceHealthSchema = z.object({
  serviceId: z.string().min(1).max(64),
  status: HeartbeatStatus,
  version: z.string().max(64).nullable().default(null),
  lastSeenAt: isoSchema.nullable().default(null),
  lastProbeSentAt: isoSchema.nullable().default(null),
  lastProbeMessageId: z.string().max(128).nullable().default(null),
  roundTripMs: z.number().min(0).nullable().default(null),
});
export type ServiceHealth = z.output<typeof serviceHealthSchema>;

/** Turns a zod failure into one short line (paths and messages only: never the values, which may be payloads). */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
    .join('; ');
}
