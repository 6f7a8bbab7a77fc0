// Trace context on the wire and the messaging spans (OpenTelemetry semantic conventions for messaging,
// `messaging.system = servicebus`). Only @opentelemetry/api is used: with no SDK registered (OTEL_* unset) each
// helper is one check and a direct call of its callback (tracingEnabled).
// A process that registers an SDK (lib/telemetry) gets real spans and W3C `traceparent` on every message sent.
//
// The W3C header is read and written here rather than through the global propagator: the contract names the
// property (Prop.TraceParent) and the format is fixed, so a process with a different OTEL_PROPAGATORS setting
// still continues a NimBus trace.
import {
  context,
  createTraceState,
  INVALID_SPAN_CONTEXT,
  isSpanContextValid,
  ProxyTracerProvider,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type SpanContext,
} from '@opentelemetry/api';
import type { ServiceBusMessage } from '@azure/service-bus';
import { Prop } from './contract/properties.ts';

/** The instrumentation scope of every NimBus span. */
export const TRACER_NAME = 'nimbus.servicebus';
// A ProxyTracer: it forwards to the provider registered later (telemetry starts before traffic, not before import).
const tracer = trace.getTracer(TRACER_NAME);

/** What `messaging.operation.type` says (semantic conventions 1.27+: `send` replaced the older `publish`). */
export type MessagingOperationType = 'send' | 'process' | 'settle';

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** The span context a W3C `traceparent` (and `tracestate`) names, or undefined when it is missing or malformed. */
export function parseTraceparent(traceparent: unknown, tracestate?: unknown): SpanContext | undefined {
  if (typeof traceparent !== 'string' || traceparent.length > 512) return undefined;
  const m = TRACEPARENT.exec(traceparent.trim());
  if (!m) return undefined;
  const [, version, traceId, spanId, flags, rest] = m;
  // Version ff is invalid; version 00 has exactly four parts (later versions may append more).
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  const sc: SpanContext = { traceId: traceId!, spanId: spanId!, traceFlags: Number.parseInt(flags!, 16) & 1, isRemote: true };
  if (!isSpanContextValid(sc)) return undefined;
  if (typeof tracestate === 'string' && tracestate !== '' && tracestate.length <= 512) sc.traceState = createTraceState(tracestate);
  return sc;
}

export function formatTraceparent(sc: SpanContext): string {
  return `00-${sc.traceId}-${sc.spanId}-0${(sc.traceFlags & 1).toString(16)}`;
}

/** The trace id a message's properties carry (lower-case hex), or null. */
export function traceIdOf(properties: Readonly<Record<string, unknown>> | undefined): string | null {
  return parseTraceparent(properties?.[Prop.TraceParent])?.traceId ?? null;
}

/** The context to continue: the message's remote parent, if it carries one. */
export function extractTraceContext(properties: Readonly<Record<string, unknown>> | undefined, base: Context = ROOT_CONTEXT): Context {
  const sc = parseTraceparent(properties?.[Prop.TraceParent], properties?.[Prop.TraceState]);
  return sc ? trace.setSpanContext(base, sc) : base;
}

/** Puts the span context of `ctx` (the active one by default) on outgoing properties; nothing when there is none. */
export function injectTraceContext(properties: Record<string, unknown>, ctx: Context = context.active()): void {
  const sc = trace.getSpanContext(ctx);
  if (!sc || !isSpanContextValid(sc)) return;
  properties[Prop.TraceParent] = formatTraceparent(sc);
  const state = sc.traceState?.serialize();
  if (state) properties[Prop.TraceState] = state;
  else delete properties[Prop.TraceState];
}

// What the API's own proxy delegates to while no SDK is registered.
const NOOP_PROVIDER = new ProxyTracerProvider().getDelegate();
const NOOP_SPAN = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/**
 * Whether an SDK is registered. Off, every helper below is one call of its callback: no span, no attributes, no
 * context switch (messages keep the traceparent they carry, copied as any other property). A provider from another
 * copy of the API counts as on.
 */
export function tracingEnabled(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegate() !== NOOP_PROVIDER;
}

async function inSpan<T>(name: string, kind: SpanKind, attributes: Attributes, parent: Context, fn: (span: Span) => Promise<T>): Promise<T> {
  const span = tracer.startSpan(name, { kind, attributes }, parent);
  // Sampled out and nothing to continue: no context to switch to.
  if (!span.isRecording() && !isSpanContextValid(span.spanContext())) return fn(span);
  try {
    return await context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (err) {
    span.recordException(err instanceof Error ? err : String(err));
    span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.name : 'error' });
    if (err instanceof Error) span.setAttribute('error.type', err.name);
    throw err;
  } finally {
    span.end();
  }
}

function messageAttributes(m: { messageId?: unknown; correlationId?: unknown; sessionId?: unknown }): Attributes {
  const a: Attributes = {};
  if (typeof m.messageId === 'string' || typeof m.messageId === 'number') a['messaging.message.id'] = String(m.messageId);
  if (typeof m.correlationId === 'string' && m.correlationId !== '') a['messaging.message.conversation_id'] = m.correlationId;
  if (typeof m.sessionId === 'string' && m.sessionId !== '') a['messaging.servicebus.message.session_id'] = m.sessionId;
  return a;
}

/**
 * A `send {topic}` producer span around sending `messages`; each message gets the span's traceparent (the
 * messages are changed in place, before `send` runs). With tracing off the messages keep what they carry.
 */
export function withSendSpan<T>(
  topic: string,
  messages: ServiceBusMessage | readonly ServiceBusMessage[],
  send: () => Promise<T>,
  extra: Attributes = {},
  /** The context to continue; the active one by default. */
  parent: Context = context.active(),
): Promise<T> {
  if (!tracingEnabled()) return send();
  const list: readonly ServiceBusMessage[] = Array.isArray(messages) ? messages : [messages as ServiceBusMessage];
  const attributes: Attributes = {
    'messaging.system': 'servicebus',
    'messaging.operation.type': 'send',
    'messaging.operation.name': 'send',
    'messaging.destination.name': topic,
    ...(list.length === 1 ? messageAttributes(list[0]!) : { 'messaging.batch.message_count': list.length }),
    ...extra,
  };
  return inSpan(`send ${topic}`, SpanKind.PRODUCER, attributes, parent, async (span) => {
    const ctx = trace.setSpan(parent, span);
    for (const m of list) {
      const props = (m.applicationProperties ??= {}) as Record<string, unknown>;
      injectTraceContext(props, ctx);
    }
    return send();
  });
}

/** The received message fields the process span reads. */
export interface ReceivedForTrace {
  messageId?: unknown;
  correlationId?: unknown;
  sessionId?: unknown;
  deliveryCount?: number;
  applicationProperties?: Record<string, unknown>;
}

/**
 * A `process {topic}` consumer span around handling one received message, continuing the trace the message
 * carries (its traceparent is the parent). Sends inside `fn` carry this span's context onward.
 */
export function withProcessSpan<T>(
  message: ReceivedForTrace,
  where: { topic: string; subscription: string },
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  if (!tracingEnabled()) return fn(NOOP_SPAN);
  const attributes: Attributes = {
    'messaging.system': 'servicebus',
    'messaging.operation.type': 'process',
    'messaging.operation.name': 'process',
    'messaging.destination.name': where.topic,
    'messaging.destination.subscription.name': `${where.topic}/${where.subscription}`,
    ...messageAttributes(message),
  };
  if (typeof message.deliveryCount === 'number') attributes['messaging.servicebus.message.delivery_count'] = message.deliveryCount;
  return inSpan(`process ${where.topic}`, SpanKind.CONSUMER, attributes, extractTraceContext(message.applicationProperties, context.active()), fn);
}

/** The context a received message continues (for work done outside its process span, e.g. a batched write). */
export function processContextOf(message: ReceivedForTrace): Context | undefined {
  if (!tracingEnabled()) return undefined;
  return extractTraceContext(message.applicationProperties, context.active());
}

/** A `{disposition} {topic}` settle span (complete, abandon, dead_letter, defer) under the active context. */
export function withSettleSpan<T>(
  disposition: 'complete' | 'abandon' | 'dead_letter' | 'defer',
  where: { topic: string; subscription: string },
  fn: () => Promise<T>,
  parent: Context = context.active(),
): Promise<T> {
  if (!tracingEnabled()) return fn();
  const attributes: Attributes = {
    'messaging.system': 'servicebus',
    'messaging.operation.type': 'settle',
    'messaging.operation.name': disposition,
    'messaging.destination.name': where.topic,
    'messaging.destination.subscription.name': `${where.topic}/${where.subscription}`,
    'messaging.servicebus.disposition_status': disposition,
  };
  return inSpan(`${disposition} ${where.topic}`, SpanKind.CLIENT, attributes, parent, () => fn());
}

/** An internal span (the Resolver's store write, a Manager operation) under `parent` (the active context by default). */
export function withInternalSpan<T>(name: string, attributes: Attributes, fn: (span: Span) => Promise<T>, parent?: Context): Promise<T> {
  if (!tracingEnabled()) return fn(NOOP_SPAN);
  return inSpan(name, SpanKind.INTERNAL, attributes, parent ?? context.active(), fn);
}
