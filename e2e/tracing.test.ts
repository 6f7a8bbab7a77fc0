// One trace across the platform: the real emulator and embedded Cosmos, the demo endpoints, the Resolver and the
// Manager in this process, OpenTelemetry started by lib/telemetry from OTEL_* variables alone, exporting over
// OTLP/HTTP JSON to a receiver on 127.0.0.1. A published demo event must yield the publisher's send span, the
// consuming endpoint's process span, its response's send span and the Resolver's process and write spans, all in
// one trace with parent links in that order; an operator's resubmission (Manager command) must be the parent of
// the handler that processes it. The Resolver must record the trace id on the history entry.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../lib/telemetry/testing/otlpReceiver.ts';
import { startTelemetry, type Telemetry } from '../lib/telemetry/start.ts';
import { startConsoleTestStack, type ConsoleTestStack } from '../server/testing/stack.ts';
import { startResolver, type ResolverHandle } from '../resolver-worker/index.ts';
import { startDemo, DemoEndpoint, DemoEventType, type RunningDemo } from '../demo/index.ts';
import { createPublisher, sessionKeysFromCatalog, type Publisher } from '@nimbus/sdk';
import { Manager } from '../server/manager/manager.ts';
import { eventDetails } from '../server/queries.ts';
import { endProcessAfterResults } from '../packages/sdk/e2e/harness.ts';

// What the Service Bus client leaves pending once the Resolver and the hosts are closed (a receiver still opening
// keeps a 60 s timer) held this process up for 60 s after its last result; harness.ts explains the exit.
endProcessAfterResults();

const SPAN_KIND = { internal: 1, client: 3, producer: 4, consumer: 5 } as const;

let receiver: OtlpReceiver;
let telemetry: Telemetry;
let stack: ConsoleTestStack;
let resolver: ResolverHandle;
let demo: RunningDemo;
let storefront: Publisher;
let manager: Manager;

before(async () => {
  receiver = await startOtlpReceiver();
  // Only the standard variables: the same a deployment sets.
  Object.assign(process.env, {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_SERVICE_NAME: 'nimbus-tracing-test',
    OTEL_BSP_SCHEDULE_DELAY: '100',
    OTEL_METRIC_EXPORT_INTERVAL: '500',
    OTEL_LOGS_EXPORTER: 'none',
  });
  telemetry = await startTelemetry('unused-when-OTEL_SERVICE_NAME-is-set');
  assert.equal(telemetry.enabled, true);
  stack = await startConsoleTestStack(`trace-${randomUUID().slice(0, 8)}`);
  const silent = pino({ level: 'silent' });
  resolver = startResolver({ client: stack.serviceBus.client, store: stack.store, log: silent, sessionIdleTimeoutMs: 200 });
  demo = await startDemo({ client: stack.serviceBus.client, catalog: stack.catalog, ratePerSecond: 0, logger: silent, timings: { sessionIdleTimeoutMs: 300 } });
  storefront = createPublisher({ client: stack.serviceBus.client, endpointId: DemoEndpoint.storefront, sessionKeys: sessionKeysFromCatalog(stack.catalog) });
  manager = new Manager({ store: stack.store, client: stack.serviceBus.client });
});

after(async () => {
  await manager?.close().catch(() => undefined);
  await storefront?.close().catch(() => undefined);
  await demo?.stop().catch(() => undefined);
  await resolver?.stop().catch(() => undefined);
  await stack?.close().catch(() => undefined);
  await telemetry?.shutdown();
  await receiver?.close();
});

async function eventually<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 90_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const inTrace = (traceId: string) => receiver.spans.filter((s) => s.traceId === traceId);
const childOf = (parent: ReceivedSpan, pred: (s: ReceivedSpan) => boolean) =>
  receiver.spans.find((s) => s.traceId === parent.traceId && s.parentSpanId === parent.spanId && pred(s));
const describeTrace = (traceId: string) => inTrace(traceId).map((s) => `${s.name} ${s.spanId}<-${s.parentSpanId || 'root'}`).join('\n');

test('a published event: publisher → endpoint handler → response → Resolver write, one trace with parent links in order', async () => {
  const customerId = `trace-${randomUUID().slice(0, 8)}`;
  const published = await storefront.publish(DemoEventType.CustomerRegistered, { customerId, name: 'Trace Test' });

  const send = await eventually('the publisher send span', () =>
    receiver.spans.find((s) => s.name === `send ${DemoEndpoint.storefront}` && s.attributes['messaging.message.id'] === published.messageId),
  );
  assert.equal(send.kind, SPAN_KIND.producer);
  assert.equal(send.service, 'nimbus-tracing-test');
  assert.equal(send.scope, 'nimbus.servicebus');
  assert.equal(send.attributes['messaging.system'], 'servicebus');
  assert.equal(send.attributes['messaging.operation.type'], 'send');
  assert.equal(send.attributes['messaging.destination.name'], DemoEndpoint.storefront);
  assert.equal(send.parentSpanId, '', 'the publish starts the trace');

  // The CRM handles CustomerRegistered: its process span continues the publisher's send span.
  const crmProcess = await eventually(`the CRM process span (trace so far:\n${describeTrace(send.traceId)})`, () =>
    childOf(send, (s) => s.name === `process ${DemoEndpoint.crm}`),
  );
  assert.equal(crmProcess.kind, SPAN_KIND.consumer);
  assert.equal(crmProcess.attributes['messaging.operation.type'], 'process');
  assert.equal(crmProcess.attributes['messaging.destination.subscription.name'], `${DemoEndpoint.crm}/${DemoEndpoint.crm}`);
  assert.equal(crmProcess.attributes['nimbus.delivery.result'], 'completed');

  // Its response is sent inside the process span, and the message is completed there too.
  const response = await eventually('the response send span', () => childOf(crmProcess, (s) => s.name === `send ${DemoEndpoint.crm}`));
  assert.equal(response.kind, SPAN_KIND.producer);
  const settle = await eventually('the settle span', () => childOf(crmProcess, (s) => s.name === `complete ${DemoEndpoint.crm}`));
  assert.equal(settle.attributes['messaging.operation.type'], 'settle');
  assert.equal(settle.attributes['messaging.servicebus.disposition_status'], 'complete');

  // The Resolver processes the response as the response's child and writes its outcome.
  const resolverProcess = await eventually(`the Resolver process span (trace so far:\n${describeTrace(send.traceId)})`, () =>
    childOf(response, (s) => s.name === 'process Resolver'),
  );
  assert.equal(resolverProcess.kind, SPAN_KIND.consumer);
  assert.equal(resolverProcess.attributes['messaging.destination.name'], 'Resolver');
  const writes = await eventually('the Resolver write span', () => {
    const w = inTrace(send.traceId).filter((s) => s.name === `record ${DemoEndpoint.crm}`);
    return w.length > 0 ? w : undefined;
  });
  // The write is the response's own (a child of its process span) or the write of the row's batch (the request
  // copy and the response in one receive), which continues the same trace.
  for (const w of writes) assert.equal(w.kind, SPAN_KIND.internal);
  const eventId = String(writes[0]!.attributes['nimbus.event_id']);
  assert.match(eventId, /.+/);
  // The settlement follows the batch's writes, and its span may reach the receiver in a later export.
  await eventually(`the Resolver settles the response under its process span (trace so far:\n${describeTrace(send.traceId)})`, () =>
    inTrace(send.traceId).some((s) => s.name === 'complete Resolver' && s.parentSpanId === resolverProcess.spanId) ? true : undefined,
  );

  // Every span of the chain shares the one trace id.
  for (const s of [crmProcess, response, settle, resolverProcess, ...writes]) assert.equal(s.traceId, send.traceId);

  // The history entries carry the trace id, for the console's link.
  const history = await eventually('the history entries', async () => {
    const page = await stack.store.listHistory(eventId);
    return page.items.length >= 2 ? page.items : undefined;
  });
  for (const h of history) assert.equal(h.traceId, send.traceId, `${h.messageType} carries the trace id`);
  // The event page's data: the trace id, linked through NIMBUS_TRACE_URL_TEMPLATE.
  process.env.NIMBUS_TRACE_URL_TEMPLATE = 'https://jaeger.example.com/trace/{traceId}';
  const details = await eventDetails(stack.store, DemoEndpoint.crm, eventId);
  assert.deepEqual(details.trace, { traceId: send.traceId, url: `https://jaeger.example.com/trace/${send.traceId}` });
  assert.ok(details.history.every((h) => h.traceUrl === `https://jaeger.example.com/trace/${send.traceId}`));

  // The Resolver's metrics go to the same endpoint.
  await eventually('the Resolver metrics', () => (receiver.metricNames.has('nimbus.resolver.messages') ? true : undefined));
  assert.deepEqual(receiver.problems, []);
});

test("an operator's resubmission: Manager command → the handler that processes it, in one trace", async () => {
  const orderId = `trace-order-${randomUUID().slice(0, 8)}`;
  const customerId = `trace-cust-${randomUUID().slice(0, 8)}`;
  // The storefront's address bug: shipping dead-letters an order without a postal code.
  const order = {
    orderId,
    customerId,
    lines: [{ sku: 'SKU-1', quantity: 1, unitPrice: 10 }],
    total: 10,
    currency: 'EUR',
    paymentMethod: 'card',
    shippingAddress: { street: 'Vesterbrogade 1', city: 'København', country: 'DK' },
  };
  const published = await storefront.publish(DemoEventType.OrderPlaced, order);
  const send = await eventually('the order send span', () =>
    receiver.spans.find((s) => s.name === `send ${DemoEndpoint.storefront}` && s.attributes['messaging.message.id'] === published.messageId),
  );
  const write = await eventually('the shipping row write', () =>
    inTrace(send.traceId).find((s) => s.name === `record ${DemoEndpoint.shipping}`),
  );
  const eventId = String(write.attributes['nimbus.event_id']);
  await eventually('the shipping row to be dead-lettered', async () =>
    (await stack.store.getEvent(DemoEndpoint.shipping, eventId))?.rows[0]?.status === 'DeadLettered' ? true : undefined,
  );

  const fixed = { ...order, shippingAddress: { ...order.shippingAddress, postalCode: '1620' } };
  const result = await manager.execute(DemoEndpoint.shipping, eventId, { kind: 'resubmit', edited: { payload: fixed } }, 'trace-test');
  assert.equal(result.outcome, 'sent');

  const command = await eventually('the Manager send span', () =>
    receiver.spans.find((s) => s.name === 'send Manager' && s.attributes['nimbus.event_id'] === eventId),
  );
  assert.equal(command.kind, SPAN_KIND.producer);
  assert.equal(command.attributes['nimbus.command'], 'ResubmissionRequest');
  const handled = await eventually(`the shipping handler's process span (trace:\n${describeTrace(command.traceId)})`, () =>
    childOf(command, (s) => s.name === `process ${DemoEndpoint.shipping}`),
  );
  assert.equal(handled.attributes['nimbus.delivery.result'], 'completed');
  await eventually('the resubmitted row to complete', async () =>
    (await stack.store.getEvent(DemoEndpoint.shipping, eventId))?.rows[0]?.status === 'Completed' ? true : undefined,
  );
});
