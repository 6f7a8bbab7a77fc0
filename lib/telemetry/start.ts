// Starting OpenTelemetry export in a NimBus process (console, Resolver, demo, `npm start`), configured only by the
// standard OTEL_* variables. Off unless an OTLP endpoint is named: then nothing is loaded (@opentelemetry/sdk-node
// is imported dynamically) and the instruments and spans of @opentelemetry/api stay no-ops. The SDK (packages/sdk)
// never imports this: a host application brings its own OpenTelemetry setup, and NimBus's spans join it.
//
// When on, NodeSDK reads everything from the environment itself: OTEL_EXPORTER_OTLP_PROTOCOL (http/protobuf by
// default, http/json, grpc), OTEL_EXPORTER_OTLP_HEADERS, OTEL_TRACES_SAMPLER, OTEL_METRIC_EXPORT_INTERVAL, … Traces
// and metrics (the Resolver's and the console's meters) go to the same endpoint.

export interface Telemetry {
  readonly enabled: boolean;
  /** Flushes what is buffered and stops exporting (call on shutdown; bounded by the exporters' own timeouts). */
  shutdown(): Promise<void>;
}

const OFF: Telemetry = { enabled: false, shutdown: async () => undefined };

/** Why telemetry is off, or undefined when the environment asks for it. */
export function telemetryOffReason(env: Record<string, string | undefined> = process.env): string | undefined {
  const set = (name: string) => (env[name] ?? '').trim() !== '';
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return 'OTEL_SDK_DISABLED=true';
  const endpoint = ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT'].some(set);
  if (!endpoint) return 'no OTEL_EXPORTER_OTLP_ENDPOINT';
  return undefined;
}

// On globalThis: Next bundles instrumentation.ts apart from server/console.ts, and one process must start one SDK.
const SLOT = Symbol.for('nimbus.telemetry');
const slot = ((globalThis as Record<symbol, unknown>)[SLOT] ??= {}) as { running?: Promise<Telemetry> };

/**
 * Starts export once per process (later calls return the first one's handle). `serviceName` is used when
 * OTEL_SERVICE_NAME is unset, so each part shows under its own name without extra settings.
 */
export function startTelemetry(serviceName: string, env: Record<string, string | undefined> = process.env): Promise<Telemetry> {
  if (telemetryOffReason(env) !== undefined) return Promise.resolve(OFF);
  slot.running ??= (async () => {
    const { NodeSDK } = await import('@opentelemetry/sdk-node');
    const explicitName = (env.OTEL_SERVICE_NAME ?? '').trim() !== '';
    // No auto-instrumentation: NimBus's own spans (packages/sdk/src/tracing.ts) are the ones that carry meaning, and
    // patching http/fetch would put a span on every Cosmos request.
    const sdk = new NodeSDK(explicitName ? {} : { serviceName });
    sdk.start();
    let stopped: Promise<void> | undefined;
    return {
      enabled: true,
      shutdown: () => (stopped ??= sdk.shutdown().catch(() => undefined)),
    };
  })();
  return slot.running;
}
