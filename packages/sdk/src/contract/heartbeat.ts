// The platform heartbeat: a probe is an EventRequest of the reserved event type below, sent straight to an
// endpoint topic with From = 'Manager' on session 'Heartbeat'; the SDK answers with a ResolutionResponse whose
// content carries the stamped payload. The Resolver diverts these to the heartbeat store.
import { z } from 'zod';

export const HEARTBEAT_EVENT_TYPE_ID = 'NimBus.Platform.Heartbeat';

/** Heartbeat detection is case-insensitive, matching every implementation that answers probes. */
export function isHeartbeatEventType(eventTypeId: string | null | undefined): boolean {
  return eventTypeId != null && eventTypeId.toLowerCase() === HEARTBEAT_EVENT_TYPE_ID.toLowerCase();
}

const instant = z.iso.datetime({ offset: true });

/** What the probe carries (in EventContent.EventJson). */
export const heartbeatRequestSchema = z.object({
  /** When the scheduler sent the probe. */
  ForwardSendTime: instant.nullable().optional(),
});
export type HeartbeatRequest = z.infer<typeof heartbeatRequestSchema>;

/** What the answer carries: the probe's fields plus the endpoint's stamps, for round-trip time. */
export const heartbeatResponseSchema = heartbeatRequestSchema.extend({
  ForwardReceivedTime: instant.nullable().optional(),
  BackwardSendTime: instant.nullable().optional(),
  Endpoint: z.string().nullable().optional(),
  SdkVersion: z.string().nullable().optional(),
});
export type HeartbeatResponse = z.infer<typeof heartbeatResponseSchema>;

/**
 * Reads a heartbeat payload leniently: a blank, malformed or foreign payload degrades to an empty one, because a
 * probe must be answered (and a reply recorded) whatever its body says.
 */
export function readHeartbeatPayload(eventJson: string | null | undefined): HeartbeatResponse {
  if (eventJson == null || eventJson.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(eventJson);
  } catch {
    return {};
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return {};
  // Field by field, so one bad stamp does not lose the others (e.g. the ForwardSendTime needed for round trip).
  const out: Record<string, unknown> = {};
  const shape = heartbeatResponseSchema.shape;
  for (const key of Object.keys(shape) as Array<keyof typeof shape>) {
    const field = shape[key].safeParse((value as Record<string, unknown>)[key]);
    if (field.success && field.data != null) out[key] = field.data;
  }
  return out as HeartbeatResponse;
}
