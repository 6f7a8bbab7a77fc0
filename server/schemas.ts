// Request shapes of the console API (route params and bodies), validated with zod in the route handlers.
import { z } from 'zod';
import { MAX_PAYLOAD_DEPTH, jsonDepth } from '@nimbus/sdk/contract';
import { exactIdTarget } from './exactIdFilterSchema.ts';
import { EXACT_ID_FILTERS } from './exactIdFilters.ts';

/** An endpoint id in a route's path: the catalog's names, by the id rule's own length and characters. */
export const endpointIdParam = z
  .string()
  .min(1)
  .max(EXACT_ID_FILTERS.endpointId.max)
  .regex(EXACT_ID_FILTERS.endpointId.chars, 'endpoint ids are letters, digits, ".", "_" and "-"');
export const idParam = z.string().min(1).max(128);

export const endpointParams = z.object({ endpointId: endpointIdParam });
export const eventParams = z.object({ endpointId: endpointIdParam, eventId: idParam });
export const handoffParams = z.object({ endpointId: endpointIdParam, eventId: idParam, messageId: idParam });

/**
 * A JSON payload an operator or agent may send: anything but null, not nested deeper than the SDK accepts (a deeper
 * one is a permanent failure in every consumer: it would be dead-lettered). The one definition of that rule: the
 * resubmit and publish bodies and the MCP tools use it.
 */
export const payloadSchema = z
  .unknown()
  .refine((v) => v !== undefined && v !== null, 'payload is required and must not be null')
  .refine((v) => jsonDepth(v, MAX_PAYLOAD_DEPTH + 1) <= MAX_PAYLOAD_DEPTH, `payload nests deeper than ${MAX_PAYLOAD_DEPTH} levels`);

/**
 * The event's lastMessageId as the caller saw it (the event page sends the one it shows): the command then acts on
 * that version only, and a row that has moved on since is refused with 409 (Manager.execute, seenMessageId). Optional:
 * callers without it act on the event as the Manager reads it, as before.
 */
const seenMessageId = idParam.optional();

/**
 * Resubmit body: absent/empty (or only `lastMessageId`) = resubmit the stored payload; `{ payload, eventTypeId? }` =
 * edited resubmission; `lastMessageId` with either pins the version the operator saw.
 */
export const resubmitBody = z
  .object({
    payload: payloadSchema.optional(),
    /** The type to resubmit as, exactly as sent (" OrderPlaced" is no type of the catalog: 400, not OrderPlaced). */
    eventTypeId: exactIdTarget('eventTypeId').optional(),
    lastMessageId: seenMessageId,
  })
  .strict()
  .refine((b) => b.eventTypeId === undefined || b.payload !== undefined, { message: 'eventTypeId goes with an edited payload', path: ['eventTypeId'] })
  .optional();

/**
 * A handoff's result (what the external work produced): optional, but when given it is the completion's event content,
 * which the subscriber parses as a payload (the Resolver records it in history, not as the event's payload), so it is
 * held to the same depth as a payload (deeper ones are a
 * permanent failure in the SDK, and far deeper ones would overflow the stack of the JSON.stringify that sends it).
 */
export const handoffResultSchema = z
  .unknown()
  .refine((v) => jsonDepth(v, MAX_PAYLOAD_DEPTH + 1) <= MAX_PAYLOAD_DEPTH, `result nests deeper than ${MAX_PAYLOAD_DEPTH} levels`)
  .optional();

/** Skip body: absent/empty, or `{ lastMessageId }` to pin the version the operator saw (resubmitBody). */
export const skipBody = z.object({ lastMessageId: seenMessageId }).strict().optional();

export const handoffCompleteBody = z
  .object({
    note: z.string().max(2000).optional(),
    result: handoffResultSchema,
  })
  .strict()
  .optional();

export const handoffFailBody = z
  .object({
    errorText: z.string().trim().min(1, 'errorText is required').max(4000),
    errorType: z.string().trim().min(1).max(200).optional(),
  })
  .strict();

export const MAX_BULK = 200;
export const bulkBody = z
  .object({
    endpointId: endpointIdParam,
    eventIds: z.array(idParam).min(1, 'eventIds is empty').max(MAX_BULK, `at most ${MAX_BULK} events per synchronous request; POST /api/operations acts on any number as a job`),
  })
  .strict();
