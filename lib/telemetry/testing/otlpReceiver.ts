// A minimal OTLP/HTTP JSON receiver for tests (OTEL_EXPORTER_OTLP_PROTOCOL=http/json): it takes what the real
// exporters of @opentelemetry/sdk-node post to /v1/traces and /v1/metrics on 127.0.0.1 and keeps it as plain
// spans and metric names. Not a collector: no protobuf, no gzip, no retries.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type OtlpValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };

export interface ReceivedSpan {
  service: string;
  scope: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, string | number | boolean>;
}

export interface OtlpReceiver {
  /** http://127.0.0.1:PORT, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  endpoint: string;
  spans: ReceivedSpan[];
  /** Names of the metrics received so far, by service. */
  metricNames: Set<string>;
  /** Requests the receiver could not read (the test should expect none). */
  problems: string[];
  close(): Promise<void>;
}

function value(v: OtlpValue | undefined): string | number | boolean {
  if (!v) return '';
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  return '';
}

type Attr = { key: string; value?: OtlpValue };
const attributes = (list: Attr[] | undefined) => Object.fromEntries((list ?? []).map((a) => [a.key, value(a.value)]));

interface TraceRequest {
  resourceSpans?: Array<{
    resource?: { attributes?: Attr[] };
    scopeSpans?: Array<{
      scope?: { name?: string };
      spans?: Array<{ traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number; attributes?: Attr[] }>;
    }>;
  }>;
}
interface MetricsRequest {
  resourceMetrics?: Array<{ scopeMetrics?: Array<{ metrics?: Array<{ name: string }> }> }>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const metricNames = new Set<string>();
  const problems: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        if (req.method !== 'POST') throw new Error(`${req.method} ${req.url}`);
        if (!String(req.headers['content-type'] ?? '').includes('json')) throw new Error(`content-type ${req.headers['content-type']}`);
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
        if (req.url === '/v1/traces') {
          for (const rs of (body as TraceRequest).resourceSpans ?? []) {
            const service = String(attributes(rs.resource?.attributes)['service.name'] ?? '');
            for (const ss of rs.scopeSpans ?? [])
              for (const s of ss.spans ?? [])
                spans.push({
                  service,
                  scope: ss.scope?.name ?? '',
                  traceId: s.traceId,
                  spanId: s.spanId,
                  parentSpanId: s.parentSpanId ?? '',
                  name: s.name,
                  kind: s.kind,
                  attributes: attributes(s.attributes),
                });
          }
        } else if (req.url === '/v1/metrics') {
          for (const rm of (body as MetricsRequest).resourceMetrics ?? [])
            for (const sm of rm.scopeMetrics ?? []) for (const m of sm.metrics ?? []) metricNames.add(m.name);
        } else if (req.url !== '/v1/logs') throw new Error(`unexpected path ${req.url}`);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } catch (err) {
        problems.push(err instanceof Error ? err.message : String(err));
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    metricNames,
    problems,
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}
