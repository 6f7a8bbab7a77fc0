// The message body envelope. Native NimBus bodies are UTF-8 JSON of the shape
//   {"EventContent": {"EventTypeId": "...", "EventJson": "<the domain event, serialized to a string>"},
//    "ErrorContent": {"ErrorText": "...", "ErrorType": "...", "ExceptionStackTrace": null, "ExceptionSource": null}}
// Either half may be null. EventJson is JSON inside a string (double-encoded) on purpose: the envelope stays the
// same whatever the event, and the payload is only parsed by whoever knows its type.
import { z } from 'zod';

/** Deepest nesting accepted in an event payload; deeper payloads are a permanent failure, never retried. */
export const MAX_PAYLOAD_DEPTH = 32;

export const eventContentSchema = z.object({
  EventTypeId: z.string().nullable(),
  EventJson: z.string().nullable(),
});
export type EventContent = z.infer<typeof eventContentSchema>;

export const errorContentSchema = z.object({
  ErrorText: z.string().nullable(),
  ErrorType: z.string().nullable().default(null),
  ExceptionStackTrace: z.string().nullable().default(null),
  ExceptionSource: z.string().nullable().default(null),
});
export type ErrorContent = z.infer<typeof errorContentSchema>;

export const messageContentSchema = z.object({
  EventContent: eventContentSchema.nullable().default(null),
  ErrorContent: errorContentSchema.nullable().default(null),
});
export type MessageContent = z.infer<typeof messageContentSchema>;

export const EMPTY_CONTENT: MessageContent = Object.freeze({ EventContent: null, ErrorContent: null });

/** Serializes an envelope with every field present (nulls included), as the wire format expects. */
export function encodeBody(content: {
  EventContent?: EventContent | null;
  ErrorContent?: Partial<ErrorContent> | null;
}): string {
  const error = content.ErrorContent
    ? {
        ErrorText: content.ErrorContent.ErrorText ?? null,
        ErrorType: content.ErrorContent.ErrorType ?? null,
        ExceptionStackTrace: content.ErrorContent.ExceptionStackTrace ?? null,
        ExceptionSource: content.ErrorContent.ExceptionSource ?? null,
      }
    : null;
  return JSON.stringify({ EventContent: content.EventContent ?? null, ErrorContent: error });
}

/** Wraps a domain event: the payload is serialized once more into EventJson. */
export function eventBody(eventTypeId: string, payload: unknown): string {
  return encodeBody({ EventContent: { EventTypeId: eventTypeId, EventJson: JSON.stringify(payload) } });
}

export type DecodedBody =
  | { ok: true; content: MessageContent }
  | { ok: false; content: MessageContent; problem: string };

/** The envelope's own keys: an object with neither (and not empty) is some other JSON, not an envelope. */
const ENVELOPE_KEYS = ['EventContent', 'ErrorContent'] as const;

/**
 * Reads a body as the envelope. A body that is absent, not JSON or not the envelope's shape yields empty content
 * plus a problem description - never a throw - so paths that only need properties (heartbeat, skip, lifecycle)
 * still run, and the caller decides whether the missing content is fatal.
 *
 * A JSON object counts as an envelope when it names EventContent or ErrorContent, or is `{}` (both halves absent,
 * as a serializer that leaves nulls out writes an empty one); keys beside them are ignored, so a newer sender's
 * additions still read. Any other object (a raw domain event published without the envelope) is refused: read as
 * an empty envelope, it used to surface as "the event payload (EventJson) is missing", naming the wrong problem.
 */
export function decodeBody(body: unknown): DecodedBody {
  if (body == null || body === '') return { ok: false, content: EMPTY_CONTENT, problem: 'the message has no body' };
  let value: unknown = body;
  if (body instanceof Uint8Array) value = new TextDecoder('utf-8', { fatal: false }).decode(body);
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value);
    } catch {
      return { ok: false, content: EMPTY_CONTENT, problem: 'the body is not valid JSON' };
    }
  }
  if (isPlainObject(value)) {
    const keys = Object.keys(value);
    if (keys.length > 0 && !ENVELOPE_KEYS.some((k) => k in value)) {
      return {
        ok: false,
        content: EMPTY_CONTENT,
        problem: 'the body is not a NimBus envelope: a JSON object without EventContent or ErrorContent',
      };
    }
  }
  const parsed = messageContentSchema.safeParse(value);
  if (!parsed.success) {
    return { ok: false, content: EMPTY_CONTENT, problem: `the body is not a NimBus envelope: ${describeIssues(parsed.error)}` };
  }
  return { ok: true, content: parsed.data };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export type PayloadResult =
  | { ok: true; value: unknown }
  | { ok: false; reason: 'missing' | 'null' | 'malformed' | 'too-deep'; problem: string };

/**
 * Parses EventJson with the payload-safety rules: missing, literal null, malformed or nested deeper than
 * MAX_PAYLOAD_DEPTH are all refused (the SDK treats these as permanent failures).
 */
export function parseEventPayload(eventJson: string | null | undefined, maxDepth = MAX_PAYLOAD_DEPTH): PayloadResult {
  if (eventJson == null || eventJson.trim() === '') {
    return { ok: false, reason: 'missing', problem: 'the event payload (EventJson) is missing' };
  }
  let value: unknown;
  try {
    value = JSON.parse(eventJson);
  } catch {
    return { ok: false, reason: 'malformed', problem: 'the event payload (EventJson) is not valid JSON' };
  }
  if (value === null) return { ok: false, reason: 'null', problem: 'the event payload (EventJson) is null' };
  const depth = jsonDepth(value, maxDepth + 1);
  if (depth > maxDepth) {
    return { ok: false, reason: 'too-deep', problem: `the event payload nests deeper than ${maxDepth} levels` };
  }
  return { ok: true, value };
}

/** Nesting depth of a parsed JSON value (a scalar is 0, `{}` and `[]` are 1); stops counting at `limit`. */
export function jsonDepth(value: unknown, limit = Number.POSITIVE_INFINITY): number {
  // Iterative, so a hostile payload cannot exhaust the call stack.
  let max = 0;
  const stack: Array<{ v: unknown; d: number }> = [{ v: value, d: 0 }];
  while (stack.length > 0) {
    const { v, d } = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    const depth = d + 1;
    if (depth > max) max = depth;
    if (max >= limit) return max;
    const children = Array.isArray(v) ? v : Object.values(v);
    for (const child of children) stack.push({ v: child, d: depth });
  }
  return max;
}

/** One line naming each schema problem with its path, for error messages and dead-letter reasons. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const path = issue.path.length > 0 ? issue.path.map(String).join('.') : '(root)';
      return `${path}: ${issue.message}`;
    })
    .join('; ');
}
