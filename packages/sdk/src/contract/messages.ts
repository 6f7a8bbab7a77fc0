// Schemas of the application-property bag per message type. The Service Bus client hands properties back as
// string | number | boolean | Date | null; these schemas normalize them (ids to strings, counters to integers)
// and reject a bag whose MessageType is unknown or whose values have the wrong shape, naming the problem.
// Required-field rules with their own dead-letter reasons (EventId, EventTypeId on an EventRequest) are the
// SDK's validation step, so those stay optional here.
import { z } from 'zod';
import { describeIssues } from './envelope.ts';
import { MessageType, parseMessageType } from './messageTypes.ts';
import { Address, Prop } from './properties.ts';

/** A wire value read as a string: ids written by other clients may come back as numbers. */
const wireString = z
  .union([z.string(), z.number(), z.boolean()])
  .transform((v) => String(v))
  .nullish()
  .transform((v) => (v == null ? undefined : v));

/** A non-negative integer that may have been written as a number or as a numeric string. */
const wireCount = z
  .union([z.number(), z.string().trim().regex(/^\d+$/, 'must be a non-negative integer').transform(Number)])
  .pipe(z.number().int().nonnegative())
  .nullish()
  .transform((v) => (v == null ? undefined : v));

/** An absolute instant as an ISO-8601 string (a Date from the client is accepted and normalized). */
const wireInstant = z
  .union([z.date().transform((d) => d.toISOString()), z.iso.datetime({ offset: true })])
  .nullish()
  .transform((v) => (v == null ? undefined : v));

const baseShape = {
  [Prop.To]: z.string().min(1, 'To is required'),
  [Prop.From]: wireString,
  [Prop.EventId]: wireString,
  [Prop.EventTypeId]: wireString,
  [Prop.OriginatingMessageId]: wireString,
  [Prop.ParentMessageId]: wireString,
  [Prop.OriginatingFrom]: wireString,
  [Prop.RetryCount]: wireCount,
  [Prop.TraceParent]: wireString,
  [Prop.TraceState]: wireString,
};

const responseShape = {
  ...baseShape,
  [Prop.QueueTimeMs]: wireCount,
  [Prop.ProcessingTimeMs]: wireCount,
  // Any response may carry the dead-letter pair; the Resolver then records DeadLettered whatever the type.
  [Prop.DeadLetterReason]: wireString,
  [Prop.DeadLetterErrorDescription]: wireString,
};

// Loose objects: unknown properties (CloudEvents attributes, Diagnostic-Id, ...) pass through untouched.
const variant = <T extends MessageType, S extends z.ZodRawShape>(type: T, shape: S) =>
  z.looseObject({ ...shape, [Prop.MessageType]: z.literal(type) });

export const eventRequestPropertiesSchema = variant(MessageType.EventRequest, {
  ...baseShape,
  [Prop.OriginalSessionId]: wireString,
  [Prop.DeferralSequence]: wireCount,
  [Prop.ReplaySequence]: wireCount,
  [Prop.ReplayUntil]: wireCount,
});
export const resolutionResponsePropertiesSchema = variant(MessageType.ResolutionResponse, responseShape);
export const errorResponsePropertiesSchema = variant(MessageType.ErrorResponse, responseShape);
export const deferralResponsePropertiesSchema = variant(MessageType.DeferralResponse, responseShape);
export const skipResponsePropertiesSchema = variant(MessageType.SkipResponse, responseShape);
export const unsupportedResponsePropertiesSchema = variant(MessageType.UnsupportedResponse, responseShape);
export const pendingHandoffResponsePropertiesSchema = variant(MessageType.PendingHandoffResponse, {
  ...responseShape,
  [Prop.HandoffReason]: z.string().min(1, 'HandoffReason is required on a PendingHandoffResponse'),
  [Prop.ExternalJobId]: wireString,
  [Prop.ExpectedBy]: wireInstant,
});
export const resubmissionRequestPropertiesSchema = variant(MessageType.ResubmissionRequest, baseShape);
export const skipRequestPropertiesSchema = variant(MessageType.SkipRequest, baseShape);
export const retryRequestPropertiesSchema = variant(MessageType.RetryRequest, baseShape);
export const continuationRequestPropertiesSchema = variant(MessageType.ContinuationRequest, baseShape);
export const processDeferredRequestPropertiesSchema = variant(MessageType.ProcessDeferredRequest, {
  ...baseShape,
  [Prop.ReplayUntil]: wireCount,
  [Prop.SessionId]: wireString,
});
const handoffCommandShape = { ...baseShape, [Prop.HandedOffByMessageId]: wireString };
export const handoffCompletedRequestPropertiesSchema = variant(MessageType.HandoffCompletedRequest, handoffCommandShape);
export const handoffFailedRequestPropertiesSchema = variant(MessageType.HandoffFailedRequest, handoffCommandShape);

export const nimbusPropertiesSchema = z
  .discriminatedUnion(Prop.MessageType, [
    eventRequestPropertiesSchema,
    resolutionResponsePropertiesSchema,
    errorResponsePropertiesSchema,
    deferralResponsePropertiesSchema,
    skipResponsePropertiesSchema,
    unsupportedResponsePropertiesSchema,
    pendingHandoffResponsePropertiesSchema,
    resubmissionRequestPropertiesSchema,
    skipRequestPropertiesSchema,
    retryRequestPropertiesSchema,
    continuationRequestPropertiesSchema,
    processDeferredRequestPropertiesSchema,
    handoffCompletedRequestPropertiesSchema,
    handoffFailedRequestPropertiesSchema,
  ])
  .superRefine((props, ctx) => {
    // The Deferred subscription's copy must say where it came from and where it stands in the FIFO.
    if (props.To === Address.Deferred && props.MessageType === MessageType.EventRequest) {
      if (props.OriginalSessionId == null) {
        ctx.addIssue({ code: 'custom', path: [Prop.OriginalSessionId], message: 'required on a parked copy (To = Deferred)' });
      }
      if (props.DeferralSequence == null) {
        ctx.addIssue({ code: 'custom', path: [Prop.DeferralSequence], message: 'required on a parked copy (To = Deferred)' });
      }
    }
  });

export type NimbusProperties = z.infer<typeof nimbusPropertiesSchema>;
export type EventRequestProperties = z.infer<typeof eventRequestPropertiesSchema>;
export type ResolutionResponseProperties = z.infer<typeof resolutionResponsePropertiesSchema>;
export type ErrorResponseProperties = z.infer<typeof errorResponsePropertiesSchema>;
export type DeferralResponseProperties = z.infer<typeof deferralResponsePropertiesSchema>;
export type SkipResponseProperties = z.infer<typeof skipResponsePropertiesSchema>;
export type UnsupportedResponseProperties = z.infer<typeof unsupportedResponsePropertiesSchema>;
export type PendingHandoffResponseProperties = z.infer<typeof pendingHandoffResponsePropertiesSchema>;
export type ResubmissionRequestProperties = z.infer<typeof resubmissionRequestPropertiesSchema>;
export type SkipRequestProperties = z.infer<typeof skipRequestPropertiesSchema>;
export type RetryRequestProperties = z.infer<typeof retryRequestPropertiesSchema>;
export type ContinuationRequestProperties = z.infer<typeof continuationRequestPropertiesSchema>;
export type ProcessDeferredRequestProperties = z.infer<typeof processDeferredRequestPropertiesSchema>;
export type HandoffCompletedRequestProperties = z.infer<typeof handoffCompletedRequestPropertiesSchema>;
export type HandoffFailedRequestProperties = z.infer<typeof handoffFailedRequestPropertiesSchema>;

export type ParsedProperties = { ok: true; properties: NimbusProperties } | { ok: false; problem: string };

/** Validates a received property bag; the problem text is fit for a dead-letter reason (no payload, no secrets). */
export function parseNimbusProperties(applicationProperties: unknown): ParsedProperties {
  const bag = applicationProperties ?? {};
  if (typeof bag !== 'object' || Array.isArray(bag)) return { ok: false, problem: 'invalid NimBus properties: not a property bag' };
  const type = (bag as Record<string, unknown>)[Prop.MessageType];
  if (parseMessageType(type) === undefined) {
    const shown = typeof type === 'string' ? `'${type.slice(0, 60)}'` : type == null ? 'missing' : `of type ${typeof type}`;
    return { ok: false, problem: `invalid NimBus properties: MessageType ${shown} is not a NimBus message type` };
  }
  const parsed = nimbusPropertiesSchema.safeParse(bag);
  if (parsed.success) return { ok: true, properties: parsed.data };
  return { ok: false, problem: `invalid NimBus properties: ${describeIssues(parsed.error)}` };
}

export type WireValue = string | number | boolean;

/**
 * Builds the bag to send: drops null, undefined and empty-string values (an absent From is what the forwarder
 * rules test with `From IS NULL`, so an empty From must not be written).
 */
export function toWireProperties(props: Record<string, WireValue | null | undefined>): Record<string, WireValue> {
  const out: Record<string, WireValue> = {};
  for (const [key, value] of Object.entries(props)) {
    if (value == null || value === '') continue;
    out[key] = value;
  }
  return out;
}
